"""The parking side of HumanChannel (mixed into it): a question or approval taken off its tool call while
the runtime closes the CLI (runtime/parking.py), waited on, restored in a new process, its outcome kept."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import EllipsisType
from typing import Any

from .ask import Ask
from .mail import Mail


class ParkedMembers:
    """``park``/``settled``/``withdraw``/``restore``/``requeue``/``keep_outcomes`` of HumanChannel."""


    def park(self: Any, ask_id: str) -> bool:
        """Take a waiting question off its tool call: that call never returns (the runtime is closing
        the CLI) and the outcome is collected with ``settled()``. False if it is not waiting."""
        with self._lock:
            if ask_id in self._claimed or ask_id not in self._futures:
                return False
            self._parked.add(ask_id)
            return True

    async def settled(self: Any, ask_id: str, timeout_s: float | EllipsisType | None = ...) -> Ask:
        """Wait for a parked question's outcome. It times out ``timeout_s`` (default: the channel's) after it
        was first asked; cancelling the wait settles it as "cancelled", as cancelling its tool call would."""
        wait = self.timeout_s if isinstance(timeout_s, EllipsisType) else timeout_s
        with self._lock:
            ask = next(a for a in self.asks if a.id == ask_id)
            fut = self._futures.get(ask_id)
        if fut is None:
            return ask  # settled already
        left = None if wait is None else max(0.0, ask.asked_at + wait - time.time())
        try:
            await asyncio.wait({fut}, timeout=left)
        except asyncio.CancelledError:
            if self._claim(ask_id):
                self._finish(ask, "cancelled", "")
            raise
        if not fut.done() and self._claim(ask_id):
            self._finish(ask, "timeout", "")
        else:
            await fut
        return ask

    def withdraw(self: Any, ask_id: str) -> bool:
        """Settle a waiting question as "cancelled" (the run was interrupted instead). False if not waiting."""
        return self._settle_from_anywhere(ask_id, "cancelled", "")

    def restore(self: Any, question: str, options: list[str], asked_at: float, *, kind: str = "",
                facts: dict[str, Any] | None = None) -> Ask:
        """Re-open a question parked by an earlier process: waiting and parked from the start, timed from
        its first ``asked_at``. Emits its "asked" event again, marked ``restored`` (front ends find their
        old card by it, and an answer given to the old process can be applied to it)."""
        loop = asyncio.get_running_loop()
        self._remember_loop()
        with self._lock:
            ask = Ask(id=f"q{len(self.asks) + 1}", question=question, options=list(options), asked_at=asked_at,
                      restored=True, kind=kind, facts=dict(facts or {}))
            self.asks.append(ask)
            self._counted += 0 if kind else 1
            self._futures[ask.id] = loop.create_future()
            self._parked.add(ask.id)
        self._emit(ask.event(self.remaining))
        self._wake_pullers()
        return ask

    def requeue(self: Any, kept: list[str] | list[tuple[str, str]]) -> list[Mail]:
        """Queue mail kept from an earlier process as is: it was amended and reported there already.

        Items are texts, or (mail id, text) for mail with a durable id; an id already here is skipped
        (the same mail may be kept in two places: a park record and a front end's intent log)."""
        with self._lock:
            out = []
            known = {m.id for m in self.mail}
            for item in kept:
                mail_id, body = item if isinstance(item, tuple) else (f"m{len(self.mail) + 1}", item)
                if mail_id in known:
                    continue
                mail = Mail(id=mail_id, text=body)
                self.mail.append(mail)
                known.add(mail_id)
                out.append(mail)
            return out

    def keep_outcomes(self: Any, ask_id: str, keep: Callable[[str, str], None]) -> None:
        """``keep(state, answer)`` makes a parked ask's outcome durable before answer/decline return True;
        when it raises OSError they return False and the ask still waits."""
        self._keepers[ask_id] = keep
