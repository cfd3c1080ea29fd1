"""What crosses Redis: key names, and events / ends / intents as flat string fields.

Streams (all under one prefix, "flower" by default):

| key                    | type   | written by | read by                          | holds                        |
|------------------------|--------|------------|----------------------------------|------------------------------|
| `{p}:work`             | stream | front      | workers (group `workers`)        | one entry per run to hold    |
| `{p}:events`           | stream | workers    | the front (group `front`)        | events, steps, ends, hellos  |
| `{p}:run:{id}:in`      | stream | front      | the worker holding the run       | intents (JSON), in order     |
| `{p}:run:{id}:settled` | hash   | the holder | the next holder                  | iid -> how it was settled    |
| `{p}:run:{id}`         | hash   | workers    | workers                          | holder, gen (the fence)      |
| `{p}:beats`            | hash   | workers    | workers, front                   | name -> last beat (Redis ms) |
| `{p}:workers`          | hash   | workers    | the front                        | name -> runs held, limit     |
| `{p}:reply:{iid}`      | list   | the holder | the front (BLPOP)                | one intent's reply           |

A work entry stays in the holder's pending-entry list until the run ends, so a worker that dies
leaves its runs there for another to claim (redis_worker.py). `gen` counts holders of a run: every
write a holder makes names it and is refused once another holder has taken over (redis_fence.py).
An intent stays in the run's stream for good; it is consumed when its iid is in the settled hash.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from adapters.transport.base import RunEnd
from adapters.transport.intents import Intent, IntentReply
from flower_core import Event

FRONT_GROUP, WORK_GROUP = "front", "workers"
#: The consumer a work entry is handed to when its holder lets go of it: it never beats, so it is dead
#: and anyone with room claims the entry at once.
RELEASED = "~released"


@dataclass(frozen=True)
class Keys:
    prefix: str = "flower"

    @property
    def work(self) -> str:
        return f"{self.prefix}:work"

    @property
    def events(self) -> str:
        return f"{self.prefix}:events"

    def intents(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:in"

    def run(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}"

    def settled(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:settled"

    @property
    def beats(self) -> str:
        return f"{self.prefix}:beats"

    @property
    def about(self) -> str:
        return f"{self.prefix}:workers"

    def reply(self, iid: str) -> str:
        return f"{self.prefix}:reply:{iid}"


def text(fields: dict[Any, Any], name: str, default: str = "") -> str:
    """One field of a stream entry as str (the client may hand back bytes)."""
    value = fields.get(name, fields.get(name.encode(), default))
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# ---- run side -> chat side ----------------------------------------------------------------------
def event_fields(run_id: str, gen: int, holder: str, seq: int, ev: Event) -> dict[str, str]:
    # Event.raw stays behind: adapters never read it, and it is not JSON.
    payload = json.dumps(ev.payload if isinstance(ev.payload, dict) else {}, ensure_ascii=False, default=str)
    return {"t": "ev", "run": run_id, "gen": str(gen), "holder": holder, "seq": str(seq), "at": _now(),
            "kind": ev.kind, "text": ev.text, "tool": ev.tool, "payload": payload}


def event_of(fields: dict[Any, Any]) -> Event:
    try:
        payload = json.loads(text(fields, "payload", "{}"))
    except ValueError:
        payload = {}
    kind: Any = text(fields, "kind", "unknown")  # an unknown kind stays as it is: consumers have an else branch
    return Event(kind, text=text(fields, "text"), tool=text(fields, "tool"),
                 payload=payload if isinstance(payload, dict) else {})


def end_fields(run_id: str, gen: int, holder: str, seq: int, end: RunEnd) -> dict[str, str]:
    return {"t": "end", "run": run_id, "gen": str(gen), "holder": holder, "seq": str(seq), "at": _now(),
            "state": end.state,
            "text": end.text, "failed_at": end.failed_at, "error": end.error, "cost": repr(end.cost_usd),
            "steps": str(end.steps)}


def end_of(fields: dict[Any, Any]) -> RunEnd:
    try:
        cost, steps = float(text(fields, "cost", "0")), int(text(fields, "steps", "0"))
    except ValueError:
        cost, steps = 0.0, 0
    return RunEnd(text(fields, "state", "failed"), text=text(fields, "text"), failed_at=text(fields, "failed_at"),
                  error=text(fields, "error"), cost_usd=cost, steps=steps)


def note_fields(kind: str, run_id: str, gen: int, holder: str, seq: int, **extra: str) -> dict[str, str]:
    """A step done ("step", extra name=) or a new holder saying hello ("hello", extra previous=)."""
    return {"t": kind, "run": run_id, "gen": str(gen), "holder": holder, "seq": str(seq), "at": _now(), **extra}


def _now() -> str:
    """Wall-clock time a message was written: the front measures how long it took to arrive."""
    return f"{time.time():.6f}"


# ---- chat side -> run side ----------------------------------------------------------------------
def intent_entry(intent: Intent, *, reply: bool = True) -> dict[str, str]:
    """An intent as its stream entry. `reply`: the front waits for one. (Whoever holds the run applies
    it: an answer finds its question by text, so it is never bound to one holder.)"""
    return {"iid": intent.iid, "intent": intent.to_json(), "reply": "1" if reply else ""}


def control_entry(what: str) -> dict[str, str]:
    """Not an intent: a note to whoever holds the run now ("sync": say again where the run is)."""
    return {"ctl": what}


def intent_of(fields: dict[Any, Any]) -> Intent | None:
    """The intent an entry holds (None: a control entry, or unreadable)."""
    raw = text(fields, "intent")
    if not raw:
        return None
    try:
        return Intent.from_json(raw)
    except (ValueError, KeyError, TypeError):
        return None


def reply_json(reply: IntentReply) -> str:
    return json.dumps(asdict(reply), ensure_ascii=False)


def reply_of(raw: str) -> IntentReply:
    data: dict[str, Any] = json.loads(raw)
    known = {k: v for k, v in data.items() if k in IntentReply.__dataclass_fields__}
    return IntentReply(**known)
