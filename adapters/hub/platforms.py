"""Platforms: the platforms a hub speaks through, by name — and what each can do beyond posting.

The hub never learns a platform type: it asks Platforms. A surface's optional members (naming the place
on cards, opening a direct message: adapters/platform/contract.py) are used here, with their fallbacks
for a bare surface (`as_platform`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from adapters.hub.results import IntentResult
from adapters.platform import Surface, SurfaceError, ThreadRef, as_platform, provides

log = logging.getLogger(__name__)


class Platforms:
    def __init__(self, surfaces: Surface | Iterable[Surface] | Mapping[str, Surface]) -> None:
        if isinstance(surfaces, Mapping):
            self.surfaces: dict[str, Surface] = dict(surfaces)
        else:
            items = [surfaces] if isinstance(surfaces, Surface) else list(surfaces)
            self.surfaces = {s.name: s for s in items}

    def has(self, platform: str) -> bool:
        return platform in self.surfaces

    def surface(self, platform: str) -> Surface:
        return self.surfaces[platform]

    def name(self, thread: ThreadRef) -> str:
        """How cards name the place a thread is in ("Slack", "the web page"); the platform's id by default."""
        surface = self.surfaces.get(thread.platform)
        return as_platform(surface).place if surface is not None else thread.platform

    def can_dm(self, platform: str) -> bool:
        surface = self.surfaces.get(platform)
        return surface is not None and provides(surface, "direct")

    async def direct(self, platform: str, user: str) -> ThreadRef | None:
        """A thread only `user` sees, where their platform can open one (None: it cannot)."""
        surface = self.surfaces.get(platform)
        return await as_platform(surface).direct(user) if surface is not None else None

    async def tell(self, thread: ThreadRef, user: str, text: str) -> None:
        """Say something to one person alone (ephemerally); a failure costs only that line."""
        surface = self.surfaces.get(thread.platform)
        if surface is None:
            return
        try:
            await surface.notify(thread, user, text)
        except SurfaceError as exc:
            log.warning("could not notify %s in %s: %r", user, thread, exc)

    async def refuse(self, thread: ThreadRef, user: str, reason: str, run_id: str = "") -> IntentResult:
        """Tell the actor alone why not (`tell`); nothing else changes. The refusal, marked as told."""
        await self.tell(thread, user, reason)
        return IntentResult(False, reason, run_id, told=True)
