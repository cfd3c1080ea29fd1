"""What the bot process expects of a front end (web page, Slack, Discord): its plug-in contract."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from adapters.hub import Hub
    from adapters.platform import Surface

__all__ = ["Frontend"]


class Frontend(Protocol):
    """One surface's process side. The bot builds every front end, hands their surfaces to one Hub,
    attaches the hub, starts them, and stops them in reverse order at shutdown."""

    name: str  # its name in bots/platforms.py: also the ThreadRef.platform it owns

    @property
    def surface(self) -> Surface:
        """Read-only here, so a front end may hold its own Surface class (WebSurface, SlackSurface, …)."""
        ...

    def attach(self, hub: Hub) -> None:
        """Called once, after the Hub exists and before start()."""
        ...

    async def start(self) -> None:
        """Connect or listen; return once ready to take intents."""
        ...

    async def stop(self) -> None:
        """Disconnect; idempotent."""
        ...

    async def health(self) -> str:
        """Its connection in one word, read from the platform library's own state: "connected" or
        "listening" when it takes intents (see adapters/ops/health.READY_STATES), else e.g. "connecting",
        "closed". Cheap and quick: /readyz asks it on every probe. Optional: a front end without it
        shows as "unknown" and keeps the process from being ready."""
        ...
