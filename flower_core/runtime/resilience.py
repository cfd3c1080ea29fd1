"""Resilience: which failures deserve another attempt, and how long to wait before it.

Pure logic only (no I/O): the Runtime's loop asks ``classify`` about an attempt's error and
``Resilience`` about whether and when to try again.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

Classification = Literal["transient", "permanent", "unknown"]

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 413, 422})

# Checked before the transient patterns: an auth failure's text often also says "connection"
# or "request failed", and reading it as transient would retry something that cannot succeed.
_PERMANENT = re.compile(
    r"\b(?:400|401|403|404|413|422)\b"
    r"|invalid[ _]?api[ _]?key|authentication|unauthori[sz]ed|forbidden|permission[ _]denied"
    r"|invalid[ _]request|credit balance|quota exceeded|billing"
    r"|budget|max[ _]?turns|error_max_|prompt is too long|context length|CLINotFound"
    r"|oauth token|not logged in|please run /login",
    re.I,
)
_TRANSIENT = re.compile(
    r"\b(?:408|429|500|502|503|504|529)\b"
    r"|overloaded|rate[ _]limit|too many requests|server[ _]error|internal server error"
    r"|service unavailable|temporarily unavailable|bad gateway|gateway time-?out"
    r"|connection|socket hang up|fetch failed|network|ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE"
    r"|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETDOWN|can't reach|timed? ?out|timeout|stream (?:ended|closed)",
    re.I,
)


def classify(error: str | None, *, status: int | None = None) -> Classification:
    """Sort a failure: "transient" (worth another attempt), "permanent" (stop), or "unknown".

    ``status`` (an HTTP status the CLI reported) decides first when present; the text is the
    fallback, with permanent patterns checked before transient ones.
    """
    if status is not None:
        if status in TRANSIENT_STATUS:
            return "transient"
        if status in PERMANENT_STATUS:
            return "permanent"
    text = (error or "").strip()
    if not text:
        return "unknown"
    if _PERMANENT.search(text):
        return "permanent"
    if _TRANSIENT.search(text):
        return "transient"
    return "unknown"


RESUME_PROMPT = (
    "The previous round stopped midway because of a connection problem and did not finish. "
    "Check what is already on disk in the workspace, then pick up from where it stopped; do not start over."
)


@dataclass
class Resilience:
    """The retry policy of a Runtime.

    ``max_attempts`` includes the first attempt. Backoff is ``base_delay * 2**(attempt-1)``
    capped at ``max_delay``, with ``±jitter`` spread. ``resume_prompt`` is what a resumed session
    is told: deliberately no error detail, the model only needs to know it was cut off.
    ``idle_timeout`` bounds the wait for the next message of an attempt (None = unbounded); when
    it runs out the attempt fails as a transient timeout and is resumed like any other.
    """

    enabled: bool = True
    max_attempts: int = 3
    base_delay: float = 2.0
    max_delay: float = 60.0
    jitter: float = 0.25
    retry_unknown: bool = True
    idle_timeout: float | None = 3600.0
    resume_prompt: str = RESUME_PROMPT

    def delay_for(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = min(self.base_delay * (2 ** max(0, attempt - 1)), self.max_delay)
        if base <= 0:
            return 0.0
        spread = max(0.0, min(self.jitter, 1.0))
        return max(0.0, base * (1.0 - spread + 2.0 * spread * random.random()))

    def should_retry(self, kind: Classification) -> bool:
        return kind == "transient" or (kind == "unknown" and self.retry_unknown)

    @classmethod
    def coerce(cls, value: Resilience | bool) -> Resilience:
        """An instance as is; a bool becomes ``Resilience(enabled=value)``."""
        return value if isinstance(value, Resilience) else cls(enabled=bool(value))
