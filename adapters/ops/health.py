"""Health: is the process up, and is every part it depends on connected?

    health = Health()
    health.add("slack", slack.health)       # async () -> "connected" | "connecting" | ...
    health.add("redis", redis_probe)
    ready, parts = await health.check()     # (False, {"slack": "connected", "redis": "down"})

A part's probe reads its library's own connection state and says it in one word. Ready means every
part says one of READY_STATES and the process is not stopping. A probe that raises says "error", one
that takes longer than `timeout_s` says "timeout": checking health never fails and never hangs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["READY_STATES", "Health", "Probe"]

log = logging.getLogger(__name__)

Probe = Callable[[], Awaitable[str]]
READY_STATES = frozenset({"connected", "listening", "up"})


class Health:
    def __init__(self, *, timeout_s: float = 2.0) -> None:
        self.timeout_s = timeout_s
        self.parts: dict[str, Probe] = {}
        self.stopping = False  # set at shutdown: a process that is going away is no longer ready

    def add(self, name: str, probe: Probe) -> None:
        self.parts[name] = probe

    async def check(self) -> tuple[bool, dict[str, str]]:
        names = list(self.parts)
        states = await asyncio.gather(*(self._probe(self.parts[n]) for n in names))
        parts = dict(zip(names, states, strict=True))
        return not self.stopping and all(s in READY_STATES for s in parts.values()), parts

    async def _probe(self, probe: Probe) -> str:
        try:
            return str(await asyncio.wait_for(probe(), self.timeout_s))
        except TimeoutError:
            return "timeout"
        except Exception as exc:
            log.debug("health probe failed: %r", exc)
            return "error"
