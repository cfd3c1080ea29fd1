"""Applier: how the holder of a run applies intents to it, and settles them once their effect is durable.

The holder's engine gives it the run's question channel, runtime and oracle, and forwards every event
(`observe`) and finished step (`step_done`). Four moments matter:

1. **start** (`replay`): the intents the last holder left unsettled are sorted against what the run's
   stored sessions say reached the model (replay.py) and re-applied: words to the next prompt, mail
   queued again under its own id, oracle questions asked again, a stop ends the run at once;
   answers wait for the question the step restores from its session (a ``restored`` ask event with
   the same text), and go to the inbox if the step goes on without it (a CLI starts instead);
2. **live** (`apply`): one intent, applied at once; a refusal (the question is no longer waiting) is
   settled at once, the rest stay unsettled until their effect is durable;
3. **step done**: the step's transcript is stored, so what it consumed is settled: answers given, mail
   the model took, interrupts that found it running;
4. **run end**: everything left is settled (done when applied, moot when the run never used it);
   not when the holder is going away (the next holder replays it).

What it uses of the run is two Protocols: `Answering` (the question channel: a HumanChannel) and
`Interrupting` (the runtime: a Runtime); a run without a channel passes None.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import adapters.transport.replay as _replay
from adapters.chores import Chores
from adapters.transport.intents import Intent, IntentReply, Op, RunLog, Settled, mail_id_for
from flower_core import Ask, Event, Lineage, Mail
from flower_core.payloads import AskPayload, MailPayload, RetryPayload
from flower_core.runtime import ModelRefused
from flower_core.runtime.transcript import SessionFacts

log = logging.getLogger(__name__)


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


class Answering(Protocol):
    """The run's question channel as the applier uses it (a HumanChannel). Optional: ``answered_by``
    (a dict, squashed question -> who settled it), filled in when the channel has it."""

    def pending(self) -> list[Ask]: ...

    def answer(self, ask_id: str, text: str) -> bool: ...

    def decline(self, ask_id: str, reason: str = "") -> bool: ...

    def send(self, text: str, *, mail_id: str | None = None) -> Mail | None: ...

    def requeue(self, kept: list[str] | list[tuple[str, str]]) -> list[Mail]: ...


class Interrupting(Protocol):
    """The run's runtime as the applier uses it (a Runtime). Optional: ``workspace`` and ``run_dir`` (where
    the run's stored sessions are; without them nothing is replayed against them) and ``take_unread()``."""

    async def session_facts(self, session_ids: Iterable[str]) -> SessionFacts: ...

    def interrupt(self, message: str = "") -> bool: ...

    async def steer(self, *, model: str | None = None, effort: str | None = None) -> Any: ...


