"""This process's CLI children, as /proc shows them (Linux): counted for metrics, killed at a deadline.

A CLI child is a direct child whose program is named `claude` (the SDK's bundled CLI, or another one
on the path). Its own children (the commands its Bash tool runs) belong to it and go with it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

__all__ = ["cli_children", "descendants", "kill_trees"]

PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a process, None when it is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2:].split()  # the name in parentheses may hold spaces
    return (int(rest[1]), rest[0]) if len(rest) > 1 else None


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        st = _stat(int(entry.name))
        if st is not None and st[1] != "Z":  # a zombie has exited already
            kids.setdefault(st[0], []).append(int(entry.name))
    return kids


def _program(pid: int) -> str:
    try:
        argv0 = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return ""
    return os.path.basename(argv0.decode(errors="replace"))


def cli_children(pid: int | None = None) -> list[int]:
    """Live CLI processes started by `pid` (default: this process)."""
    if not PROC.is_dir():
        return []
    parent = os.getpid() if pid is None else pid
    return [c for c in _children_map().get(parent, []) if _program(c) == "claude"]


def descendants(pid: int) -> list[int]:
    """Every live process under `pid`, children before their own children."""
    kids, out, todo = _children_map(), [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_trees(pids: list[int]) -> int:
    """SIGKILL each process and everything under it; how many were signalled."""
    doomed = [p for pid in pids for p in (pid, *descendants(pid))]
    n = 0
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
            n += 1
        except (ProcessLookupError, PermissionError):
            pass
    return n
