"""SteerHandler: a person changes a run's model and/or effort (the `Steer` intent).

The choice is checked (a known effort, a model the bot and the channel allow), then saved in the run's
options first, so a restart, a next round or a worker taking the run over starts with it; a live run then
hears it at its next turn. A model the run's CLI refuses (it asks the endpoint) is a refusal told to the
person who asked, the saved choice is put back, and the run goes on with the model it had.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adapters.hub.intents import Steer
from adapters.hub.options import RunOptions
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult, Refuse
from adapters.hub.settings import HubSettings
from adapters.state import RunRecord
from flower_core.runtime import EFFORTS, effort_problem

__all__ = ["EFFORTS", "Chosen", "SteerHandler", "chosen"]


class SteerHandler:
    def __init__(self, settings: HubSettings, registry: RunRegistry, refuse: Refuse) -> None:
        self.settings, self.registry, self.refuse = settings, registry, refuse

    async def steer(self, steer: Steer, record: RunRecord, user: str) -> IntentResult:
        model, effort = steer.model.strip() or None, steer.effort.strip().lower() or None
        channel = f"{record.thread.platform}:{record.thread.channel}"
        if model is None and effort is None:
            now = chosen(record, self.settings)
            return IntentResult(True, f"Run {record.run_id} uses {now.describe()}. Say a model or an effort "
                                "to change it.", record.run_id)
        bad = effort_problem(effort) or self.settings.model_problem(model, channel)
        if bad is not None:
            return await self.refuse(record.thread, user, bad, record.run_id)
        run_dir = Path(record.run_dir)
        before = RunOptions.load(run_dir)
        before.steered(model, effort).save(run_dir)
        live = self.registry.live.get(record.run_id)
        if live is None:
            said = " · ".join(p for p in (f"model {model}" if model else "", f"effort {effort}" if effort else "") if p)
            return IntentResult(True, f"Run {record.run_id} will use {said} when it goes on.", record.run_id)
        result = await live.steer(model, effort, user)
        if not result.ok:
            before.save(run_dir)
            return await self.refuse(record.thread, user, result.message, record.run_id)
        return result


@dataclass(frozen=True)
class Chosen:
    """A run's model and effort as chosen (or the bot's defaults); "" when neither says."""

    model: str = ""
    effort: str = ""

    def describe(self) -> str:
        return f"model {self.model or 'default'} · effort {self.effort or 'default'}"


def chosen(record: RunRecord, settings: HubSettings) -> Chosen:
    opts = RunOptions.load(Path(record.run_dir))
    return Chosen(opts.model or settings.model or "", opts.effort or settings.effort or "")