class Applier:
    def __init__(self, run_id: str, *, channel: Answering | None, runtime: Interrupting, log_: RunLog | None,
                 ask_oracle: Callable[[str], Awaitable[str]], cancel: Callable[[str], bool],
                 emit: Callable[[Event], None]) -> None:
        self.run_id, self.channel, self.runtime, self.log = run_id, channel, runtime, log_
        self._ask_oracle, self._cancel, self._emit = ask_oracle, cancel, emit
        self._seen: dict[str, IntentReply] = {}  # iid -> its reply: a retried delivery gets the same answer
        # Applied, effect not yet known to be durable (iids), by what settles them:
        self._answered: set[str] = set()  # answers and declines a question took: at the step's end
        self._mail: dict[str, str] = {}  # mail id -> iid, mail the model has not taken yet: at the run's end
        self._taken: set[str] = set()  # mail the model took: at the step's end
        self._in_flight: set[str] = set()  # interrupts that found a step running: at the step's end
        self._later: set[str] = set()  # words for the next prompt, stops, model changes: at the run's end
        self._models: dict[str, str] = {}  # model changes taken (iid -> model): refused when a CLI starts, settled
        self._waiting: list[Intent] = []  # answers for the question the step is about to restore
        self._expected: set[str] = set()  # questions the step is about to restore (squashed text)
        self._replayed = asyncio.Event()  # set once the start's replay is done (live intents wait for it)
        self._over = False  # the run's end was settled: later intents are refused as too late
        self._chores = Chores()

    # ---- 1. start ---------------------------------------------------------------------------------
    async def replay(self) -> bool:
        """Re-apply what the last holder left; True when a stop is among it (the run must not go on).
        Live intents wait until it is done (`apply`), so each is judged against the same facts."""
        try:
            return await self._replay()
        finally:
            self._replayed.set()

    async def _replay(self) -> bool:
        sessions = self._sessions()
        intents = self.log.unsettled() if self.log is not None else []
        if not intents and not sessions:
            return False  # a fresh run: nothing to replay, nothing to restore
        try:
            facts = await self.runtime.session_facts(sessions)
        except Exception as exc:  # the store is unreadable: re-apply everything rather than drop anything
            log.warning("run %s: stored sessions unreadable, replaying every input: %r", self.run_id, exc)
            facts = SessionFacts()  # nothing known to have reached the model
        # Questions the step will restore from its session: an answer arriving before they are asked
        # again waits for them instead of being refused.
        self._expected = {_squash(a.question) for a in facts.asks if a.result is None}
        todo = _replay.plan(intents, facts)
        for intent in todo.delivered:
            self._seen[intent.iid] = IntentReply()
            self._settle(intent.iid, Settled.DONE)
            self._name_answerer(intent)  # the model may not have had its turn on it yet: the hand-over names them
        for intent in todo.moot:
            self._seen[intent.iid] = IntentReply(ok=False)
            self._settle(intent.iid, Settled.MOOT)
        if todo.stop is not None:
            return True
        for intent in todo.words:
            self._seen[intent.iid] = IntentReply(in_flight=False)
            self._later.add(intent.iid)
        if todo.words:
            self.runtime.interrupt("\n".join(i.text.strip() for i in todo.words))
        if todo.mail and self.channel is not None:
            self.channel.requeue([(mail_id_for(i), i.text) for i in todo.mail])
            for intent in todo.mail:
                self._mail[mail_id_for(intent)] = intent.iid
                self._seen[intent.iid] = IntentReply(mail=mail_id_for(intent))
        self._waiting = list(todo.waiting)
        for intent in [*todo.waiting, *todo.to_inbox]:
            self._seen[intent.iid] = IntentReply(kept=True)  # it will reach the model: a re-delivery hears "ok"
        for intent in todo.to_inbox:
            self._to_inbox(intent)
        for intent in todo.oracle:
            self._seen[intent.iid] = IntentReply()  # asked again below; its answer is published as an event
            self._chores.spawn(self._replay_oracle(intent))
        for intent in todo.steer:  # before the first attempt: it starts with the run's model and effort
            self._seen[intent.iid] = await self._steer(intent)
        return False

    def _sessions(self) -> Iterable[str]:
        workspace, run_dir = getattr(self.runtime, "workspace", None), getattr(self.runtime, "run_dir", None)
        if workspace is None or run_dir is None:
            return []
        return list(Lineage.open(run_dir, workspace).steps.values())

    def _to_inbox(self, intent: Intent) -> None:
        """An answer whose question the stored session never held: the agent gets it as mail."""
        mail = self.channel.send(_replay.inbox_text(intent), mail_id=mail_id_for(intent)) if self.channel else None
        if mail is None:
            self._settle(intent.iid, Settled.MOOT)
            return
        self._mail[mail.id] = intent.iid
        self._emit(Event("system", text="answer_to_inbox", payload={
            "subtype": "answer_to_inbox", "card": intent.card, "mail": mail.id, "question": intent.question,
            "answer": intent.text, "user": intent.user}))

    async def _replay_oracle(self, intent: Intent) -> None:
        reply = await self._oracle(intent)
        self._emit(Event("system", text="oracle", payload={
            "subtype": "oracle", "question": intent.text, "answer": reply.answer or reply.error, "user": intent.user,
            "replayed": True}))

    # ---- 2. live ----------------------------------------------------------------------------------
    async def apply(self, intent: Intent) -> IntentReply:
        await self._replayed.wait()
        if intent.iid in self._seen:
            return self._seen[intent.iid]
        if self._over:  # the run's end is settled: no step will hear this, and the sender must know it
            self._settle(intent.iid, Settled.MOOT)
            return IntentReply.too_late()
        reply = await self._apply(intent)
        self._seen[intent.iid] = reply
        return reply

    async def _apply(self, intent: Intent) -> IntentReply:
        if intent.op in (Op.ANSWER, Op.DECLINE):
            return self._answer(intent)
        if intent.op is Op.SEND:
            mail = self.channel.send(intent.text, mail_id=mail_id_for(intent)) if self.channel is not None else None
            if mail is None:
                self._settle(intent.iid, Settled.REFUSED)
                return IntentReply(ok=False)
            self._mail[mail.id] = intent.iid
            return IntentReply(mail=mail.id)
        if intent.op is Op.INTERRUPT:
            in_flight = bool(self.runtime.interrupt(intent.text))
            (self._in_flight if in_flight else self._later).add(intent.iid)
            return IntentReply(in_flight=in_flight)
        if intent.op is Op.STOP:
            self._later.add(intent.iid)
            return IntentReply(ok=self._cancel("stopped"))
        if intent.op is Op.ORACLE:
            return await self._oracle(intent)
        if intent.op is Op.MODEL:
            return await self._steer(intent)
        return IntentReply(ok=False, error=f"unknown intent {intent.op!r}")

    async def _steer(self, intent: Intent) -> IntentReply:
        """A new model and/or effort. Refused: settled so. Taken: settled at the run's end, so whoever holds
        the run next (a restart, a worker taking it over) replays it before its first attempt."""
        try:
            asked = json.loads(intent.text)
            await self.runtime.steer(model=asked.get("model") or None, effort=asked.get("effort") or None)
        except (ValueError, AttributeError, ModelRefused) as exc:
            self._settle(intent.iid, Settled.REFUSED)
            return IntentReply(ok=False, error=str(exc) or type(exc).__name__)
        self._later.add(intent.iid)
        if asked.get("model"):
            self._models[intent.iid] = str(asked["model"])
        return IntentReply()

    def _answer(self, intent: Intent) -> IntentReply:
        target = self._target(intent)
        if target is None:
            if _squash(intent.question) in self._expected or any(
                    _squash(w.question) == _squash(intent.question) for w in self._waiting):
                self._waiting.append(intent)  # its question is being restored right now: it decides there
                return IntentReply(kept=True)
            self._settle(intent.iid, Settled.REFUSED)
            return IntentReply(ok=False)
        if not self._decide(intent, target):
            self._settle(intent.iid, Settled.REFUSED)
            return IntentReply(ok=False)
        self._answered.add(intent.iid)
        self._name_answerer(intent)
        return IntentReply()

    def _decide(self, intent: Intent, ask_id: str) -> bool:
        """Answer (or decline) question ``ask_id`` with the intent's words; False when it is no longer waiting."""
        if self.channel is None:
            return False
        settle = self.channel.answer if intent.op is Op.ANSWER else self.channel.decline
        return settle(ask_id, intent.text)

    def _name_answerer(self, intent: Intent) -> None:
        """Tell the channel who settled a question, for a note the model may read about it (handover.py)."""
        names = getattr(self.channel, "answered_by", None)
        if intent.op in (Op.ANSWER, Op.DECLINE) and intent.by and intent.question and isinstance(names, dict):
            names[_squash(intent.question)] = intent.by

    def _target(self, intent: Intent) -> str | None:
        """The waiting question an answer is for: its ask id when it still asks the same thing (ids restart
        with every holder), else the one waiting question with the same text."""
        if self.channel is None:
            return None
        pending = [a for a in self.channel.pending() if not getattr(a, "kind", "") or a.id == intent.ask]
        same = [a for a in pending if _squash(a.question) == _squash(intent.question)] if intent.question else pending
        exact = [a for a in same if a.id == intent.ask]
        if exact:
            return str(exact[0].id)
        return str(same[-1].id) if len(same) == 1 or (same and not intent.ask) else None

    async def _oracle(self, intent: Intent) -> IntentReply:
        try:
            answer = await self._ask_oracle(intent.text)
        except Exception as exc:  # a side question must never hurt the run
            self._settle(intent.iid, Settled.DONE)
            return IntentReply(ok=False, error=f"{type(exc).__name__}: {exc}")
        self._settle(intent.iid, Settled.DONE)
        return IntentReply(answer=answer)

    # ---- events -----------------------------------------------------------------------------------
    def observe(self, ev: Event) -> None:
        """Every event of the run (loop thread). Never raises."""
        ask = AskPayload.of(ev) if ev.kind == "ask" else None
        if ask is not None and ask.kind == "mail":
            mail = MailPayload.of(ev)
            if mail.state == "delivered" and mail.id in self._mail:
                self._taken.add(self._mail.pop(mail.id))
        elif ask is not None and ask.state == "asked" and ask.restored:
            asked = _squash(ev.text)
            self._expected.discard(asked)
            mine = [w for w in self._waiting if _squash(w.question) == asked]
            if mine:
                self._waiting = [w for w in self._waiting if w not in mine]
                # Not from inside the channel's own emit: once this event is handled.
                asyncio.get_running_loop().call_soon(self._give, mine, ask.id)
        elif ev.kind == "system" and ev.text == "init" and (self._waiting or self._expected):
            self._expected.clear()
            self._flush_waiting()  # a CLI started: the step went on without restoring the question
        elif ev.kind == "retry" and (refused := RetryPayload.of(ev).model_refused):
            for iid in [i for i, m in self._models.items() if m == refused]:  # never to be replayed again
                del self._models[iid]
                self._settle(iid, Settled.REFUSED)

    def _give(self, intents: list[Intent], ask_id: str) -> None:
        """Answers for a restored question: the first that applies wins, the others are refused."""
        for intent in intents:
            if self._decide(intent, ask_id):
                self._answered.add(intent.iid)
                self._name_answerer(intent)
            else:
                self._settle(intent.iid, Settled.REFUSED)

    def _flush_waiting(self) -> None:
        self._expected.clear()
        waiting, self._waiting = self._waiting, []
        for intent in waiting:
            if intent.op is Op.ANSWER and not intent.kind:  # (an approval's decision is no message to read)
                self._to_inbox(intent)
            else:
                self._settle(intent.iid, Settled.MOOT)

    # ---- 3. and 4. --------------------------------------------------------------------------------
    def step_done(self) -> None:
        self._flush_waiting()
        for iid in self._answered | self._taken | self._in_flight:
            self._settle(iid, Settled.DONE)

    async def ended(self, state: str) -> None:
        """The run is over (``state`` as in RunEnd): settle what is left, unless the holder is going away."""
        with contextlib.suppress(Exception):
            await self._chores.wait()
        if state == "died" or self.log is None:
            return
        self._over = True
        take = getattr(self.runtime, "take_unread", None)
        unread = (take() if take is not None else None) or ""  # words that came after the run's last turn
        used = self._answered | self._taken | self._in_flight | self._later
        try:
            left = self.log.unsettled()
        except Exception as exc:  # the process is going away and its store is closed: the next one replays
            log.warning("run %s: intents not settled at its end: %r", self.run_id, exc)
            return
        for intent in left:
            unheard = intent.op is Op.INTERRUPT and intent.text.strip() and intent.text.strip() in unread
            if unheard:
                self._emit(Event("system", text="unheard", payload={
                    "subtype": "unheard", "text": intent.text, "user": intent.user}))
            self._settle(intent.iid, Settled.DONE if intent.iid in used and not unheard else Settled.MOOT)

    def _settle(self, iid: str, how: Settled) -> None:
        for kept in (self._answered, self._taken, self._in_flight, self._later):
            kept.discard(iid)
        if self.log is None:
            return
        try:
            self.log.settle(iid, how)
        except Exception as exc:  # a log problem costs a replay later, never the run
            log.warning("run %s: intent %s not settled: %r", self.run_id, iid, exc)

