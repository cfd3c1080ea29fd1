"""Checkpoints: snapshots of a run's workspace files, which Undo puts back byte for byte.

One is taken when a round of the run starts and one before an answered question reaches the run (what the
workspace held while the question waited), unless nothing changed since the last one. They live beside the
run, so a restart (even a SIGKILL) keeps them:

    <run_dir>/checkpoints/index.jsonl    one line per checkpoint: {"id", "label", "at", "files": {path: [sha, mode]}}
    <run_dir>/checkpoints/blobs/<sha256> each file's content once, however many checkpoints hold it
    <run_dir>/checkpoints/undone.md      what was undone, for the agent's next turn (taken by `take_note`)

Why not the SDK's file checkpointing (`enable_file_checkpointing` + `rewind_files`): it tracks only the
Write, Edit and NotebookEdit tools, never what Bash changes (the bot's agents work through Bash too), and
`rewind_files` needs a CLI connected to the session, while Undo is only for runs that are not live. A snapshot
of the files themselves sees every change and works on any workspace, git or not.

Left out: the framework's bookkeeping (`Bookkeeping`), tool folders (`.git`, `.venv`, `node_modules`,
`__pycache__`), symlinks, and files over `MAX_BYTES` (named in the checkpoint's `skipped`, never touched).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from adapters.hub.workspace import SKIPPED_DIRS, Bookkeeping

__all__ = ["MAX_BYTES", "Checkpoint", "Checkpoints", "checkpoint", "take_note"]

MAX_BYTES = 20 * 1024 * 1024
DIR = "checkpoints"
NOTE = "undone.md"


@dataclass(frozen=True)
class Checkpoint:
    id: str
    label: str
    at: float
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # path -> (sha256, mode)
    skipped: tuple[str, ...] = ()


class Checkpoints:
    """One run's checkpoints (blocking file work: call from a thread, see `checkpoint`)."""

    def __init__(self, run_dir: str | Path, workspace: str | Path) -> None:
        self.workspace = Path(workspace)
        self.home = Path(run_dir) / DIR
        self.rule = Bookkeeping.of(self.workspace, run_dir)

    # ---- reading ---------------------------------------------------------------------------------
    def all(self) -> list[Checkpoint]:
        try:
            lines = (self.home / "index.jsonl").read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                d = json.loads(line)
                files = {str(p): (str(v[0]), int(v[1])) for p, v in d["files"].items()}
                out.append(Checkpoint(str(d["id"]), str(d["label"]), float(d["at"]), files,
                                      tuple(d.get("skipped", ()))))
            except (ValueError, KeyError, TypeError, IndexError):
                continue  # a line cut short by a kill: the ones before it stand
        return out

    def get(self, checkpoint_id: str) -> Checkpoint | None:
        return next((c for c in self.all() if c.id == checkpoint_id), None)

    def now(self) -> tuple[dict[str, tuple[str, int]], list[str]]:
        """The workspace as a checkpoint would hold it: {path: (sha, mode)}, and the files too big to keep."""
        files: dict[str, tuple[str, int]] = {}
        skipped: list[str] = []
        root = self.workspace
        if not root.is_dir():
            return files, skipped
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath).relative_to(root)
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in SKIPPED_DIRS and not self.rule.holds((here / d).as_posix()))
            for name in filenames:
                path = Path(dirpath) / name
                rel = path.relative_to(root).as_posix()
                if path.is_symlink() or not path.is_file() or self.rule.holds(rel):
                    continue
                st = path.stat()
                if st.st_size > MAX_BYTES:
                    skipped.append(rel)
                    continue
                files[rel] = (_sha(path), st.st_mode & 0o777)
        return files, skipped

    def would_restore(self, cp: Checkpoint) -> list[str]:
        """The files Undo to `cp` would put back: changed or deleted since (rewritten), made since (removed)."""
        current, _ = self.now()
        return sorted(p for p in set(cp.files) | set(current) if cp.files.get(p) != current.get(p))

    # ---- writing ---------------------------------------------------------------------------------
    def take(self, label: str) -> Checkpoint | None:
        """Snapshot the workspace now; None when nothing changed since the last checkpoint."""
        files, skipped = self.now()
        taken = self.all()
        if taken and taken[-1].files == files:
            return None
        blobs = self.home / "blobs"
        blobs.mkdir(parents=True, exist_ok=True)
        for rel, (sha, _) in files.items():
            blob = blobs / sha
            if not blob.exists():
                _write_atomic(blob, (self.workspace / rel).read_bytes())
        cp = Checkpoint(f"c{len(taken) + 1}", label, time.time(), files, tuple(skipped))
        line = json.dumps({"id": cp.id, "label": cp.label, "at": round(cp.at, 3),
                           "files": {p: list(v) for p, v in files.items()}, "skipped": list(skipped)})
        with (self.home / "index.jsonl").open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
        return cp

    def restore(self, cp: Checkpoint) -> list[str]:
        """Put the workspace back as `cp` saw it; returns the files rewritten or removed."""
        current, _ = self.now()
        done = []
        for rel in sorted(set(cp.files) | set(current)):
            want, have = cp.files.get(rel), current.get(rel)
            if want == have:
                continue
            target = self.workspace / rel
            if want is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                _write_atomic(target, (self.home / "blobs" / want[0]).read_bytes())
                os.chmod(target, want[1])
            done.append(rel)
        return done

    def note(self, text: str) -> None:
        """What was undone, for the agent's next turn (kept until `take_note`)."""
        self.home.mkdir(parents=True, exist_ok=True)
        with (self.home / NOTE).open("a", encoding="utf-8") as f:
            f.write(text.strip() + "\n")


def take_note(run_dir: str | Path, words: str) -> str:
    """`words` (a person's words that start the run's next turn) with what was undone since before them."""
    path = Path(run_dir) / DIR / NOTE
    try:
        note = path.read_text(encoding="utf-8").strip()
        path.unlink()
    except OSError:
        return words
    return f"{note}\n\n{words}" if words.strip() else note


async def checkpoint(run_dir: str | Path, workspace: str | Path, label: str) -> Checkpoint | None:
    """Take a checkpoint off the loop; a workspace that cannot be read costs the checkpoint, never the run."""
    try:
        return await asyncio.to_thread(Checkpoints(run_dir, workspace).take, label)
    except OSError:
        return None


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_atomic(target: Path, data: bytes) -> None:
    tmp = target.with_name(f".part-{target.name}")
    tmp.write_bytes(data)
    os.replace(tmp, target)
