"""Everything that *is* a problem: environments, the WorldTest protocol, the registry.

Pure Python with numpy and networkx; no I/O beyond reading files.
"""
