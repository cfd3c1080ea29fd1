"""What crosses Redis: key names, and events / ends / intents as flat string fields.

Streams (all under one prefix, "flower" by default):

| key                    | type   | written by | read by                          | holds                        |
|------------------------|--------|------------|----------------------------------|------------------------------|
| `{p}:work`             | stream | front      | workers (group `workers`)        | one entry per run to hold    |
| `{p}:events`           | stream | workers    | the front (group `front`)        | events, steps, ends, hellos  |
| `{p}:run:{id}:in`      | stream | front      | the worker holding the run       | intents, in order            |
| `{p}:run:{id}`         | hash   | workers    | workers                          | holder, gen, applied cursor  |
| `{p}:worker:{name}`    | string | its worker | workers, front (EXISTS)          | heartbeat, expires when dead |
| `{p}:reply:{iid}`      | list   | workers    | the front (BLPOP)                | one intent's reply           |

A work entry stays in the holder's pending-entry list until the run ends, so a worker that dies
leaves its runs there for another to claim (redis_worker.py). `gen` counts holders of a run: every
message says which holder sent it, and an answer is only applied by the holder it was meant for.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from adapters.transport.base import RunEnd
from flower_core import Event

FRONT_GROUP, WORK_GROUP = "front", "workers"


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

    def worker(self, name: str) -> str:
        return f"{self.prefix}:worker:{name}"

    def workers(self) -> str:
        return f"{self.prefix}:worker:*"

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
    return Event(text(fields, "kind", "unknown"), text=text(fields, "text"), tool=text(fields, "tool"),
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
def intent_fields(op: str, iid: str, *, gen: int | None = None, reply: bool = True, **args: str) -> dict[str, str]:
    """`gen`: the holder an answer is meant for (None: whoever holds the run when it is read)."""
    return {"op": op, "iid": iid, "gen": "" if gen is None else str(gen), "reply": "1" if reply else "", **args}
