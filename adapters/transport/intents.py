"""Intents: what people say to a run, kept in a durable per-run log until the run has consumed it.

Every input a person gives a run (an answer, a decline, inbox mail, an interrupt, a stop, an oracle
question) becomes an `Intent`. The rule that makes "ok" mean "it will happen":

    chat side ── submit ──▶ IntentLog.append (durable: SQLite commit / Redis XADD) ──▶ reply "ok"
                                   │
    run side (whoever holds the run) applies it, and settles it only once its effect is durable:

| op        | applied as                              | settled when                                   |
|-----------|-----------------------------------------|------------------------------------------------|
| answer    | the waiting question's outcome          | the step ends (its transcript is stored), or    |
| decline   |   (matched by ask id, or by question    |   a new holder finds the call closed in the    |
|           |   text on a question a new holder       |   stored session; refused when the question    |
|           |   restored from the session)            |   was no longer waiting                        |
| send      | inbox mail                              | the step ends after the mail was delivered, or |
|           |                                         |   a new holder finds it in the stored session  |
| interrupt | the runtime's interrupt words           | the step ends after its words went out, or a   |
|           |                                         |   new holder finds them in the stored session  |
| stop      | the run is cancelled                    | the run has ended                              |
| oracle    | a side question                         | its answer was published                       |
| model     | the runtime's new model and/or effort   | the run has ended (a new holder replays it     |
|           |   (text: {"model", "effort"} as JSON)   |   before its first attempt); refused at once   |

A holder that dies leaves its unsettled intents in the log; the next holder (a restarted bot, or
another worker) replays them against the session it resumes (replay.py), so nothing is lost and
nothing is applied twice. The log is the state store's in one process (adapters/state) and the
run's intent stream over Redis (adapters/transport/redis_*.py): one set of rules for both.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class Op(StrEnum):
    ANSWER = "answer"
    DECLINE = "decline"
    SEND = "send"
    INTERRUPT = "interrupt"
    STOP = "stop"
    ORACLE = "oracle"
    MODEL = "model"


class Settled(StrEnum):
    """How an intent left the log."""

    DONE = "done"  # its effect is durable
    REFUSED = "refused"  # it could not apply (the question was no longer waiting): the person was told
    MOOT = "moot"  # the run ended before it applied (e.g. mail to a run that was stopped)


#: Ops a person is waiting to hear the outcome of (the others are fire-and-forget once durable).
ANSWERED_OPS = frozenset({Op.ANSWER, Op.DECLINE})


@dataclass(frozen=True)
class Intent:
    """One input, as it is logged. ``card``/``ask``/``question`` are for answers and declines: the card
    the person clicked, the question id it was bound to when they did, and the question's text (a new
    holder's restored question has a new id but the same text). ``user`` is who said it."""

    op: Op
    text: str = ""
    card: str = ""
    ask: str = ""
    question: str = ""
    user: str = ""
    kind: str = ""  # answers and declines: the question's kind ("budget": the runtime's own, not the model's)
    by: str = ""  # answers and declines: how the person is named to the model (a display name), when known
    iid: str = field(default_factory=lambda: uuid.uuid4().hex)
    at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Intent:
        data: dict[str, Any] = json.loads(text)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["op"] = Op(known["op"])
        return cls(**known)


# Why an intent is refused when it reached the run only after its end (no step will ever hear it).
RUN_ENDED = "the run had ended"


@dataclass(frozen=True)
class IntentReply:
    """What the run side says back about one intent (what a person is then told is the chat side's).

    ``ok``: answer/decline reached a waiting question, stop found something to stop; ``mail``: the
    mail's id; ``in_flight``: an interrupt found a step running; ``answer``/``error``: the oracle's;
    ``kept``: an answer waits for its question, which a restart is bringing back (or goes to the inbox)."""

    ok: bool = True
    mail: str = ""
    in_flight: bool = False
    kept: bool = False
    answer: str = ""
    error: str = ""

    @classmethod
    def too_late(cls) -> IntentReply:
        return cls(ok=False, error=RUN_ENDED)

    @property
    def ended(self) -> bool:
        """Refused because the run had ended before the intent reached it."""
        return not self.ok and self.error == RUN_ENDED


class IntentLog(Protocol):
    """A durable, ordered log of intents per run. Implementations are safe from any thread."""

    def append(self, run_id: str, intent: Intent) -> bool:
        """Log it durably before returning; False when the iid is logged already (a retried write)."""
        ...

    def unsettled(self, run_id: str) -> list[Intent]:
        """Intents not settled yet, oldest first."""
        ...

    def settle(self, run_id: str, iid: str, how: Settled) -> None: ...


class RunLog(Protocol):
    """One run's part of an IntentLog, as its holder sees it (over Redis: fenced by the holder's generation)."""

    def append(self, intent: Intent) -> bool: ...

    def unsettled(self) -> list[Intent]: ...

    def settle(self, iid: str, how: Settled) -> None: ...


class BoundLog:
    """A RunLog on an IntentLog for one run id."""

    def __init__(self, log: IntentLog, run_id: str) -> None:
        self.log, self.run_id = log, run_id

    def append(self, intent: Intent) -> bool:
        return self.log.append(self.run_id, intent)

    def unsettled(self) -> list[Intent]:
        return self.log.unsettled(self.run_id)

    def settle(self, iid: str, how: Settled) -> None:
        self.log.settle(self.run_id, iid, how)


class StoreIntentLog:
    """The IntentLog of one process: the bridge's state store (SQLite by default, so it outlives the process)."""

    def __init__(self, store: IntentStore) -> None:
        self.store = store

    def append(self, run_id: str, intent: Intent) -> bool:
        return self.store.log_intent(run_id, intent.iid, intent.to_json())

    def unsettled(self, run_id: str) -> list[Intent]:
        out = []
        for data in self.store.unsettled_intents(run_id):
            try:
                out.append(Intent.from_json(data))
            except (ValueError, KeyError, TypeError):
                continue  # written by a newer version, say: never let one entry block the others
        return out

    def settle(self, run_id: str, iid: str, how: Settled) -> None:
        self.store.settle_intent(run_id, iid, str(how))


class IntentStore(Protocol):
    """The part of adapters.state.StateStore the log needs."""

    def log_intent(self, run_id: str, iid: str, data: str) -> bool: ...

    def unsettled_intents(self, run_id: str) -> list[str]: ...

    def settle_intent(self, run_id: str, iid: str, how: str) -> None: ...


def mail_id_for(intent: Intent) -> str:
    """The inbox id of mail sent by an intent: the same in every process, so the stored session shows
    whether it reached the model (the inbox tool prints "[id] text")."""
    return f"m-{intent.iid[:10]}"
