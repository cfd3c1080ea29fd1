"""The contract between the hub and a chat platform: what a surface must do, and what it may.

```
hub ──OutMessage──▶ Outbox ──post/update──▶ Surface ──▶ the platform's API
 │                                             ▲
 └──notify / place / direct ───────────────────┘
```

Members, and who calls them:

=============================  ========  ============  ==================================================
member                         required  called by     fallback (what a platform without it gets)
=============================  ========  ============  ==================================================
``name: str``                  yes       hub, metrics  —  (the platform part of every ThreadRef it serves)
``limits: PlatformLimits``     yes       outbox, hub   —  (see adapters.platform.limits)
``post(thread, msg) -> id``    yes       outbox        —
``update(thread, id, msg)``    yes       outbox        —  (PermanentSurfaceError when the message is gone)
``notify(thread, user, text)`` yes       hub           —  (only that user sees it)
``place: str``                 no        hub (cards)   ``name``: cards say "answered by Ana on slack"
``direct(user) -> ThreadRef``  no        hub (DMs)     ``None``: this platform cannot open a direct
                                                       message, so a question that waited stays where
                                                       it is
``stream(thread, id, live)``   no        outbox        ``StreamRefused``: the thread shows the agent's
  ``-> id``                                            words once each message is complete, as ordinary
                                                       prose (what every thread showed before streaming)
=============================  ========  ============  ==================================================

`stream` shows one message as it is being written (`LiveText`): called first with ``id=None`` to start
it (return its id), then with that id as words arrive (paced and coalesced by the outbox), and last
with ``live.done`` to close it with its complete text. A platform that appends (Slack's
chat.appendStream) sends ``live.new``; one that edits (Discord, the web page) shows ``live.text``. It
raises `StreamRefused` when the platform will not stream in that place; the outbox then falls back.

Two Protocols draw that table. `Surface` holds the required members: it is what the outbox needs
and what `isinstance(x, Surface)` checks at runtime, so a test double with just those five members
is a surface. `PlatformSurface` adds the optional members *with their fallbacks as default bodies*
(the way `claude_agent_sdk.SessionStore` marks its optional methods): a platform's surface
subclasses it explicitly, overrides what its platform can do and inherits the rest, and mypy
refuses to instantiate one that lacks a required member. The hub keeps every surface as a
`PlatformSurface` (`as_platform` completes a bare `Surface` with the fallbacks), so it can call
`surface.place` and `await surface.direct(user)` directly: no getattr, no platform names.

Every member raises only `SurfaceError` subclasses; `adapters.platform.testing` checks all of this
against a live platform (or its double).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from adapters.platform.errors import StreamRefused
from adapters.platform.limits import PlatformLimits
from adapters.platform.messages import LiveText, OutMessage, ThreadRef

__all__ = ["OPTIONAL_MEMBERS", "PlatformSurface", "Surface", "as_platform", "provides"]

# The optional members, each with the fallback its default body implements (see the table above).
OPTIONAL_MEMBERS: dict[str, str] = {
    "place": "the platform's name",
    "direct": "None: this platform cannot open a direct message",
    "stream": "StreamRefused: the agent's words are shown once each message is complete",
}


@runtime_checkable
class Surface(Protocol):
    """A chat platform as the outbox sees it. Implementations raise only SurfaceError subclasses."""

    name: str
    limits: PlatformLimits

    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        """Post a new message in the thread; return the platform message id."""
        ...

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        """Replace the content of a message posted earlier."""
        ...

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        """Tell one user something only they see (Slack ephemeral, Discord ephemeral follow-up). The
        hub calls it directly, not through an outbox, so a surface may wait out a 429 here itself."""
        ...


@runtime_checkable
class PlatformSurface(Surface, Protocol):
    """A surface with the optional members answered: subclass it, override what the platform can do."""

    @property
    def place(self) -> str:
        """How cards of a run shown in several places name this one ("answered by Ana on Slack").
        Fallback: the platform's name."""
        return self.name

    async def direct(self, user: str) -> ThreadRef | None:
        """A thread only `user` and the bot share (a direct message), for a question that waited too
        long. Fallback: None, this platform cannot open one."""
        return None

    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        """Start (``message_id`` None), grow, or close (``live.done``) a message being written; return its
        id. Fallback: StreamRefused, the outbox shows the words as ordinary prose once complete."""
        raise StreamRefused(f"{self.name} does not stream messages")


def provides(surface: Surface, member: str) -> bool:
    """Whether `member` gives something of the surface's own rather than its fallback: a `place`
    other than the name, a `direct` of its own. Sees through wrappers that pass members on (the
    metrics' CountingSurface), so the hub may ask it before arming a direct message."""
    if member not in OPTIONAL_MEMBERS:
        raise ValueError(f"{member!r} is not an optional member (those are {', '.join(OPTIONAL_MEMBERS)})")
    full = as_platform(surface)
    if member == "place":
        return full.place != full.name
    own = getattr(full.inner if isinstance(full, _WithFallbacks) else full, member, None)
    # A wrapper passes on the inner surface's member, which may itself be PlatformSurface's fallback.
    return own is not None and getattr(own, "__func__", None) is not getattr(PlatformSurface, member)


def as_platform(surface: Surface) -> PlatformSurface:
    """The surface itself when it already is a PlatformSurface, else it with the fallbacks added."""
    if isinstance(surface, PlatformSurface):
        return surface
    if not isinstance(surface, Surface):
        raise TypeError(f"{type(surface).__name__} is not a Surface: it needs name, limits, post, update, notify")
    return _WithFallbacks(surface)


class _WithFallbacks(PlatformSurface):
    """A bare Surface (a test double) seen through the whole contract: an optional member it has of
    its own is used, the fallback otherwise; anything else it has is passed through."""

    def __init__(self, inner: Surface) -> None:
        self.inner = inner
        self.name, self.limits = inner.name, inner.limits

    def __getattr__(self, item: str) -> Any:
        if item == "inner":  # not set yet: no recursion through __getattr__
            raise AttributeError(item)
        return getattr(self.inner, item)

    @property
    def place(self) -> str:
        own = getattr(self.inner, "place", None)
        return own if isinstance(own, str) and own else self.name

    async def direct(self, user: str) -> ThreadRef | None:
        own = getattr(self.inner, "direct", None)
        if own is None:
            return None
        thread: ThreadRef | None = await own(user)
        return thread

    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        own = getattr(self.inner, "stream", None)
        if own is None:
            raise StreamRefused(f"{self.name} does not stream messages")
        got: str = await own(thread, message_id, live)
        return got

    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        return await self.inner.post(thread, msg)

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        await self.inner.update(thread, message_id, msg)

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        await self.inner.notify(thread, user, text)
