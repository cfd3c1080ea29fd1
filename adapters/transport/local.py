"""LocalTransport: runs go in this process (the embedded default, and what `flower-worker` uses inside)."""

from __future__ import annotations

from adapters.transport.base import RunSide, RunSink
from adapters.transport.engine import EngineKit, RunEngine
from adapters.transport.intents import BoundLog, Intent, IntentLog
from adapters.transport.plan import RunPlan


class LocalTransport:
    name = "in-process"
    remote = False

    def __init__(self, kit: EngineKit, log: IntentLog | None = None) -> None:
        self.kit, self.log = kit, log  # log: where intents are kept (None: in memory only, lost with the process)
        self.engines: dict[str, RunEngine] = {}

    def launch(self, run_id: str, plan: RunPlan, sink: RunSink, *, attach: bool = False) -> RunSide:
        if attach:
            raise ValueError("an in-process run cannot be attached to: it lives and dies with this process")
        engine = self.kit.build(run_id, plan, sink, log=BoundLog(self.log, run_id) if self.log is not None else None)
        self.engines[run_id] = engine
        engine.start()
        task = engine.task
        if task is not None:
            task.add_done_callback(lambda _t: self._forget(run_id, engine))
        return engine

    def _forget(self, run_id: str, engine: RunEngine) -> None:
        if self.engines.get(run_id) is engine:
            del self.engines[run_id]

    async def keep(self, run_id: str, intent: Intent) -> None:
        if self.log is not None:
            self.log.append(run_id, intent)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def holders(self) -> dict[str, str]:
        return {}

    async def waits(self, run_id: str) -> bool:
        return False  # max_runs is checked before a run starts here
