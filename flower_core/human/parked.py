"""Parking, the channel's side of it: a question taken off its tool call while the runtime closes the CLI.

    runtime/parking.py                         Parking (channel.parking; HumanChannel delegates to it)
    ──────────────────                         ───────────────────────────────────────────────────────
    the question waited long enough ─────────▶ park(id)           its tool call will never return
    the CLI is closed, the run waits ────────▶ settled(id, wait)  the outcome: answered / declined / timeout…
    a new process resumes the session ───────▶ restore(…)         asked again, parked from the start
                                               requeue(kept)      mail kept from the old process, as is
    a front end makes outcomes durable ──────▶ keep_outcomes(id, keep)
    the run was interrupted instead ─────────▶ withdraw(id)       settled as "cancelled"

Parking is given the channel's Questions and the few channel functions it needs (settle, finish, show),
not the channel.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from flower_core.human.ask import Ask
from flower_core.human.mail import Mail
from flower_core.human.questions import Finish, Keeper, Questions, Settle


class Parking:
    """Parked questions of one channel: ``park``/``settled``/``withdraw``/``restore``/``requeue``/``keep_outcomes``.

    ``settle`` decides an outcome from any thread and ``finish`` applies one (the channel's); ``show``
    emits an ask's "asked" event and wakes the pullers; ``remember_loop`` notes the running loop as the
    run's; ``mail`` is the channel's mail list (guarded by the questions' lock)."""

    def __init__(self, questions: Questions, mail: list[Mail], *, settle: Settle, finish: Finish,
                 show: Callable[[Ask], None], remember_loop: Callable[[], None]) -> None:
        self._questions, self._mail = questions, mail
        self._settle, self._finish, self._show, self._remember_loop = settle, finish, show, remember_loop

    def park(self, ask_id: str) -> bool:
        """Take a waiting question off its tool call: that call never returns (the runtime is closing
        the CLI) and the outcome is collected with ``settled()``. False if it is not waiting."""
        q = self._questions
        with q.lock:
            if not q.open(ask_id):
                return False
            q.parked.add(ask_id)
            return True

    async def settled(self, ask_id: str, wait: float | None) -> Ask:
        """Wait for a parked question's outcome. It times out ``wait`` seconds (None: never) after it was
        first asked; cancelling the wait settles it as "cancelled", as cancelling its tool call would."""
        q = self._questions
        with q.lock:
            ask = next(a for a in q.asks if a.id == ask_id)
            fut = q.futures.get(ask_id)
        if fut is None:
            return ask  # settled already
        left = None if wait is None else max(0.0, ask.asked_at + wait - time.time())
        try:
            await asyncio.wait({fut}, timeout=left)
        except asyncio.CancelledError:
            if q.claim(ask_id):
                self._finish(ask, "cancelled", "")
            raise
        if not fut.done() and q.claim(ask_id):
            self._finish(ask, "timeout", "")
        else:
            await fut
        return ask

    def withdraw(self, ask_id: str) -> bool:
        """Settle a waiting question as "cancelled" (the run was interrupted instead). False if not waiting."""
        return self._settle(ask_id, "cancelled", "")

    def restore(self, question: str, options: list[str], asked_at: float, *, kind: str = "",
                facts: dict[str, Any] | None = None) -> Ask:
        """Re-open a question parked by an earlier process: waiting and parked from the start, timed from
        its first ``asked_at``. Emits its "asked" event again, marked ``restored`` (front ends find their
        old card by it, and an answer given to the old process can be applied to it)."""
        loop = asyncio.get_running_loop()
        self._remember_loop()
        q = self._questions
        with q.lock:
            ask = q.new(question, list(options), kind=kind, facts=facts, asked_at=asked_at, restored=True)
            q.counted += 0 if kind else 1
            q.futures[ask.id] = loop.create_future()
            q.parked.add(ask.id)
        self._show(ask)
        return ask

    def requeue(self, kept: list[str] | list[tuple[str, str]]) -> list[Mail]:
        """Queue mail kept from an earlier process as is: it was amended and reported there already.

        Items are texts, or (mail id, text) for mail with a durable id; an id already here is skipped
        (the same mail may be kept in two places: a park record and a front end's intent log)."""
        with self._questions.lock:
            out = []
            known = {m.id for m in self._mail}
            for item in kept:
                mail_id, body = item if isinstance(item, tuple) else (f"m{len(self._mail) + 1}", item)
                if mail_id in known:
                    continue
                mail = Mail(id=mail_id, text=body)
                self._mail.append(mail)
                known.add(mail_id)
                out.append(mail)
            return out

    def keep_outcomes(self, ask_id: str, keep: Keeper) -> None:
        """``keep(state, answer)`` makes a parked ask's outcome durable before answer/decline return True;
        when it raises OSError they return False and the ask still waits."""
        self._questions.keepers[ask_id] = keep
