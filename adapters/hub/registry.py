"""RunRegistry: the runs a hub knows — the live ones this process shows, and every run in the store.

Look-ups by id, by thread and by owner or place live here, so the hub, its collaborators and (through
the hub's public methods) the platforms ask one object the same questions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.platform import ThreadRef
from adapters.state import LIVE_STATUSES, RunRecord, RunStatus, StateStore

if TYPE_CHECKING:
    from adapters.hub.runs import LiveRun


def has_ended(record: RunRecord) -> bool:
    """Finished for good as the store says (done, failed, stopped, or an ending a newer version wrote), as
    opposed to live or asleep (died, parked: those are woken, not continued)."""
    return record.status not in LIVE_STATUSES and record.status != RunStatus.DIED


class RunRegistry:
    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.live: dict[str, LiveRun] = {}

    def record(self, run_id: str) -> RunRecord | None:
        return self.store.get_run(run_id)

    def is_live(self, run_id: str) -> bool:
        return run_id in self.live

    def runs(self, *, user: str | None = None, platform: str | None = None, channel: str | None = None,
             live_only: bool = True) -> list[RunRecord]:
        """Runs by owner and place, newest first; `live_only`: only those running in this process."""
        found = [r for r in self.store.list_runs()
                 if (not live_only or r.run_id in self.live) and (user is None or r.owner == user)
                 and (platform is None or r.thread.platform == platform)
                 and (channel is None or r.thread.channel == channel)]
        return sorted(found, key=lambda r: r.created_at, reverse=True)

    def run_in(self, thread: ThreadRef) -> str | None:
        """The run a thread shows: its own, or the one it follows (a live one first)."""
        found = [r for r in (self.store.run_for_thread(thread), self.store.mirrored_run(thread)) if r is not None]
        return next((r for r in found if r in self.live), found[0] if found else None)

    def holder(self, run_id: str) -> str:
        """The worker a live run is on ("" in this process, or not live)."""
        live = self.live.get(run_id)
        return live.holder if live is not None else ""

    def running(self) -> list[str]:
        """Live runs with a CLI process (or about to have one): what max_runs counts."""
        return [rid for rid, lr in self.live.items() if not lr.parked]

    def parked(self) -> list[str]:
        """Live runs parked on a question, with no CLI process: what max_parked counts."""
        return [rid for rid, lr in self.live.items() if lr.parked]

    def ended(self, live: LiveRun) -> None:
        if self.live.get(live.run_id) is live:
            del self.live[live.run_id]
