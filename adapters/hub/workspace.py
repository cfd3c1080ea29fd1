"""A run's workspace as the chat side reads it: list its files, find one, never outside it.

`inside` resolves symlinks before it checks, so a link pointing out of the workspace is outside; the page's
download route and the Files button read only what it returns.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["INBOX", "inside", "workspace_files"]

INBOX = "inbox"  # where files people attach are saved (files.py)
LISTED_MAX = 2000  # files a listing names; a workspace may hold a whole checkout
SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__"})


def inside(workspace: Path, rel: str) -> Path | None:
    """The regular file `rel` names inside the workspace, symlinks resolved; None for anything else
    (absolute, `..`, a link pointing out, a directory, nothing there)."""
    if not rel or rel.startswith(("/", "\\")) or "\x00" in rel or ".." in rel.replace("\\", "/").split("/"):
        return None
    try:
        root = workspace.resolve(strict=True)
        target = (root / rel).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return target if target.is_relative_to(root) and target.is_file() else None


def workspace_files(workspace: Path, since: float) -> list[dict[str, object]]:
    """The workspace's files as the page lists them: relative path, size, and whether the run made or
    changed it (modified at or after `since`, the run's creation time). Tool folders are left out."""
    root = workspace.resolve()
    out: list[dict[str, object]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if path.is_symlink() or not path.is_file() or name.startswith(".part-"):
                continue
            out.append({"path": path.relative_to(root).as_posix(), "size": st.st_size,
                        "changed": st.st_mtime >= since})
            if len(out) >= LISTED_MAX:
                return out
    return out
