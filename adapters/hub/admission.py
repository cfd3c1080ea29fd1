"""Admission: whether a run may start (or wake) now, and where it lives.

`max_runs` counts runs with a CLI process, `max_parked` the parked ones (a run that may not park keeps
its CLI and counts as running); with workers (a remote transport) each worker applies its own limit.
A channel's configured workspace holds one run at a time.
"""

from __future__ import annotations

from pathlib import Path

from adapters.hub.registry import RunRegistry
from adapters.hub.settings import HubSettings


class Admission:
    def __init__(self, registry: RunRegistry, settings: HubSettings, *, remote: bool) -> None:
        self.registry, self.remote = registry, remote
        self.root, self.workspaces = settings.root, settings.workspaces
        self.max_runs, self.max_parked = settings.max_runs, settings.max_parked

    def may_park(self) -> bool:
        return len(self.registry.parked()) < self.max_parked

    def over_limit(self) -> str | None:
        """Why no more runs may go now (None: they may)."""
        running = self.registry.running()
        if self.remote or len(running) < self.max_runs:
            return None
        return (f"{len(running)} runs are already going (the limit is {self.max_runs}). Try again when one "
                f"finishes, or stop one: {', '.join(running)}.")

    def busy(self, workspace: Path) -> str | None:
        """The live run already using this workspace, if any."""
        return next((rid for rid, lr in self.registry.live.items() if Path(lr.record.workspace) == workspace), None)

    def dirs(self, run_id: str, channel: str) -> tuple[Path, Path]:
        """A workspace of its own per run, or the channel's configured one (its runs then share one
        run_dir, so a new run there continues the project the way a second `flower` does)."""
        configured = self.workspaces.get(channel)
        if configured is not None:
            return configured, self.root / "channels" / channel.replace(":", "_") / "runs"
        return self.root / run_id / "workspace", self.root / run_id / "runs"
