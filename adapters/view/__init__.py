"""The run view: a run's Events as platform-neutral messages (status card, prose, ask cards,
receipts, notices, oracle answers, summary). Pure; the hub wires it to an outbox."""

from adapters.view.asks import AskCard
from adapters.view.run_view import RunView, ViewConfig
from adapters.view.status import FINAL_STATES, STATUS_KEY, StatusCard
from adapters.view.summary import RunOutcome

__all__ = ["FINAL_STATES", "STATUS_KEY", "AskCard", "RunOutcome", "RunView", "StatusCard", "ViewConfig"]
