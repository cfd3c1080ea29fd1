"""SpendTally: what a run has cost, kept in its record as it is spent, so no kill loses it.

    launch        base = the record's spent_usd (earlier rounds, the lives before a restart): the
                  run side books it into the run's budget before anything runs (RunPlan.spent_usd)
    budget event  the run's budget reports its books (spent + aside, base included) after every
                  attempt and every raise: the record takes the total and the cap as raised
    the end       base + what this life's runtime spent + the oracle's side questions (the figure
                  for runs with no cap, whose budget never reports); never below what was kept

Each write only ever moves spent_usd up, so a late or repeated report cannot undo a later one, and a
SIGKILL between two reports loses at most the attempt in flight (the CLI had not reported it either).
"""

from __future__ import annotations

from dataclasses import replace

from adapters.state import StateStore
from flower_core.payloads import BudgetFigures

__all__ = ["SpendTally"]


class SpendTally:
    def __init__(self, run_id: str, store: StateStore, base_usd: float) -> None:
        self.run_id, self.store, self.base_usd = run_id, store, max(0.0, base_usd)

    def reported(self, figures: BudgetFigures) -> None:
        """A budget event's figures (`total`, `cap`): keep them in the record."""
        self._keep(figures.total, figures.cap)

    def ended(self, cost_usd: float | None, aside_usd: float, cap_usd: float | None) -> None:
        """The run side's last word: this life's cost (its runtime's results) and the side questions'."""
        self._keep(self.base_usd + max(0.0, cost_usd or 0.0) + max(0.0, aside_usd), cap_usd)

    def _keep(self, total: float | None, cap: float | None) -> None:
        record = self.store.get_run(self.run_id)
        if record is None:
            return
        spent = round(max(record.spent_usd, total), 6) if total is not None else record.spent_usd
        cap_usd = cap if cap is not None else record.cap_usd
        if spent == record.spent_usd and cap_usd == record.cap_usd:
            return
        self.store.save_run(replace(record, spent_usd=spent, cap_usd=cap_usd, updated_at=0.0))
