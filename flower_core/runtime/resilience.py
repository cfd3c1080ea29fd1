"""Resilience: which failures deserve another attempt, how long to wait before it, and whether the network is back.

    classify(error)            "transient" | "fatal" | "unknown"
    Resilience.should_retry    transient always; unknown unless ``retry_unknown=False``
    Resilience.delay_for(n)    exponential backoff with jitter
    Resilience.wait_online()   a connection error: probe the endpoint (DNS + TCP, free) until it answers

The defaults are the original flower's (6 attempts, 4 s doubling to 120 s, wait up to an hour for the
network). The only I/O is the probe, in ``wait_online``; the rest is pure.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from flower_core.probe import endpoint, reachable

Classification = Literal["transient", "fatal", "unknown"]
FATAL: Classification = "fatal"
PERMANENT = FATAL  # this project's earlier word for it

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
# A connection that could not be made or was cut: worth waiting for the network before the next attempt.
_NETWORK = re.compile(
    r"connection (?:error|refused|reset|closed)|socket hang up|fetch failed|network|can't reach"
    r"|ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETDOWN|ENETUNREACH",
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
    """Sort a failure: "transient" (worth another attempt), "fatal" (stop), or "unknown".

    ``status`` (an HTTP status the CLI reported) decides first when present; the text is the
    fallback, with permanent patterns checked before transient ones.
    """
    if status is not None:
        if status in TRANSIENT_STATUS:
            return "transient"
        if status in PERMANENT_STATUS:
            return FATAL
    text = (error or "").strip()
    if not text:
        return "unknown"
    if _PERMANENT.search(text):
        return FATAL
    if _TRANSIENT.search(text):
        return "transient"
    return "unknown"


def is_network_error(error: str | None) -> bool:
    """Does this failure read as the network being down (not the server saying no)?"""
    text = error or ""
    return bool(text) and not _PERMANENT.search(text) and bool(_NETWORK.search(text))


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

    The probe: before retrying an attempt that failed on a connection error, ``wait_online`` checks
    the endpoint every ``probe_interval`` seconds (each check bounded by ``probe_timeout``) for at
    most ``max_offline_wait`` seconds; still down then, the step fails instead of burning attempts.
    ``probe=False`` skips it (retries follow the backoff alone).
    """

    enabled: bool = True
    max_attempts: int = 6
    base_delay: float = 4.0
    max_delay: float = 120.0
    jitter: float = 0.25
    probe_timeout: float = 5.0
    probe_interval: float = 15.0
    max_offline_wait: float = 3600.0
    retry_unknown: bool = True
    idle_timeout: float | None = 3600.0
    resume_prompt: str = RESUME_PROMPT
    probe: bool = True

    def delay_for(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = min(self.base_delay * (2 ** max(0, attempt - 1)), self.max_delay)
        if base <= 0:
            return 0.0
        spread = max(0.0, min(self.jitter, 1.0))
        return max(0.0, base * (1.0 - spread + 2.0 * spread * random.random()))

    def should_retry(self, kind: str) -> bool:
        return kind == "transient" or (kind == "unknown" and self.retry_unknown)

    async def wait_online(self, notify: Callable[[str], None] | None = None, *,
                          env: Mapping[str, str] | None = None) -> bool:
        """Wait until the endpoint (``env``'s ANTHROPIC_BASE_URL, else the process's) answers a probe.

        True as soon as it does; False when ``max_offline_wait`` ran out first. ``notify`` hears one
        line when the endpoint is found down and one when it is back (never when it was up at once).
        """
        host, port = endpoint(env)
        deadline = time.monotonic() + max(0.0, self.max_offline_wait)
        down = False
        while True:
            if await reachable(host, port, self.probe_timeout):
                if down and notify:
                    notify(f"{host}:{port} is reachable again; going on")
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not down and notify:
                notify(f"{host}:{port} is unreachable; waiting for it (at most {self.max_offline_wait:.0f}s)")
            down = True
            await asyncio.sleep(min(max(self.probe_interval, 0.01), left))

    @classmethod
    def coerce(cls, value: Resilience | bool) -> Resilience:
        """An instance as is; a bool becomes ``Resilience(enabled=value)``."""
        return value if isinstance(value, Resilience) else cls(enabled=bool(value))
