"""Looking at the files a run's tests expect (or expect not to exist), walked with os.walk: it skips what
vanishes meanwhile, where Path.rglob raises (the CLI makes and removes lock directories while a test looks)."""

from __future__ import annotations

import os
from pathlib import Path


def every_file(root: Path) -> set[str]:
    """Every file under ``root``, as POSIX paths relative to it (empty when ``root`` does not exist)."""
    return {Path(d, f).relative_to(root).as_posix() for d, _dirs, files in os.walk(root) for f in files}


def found_anywhere(root: Path, name: str) -> list[str]:
    """Files called ``name`` anywhere under ``root``."""
    return [os.path.join(d, name) for d, _dirs, files in os.walk(root) if name in files]
