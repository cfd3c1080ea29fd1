"""Event: the one shape every front end consumes. normalize() flattens SDK messages into it."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from flower_core.sdk_events import normalize

__all__ = ["EVENT_KINDS", "PARTIAL", "Event", "EventKind", "PartialKind", "context_of", "is_partial", "json_safe",
           "normalize"]

EventKind = Literal[
    "text", "thinking", "prompt", "tool_call", "tool_result", "result", "error", "reset",
    "system", "task", "unknown", "ask", "retry", "step", "handoff",
]

EVENT_KINDS: tuple[str, ...] = get_args(EventKind)  # the same 15, spelled once

# Words as the model writes them (``Runtime(partial_text=True)``): one "partial" event per text delta, with
# the delta as its text. A kind of its own, outside the seed's 15, so every consumer written to the seed (which
# keeps an ``else`` branch for kinds it does not know) ignores it; the complete "text" event still follows, so
# StepResult.text and whoever only reads "text" see exactly what they saw before. Reader: PartialPayload.
PartialKind = Literal["partial"]
PARTIAL: PartialKind = "partial"


def is_partial(ev: Event) -> bool:
    """True for a partial-text event (a streamed delta): a consumer that does not stream skips it."""
    return ev.kind == PARTIAL


@dataclass
class Event:
    """One thing that happened in a run. Front ends read kind/text/tool/payload, never raw."""

    kind: EventKind | PartialKind
    text: str = ""
    tool: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    raw: Any = None

    def __str__(self) -> str:
        if self.kind == "tool_call":
            return f"[{self.tool}] {self.text}"
        return self.text or f"<{self.kind}>"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe part of the event (raw is deliberately left out)."""
        return {"kind": self.kind, "text": self.text, "tool": self.tool, "payload": self.payload}



def __getattr__(name: str) -> Any:
    # normalize lives in its own module (it imports the SDK); re-exported lazily so the import has no cycle.
    if name == "normalize":
        from flower_core.sdk_events import normalize

        globals()["normalize"] = normalize
        return normalize
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def json_safe(value: Any, depth: int = 12) -> Any:
    """A deep copy made only of dict/list/str/int/float/bool/None; anything else becomes a short string."""
    t = type(value)
    if value is None or t is str or t is bool or t is int:
        return value
    if t is float:
        return value if math.isfinite(value) else None
    if depth <= 0:
        return "…"
    try:
        if isinstance(value, dict):
            return {_key(k): json_safe(v, depth - 1) for k, v in dict.items(value)}
        if isinstance(value, list | tuple | set | frozenset):
            return [json_safe(v, depth - 1) for v in value]
        # Subclasses (str/int enums, literals) are flattened to their base value, never kept as objects.
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, int):
            return int.__int__(value)
        if isinstance(value, float):
            return json_safe(float.__float__(value))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: json_safe(getattr(value, f.name, None), depth - 1) for f in dataclasses.fields(value)}
        return short_str(value)
    except Exception:
        return f"<{t.__name__}>"


def _key(k: object) -> str:
    return k if type(k) is str else short_str(k)


def short_str(value: object, limit: int = 200) -> str:
    """str(value) cut to limit, and never an exception (a broken __str__ gives '<TypeName>')."""
    try:
        s = value if type(value) is str else str(value)
        return str.__str__(s)[:limit]
    except Exception:
        return f"<{type(value).__name__}>"


_CONTEXT_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def context_of(usage: object) -> int:
    """Context level of one model turn: input + cache_read + cache_creation tokens; 0 when missing or malformed."""
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in _CONTEXT_KEYS:
        v = usage.get(key)
        if type(v) is int:
            total += v
        elif type(v) is float and math.isfinite(v):
            total += int(v)
    return total
