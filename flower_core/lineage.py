"""Lineage: which step used which session, kept in ``<run_dir>/lineage.json`` across processes.

Everything else a run needs is already on disk (transcripts in the session store, the brief and
the goal in the workbench); the one thing a killed process loses is the map "step -> session".
It is written the moment a session id is known, so a SIGKILL mid-step still leaves it behind.

File shape::

    {"workspace": "/abs/ws", "woke": 3,
     "steps": {"work": "<session id>"},
     "done": {"clarify": {"ok": true, "value": "...", "result": {...StepResult fields...}}}}

``done`` holds steps finished in the current, not yet completed, pass of a workflow, so a new
process reuses them instead of running them again; it is emptied when a pass completes.
A file that cannot be read, or that belongs to another workspace, counts as absent: continuity
is a bonus and its failure must never stop a run.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILENAME = "lineage.json"


@dataclass
class Lineage:
    path: Path
    workspace: Path
    steps: dict[str, str] = field(default_factory=dict)
    woke: int = 0
    done: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.workspace = Path(self.workspace).resolve()

    @classmethod
    def open(cls, run_dir: str | Path, workspace: str | Path) -> Lineage:
        """Read ``<run_dir>/lineage.json``; an empty lineage when missing, corrupt or foreign."""
        lin = cls(Path(run_dir) / FILENAME, Path(workspace))
        try:
            data = json.loads(lin.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return lin
        if not isinstance(data, dict) or data.get("workspace") != str(lin.workspace):
            return lin
        steps = data.get("steps")
        done = data.get("done")
        lin.steps = {str(k): str(v) for k, v in steps.items() if v} if isinstance(steps, dict) else {}
        lin.done = {str(k): v for k, v in done.items() if isinstance(v, dict)} if isinstance(done, dict) else {}
        woke = data.get("woke")
        lin.woke = woke if isinstance(woke, int) and woke >= 0 else 0
        return lin

    def to_dict(self) -> dict[str, Any]:
        return {"workspace": str(self.workspace), "woke": self.woke, "steps": dict(self.steps),
                "done": dict(self.done)}

    def save(self) -> None:
        """Atomic write (tmp + replace); an OSError is swallowed so the run goes on."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=2, default=str), encoding="utf-8")
            tmp.replace(self.path)
        except OSError:
            pass

    def remember(self, step: str, session_id: str | None) -> None:
        """Record step -> session and write at once (no-op for empty values or no change)."""
        if not step or not session_id or self.steps.get(step) == session_id:
            return
        self.steps[step] = session_id
        self.save()

    def bump(self) -> int:
        """Count one more wake and write; returns the new count (1 on the first run)."""
        self.woke += 1
        self.save()
        return self.woke

    def finish(self, step: str, record: dict[str, Any]) -> None:
        """Mark a step as finished in this pass, with what a later process needs to reuse it."""
        self.done[step] = record
        self.save()

    def pass_complete(self) -> None:
        """The workflow ran to its end: the next process starts a new pass (sessions are kept)."""
        if self.done:
            self.done = {}
            self.save()

    def archive(self, into: str | Path, *, extra: list[Path] | None = None) -> Path:
        """Move the lineage file (and ``extra`` files) to ``<into>/<timestamp>/``; start empty."""
        dest = Path(into) / time.strftime("%Y%m%d-%H%M%S")
        dest.mkdir(parents=True, exist_ok=True)
        for p in [self.path, *(extra or [])]:
            if p.exists():
                p.replace(dest / p.name)
        self.steps, self.done, self.woke = {}, {}, 0
        return dest
