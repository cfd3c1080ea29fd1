"""A run's workspace as the chat side reads it: list its files, find one, never outside it, and tell the
team's files from the framework's bookkeeping.

`inside` resolves symlinks before it checks, so a link pointing out of the workspace is outside; the page's
download route and the Files button read only what it returns.

`Bookkeeping` is the one rule for "the framework wrote this, not the team": the workbench's desk (`.flower/`:
its notes, INDEX.md, spilled tool results) and the bridge's own run directory when it lies inside the
workspace. The summary's "Files changed", the Files button, its `changes.diff` and the page's listing all
leave those out; the listing shows them when asked (`all`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["DESK", "INBOX", "Bookkeeping", "inside", "workspace_files"]

INBOX = "inbox"  # where files people attach are saved (files.py)
# flower_core's workbench desk (flower_core.workbench.DIRNAME; the trimming spill dir lies under it too).
# Named here rather than imported: it is not one of flower_core's public names; a test keeps the two equal.
DESK = ".flower"
LISTED_MAX = 2000  # files a listing names; a workspace may hold a whole checkout
SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__"})


@dataclass(frozen=True)
class Bookkeeping:
    """The folders of one workspace that hold the framework's files, relative, in POSIX form."""

    folders: tuple[str, ...] = (DESK,)

    @classmethod
    def of(cls, workspace: Path, run_dir: str | Path | None = None) -> Bookkeeping:
        """The desk, plus the run's own directory (sessions, cards, grants) when a configured workspace
        holds the bridge's root."""
        folders = [DESK]
        if run_dir:
            try:
                rel = Path(run_dir).resolve().relative_to(workspace.resolve())
            except (ValueError, OSError):
                rel = None
            if rel is not None and rel.parts:
                folders.append(rel.as_posix())
        return cls(tuple(folders))

    def holds(self, rel: str) -> bool:
        """Whether the workspace-relative path `rel` is the framework's."""
        parts = PurePosixPath(rel.replace("\\", "/")).parts
        return any(parts[:len(f.split("/"))] == tuple(f.split("/")) for f in self.folders)

    def pathspecs(self) -> list[str]:
        """git pathspecs that leave these folders out (for `git diff`), after `--`."""
        return [".", *(f":(exclude,top){f}" for f in self.folders)]


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


def workspace_files(workspace: Path, since: float, *, rule: Bookkeeping | None = None,
                    show_all: bool = False) -> list[dict[str, object]]:
    """The workspace's files as the page lists them: relative path, size, and whether the run made or
    changed it (modified at or after `since`, the run's creation time). Tool folders are left out, and so
    is the framework's bookkeeping (`rule`) unless `show_all`: then it is listed, never as changed."""
    root = workspace.resolve()
    rule = rule if rule is not None else Bookkeeping()
    out: list[dict[str, object]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRS and (show_all or not rule.holds((here / d).as_posix())))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if path.is_symlink() or not path.is_file() or name.startswith(".part-"):
                continue
            rel = path.relative_to(root).as_posix()
            ours = rule.holds(rel)  # a file, not only a folder, may be named as bookkeeping
            if ours and not show_all:
                continue
            out.append({"path": rel, "size": st.st_size, "changed": st.st_mtime >= since and not ours})
            if len(out) >= LISTED_MAX:
                return out
    return out
