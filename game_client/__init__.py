"""game_client: local play in a pygame window, the debugger, and the agents' side.

pygame greets on standard output when imported; a command's output is for its user, so
the greeting is turned off before any module here imports pygame.
"""

import os

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
