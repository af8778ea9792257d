"""Screenshots taken by the browser tests: kept in the test's folder, and copied to
``$GRIDSTUDY_SCREENSHOTS`` when it is set (``make screenshots`` sets it to the docs'
folder, so the README's pictures are made by the tests, never by hand)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def shoot(page, folder: Path, name: str, full_page: bool = True) -> Path:
    """A PNG of ``page`` named ``name``; its path in ``folder``."""
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    wanted = os.environ.get("GRIDSTUDY_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(wanted) / path.name)
    return path
