"""The hub's status answer: one run's state, or every live run with the parked ones apart (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from adapters.hub.results import IntentResult
from adapters.state import StateStore
from adapters.view import fmt as _fmt

if TYPE_CHECKING:
    from adapters.hub.runs import LiveRun


def status_report(live: Mapping[str, LiveRun], store: StateStore, run_id: str | None, *, running: list[str],
                  parked: list[str], max_runs: int | None, max_parked: int) -> IntentResult:
    """`max_runs` None: runs are on workers, each with its own limit (each line names its worker)."""
    if run_id is not None:
        lr = live.get(run_id)
        if lr is not None:
            c = lr.view.status_card
            return IntentResult(True, f"Run {run_id}: {c.state}, step {c.step_text()}, context "
                                f"{c.context_text()}, cost {_fmt.money(c.cost_usd)}{_on(lr)}", run_id)
        record = store.get_run(run_id)
        if record is not None:
            return IntentResult(True, f"Run {run_id}: {record.status} — {_fmt.one_line(record.task, 80)}", run_id)
        return IntentResult(False, f"No run {run_id}.")
    limit = f" (limit {max_runs})" if max_runs is not None else ""
    if not live:
        return IntentResult(True, f"No runs going{limit}.")
    cards = {rid: lr.view.status_card for rid, lr in live.items()}
    going = f"{len(running)}/{max_runs}" if max_runs is not None else f"{len(running)}"
    head = f"{going} runs going:" if running else f"No runs going{limit}."
    lines = [head, *(f"- {rid}: {cards[rid].state}, step {cards[rid].step_text()}{_on(live[rid])}" for rid in running)]
    if parked:
        lines.append(f"{len(parked)}/{max_parked} parked, waiting for an answer (no CLI running):")
        lines += [f"- {rid}: step {cards[rid].step_text()}{_on(live[rid])}" for rid in parked]
    return IntentResult(True, "\n".join(lines))


def _on(lr: LiveRun) -> str:
    return f", on worker {lr.holder}" if lr.holder else ""
