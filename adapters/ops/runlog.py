"""Which run a log line is about: a context variable set on a run's own asyncio task.

    task = loop.create_task(main(), context=run_context(run_id))

Every task the run's task starts (the SDK's readers, an outbox's first delivery) copies its context,
so whatever they log carries the run id too; a JSON log formatter reads `RUN_ID.get()`.
"""

from __future__ import annotations

import contextvars

__all__ = ["RUN_ID", "run_context"]

RUN_ID: contextvars.ContextVar[str] = contextvars.ContextVar("flower_run_id", default="")


def run_context(run_id: str) -> contextvars.Context:
    """A copy of the current context in which RUN_ID is `run_id` (the caller's own context is untouched)."""
    ctx = contextvars.copy_context()
    ctx.run(RUN_ID.set, run_id)
    return ctx
