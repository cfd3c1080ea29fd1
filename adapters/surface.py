"""The platform-neutral message model and the interface every chat platform implements.

The hub speaks only in `OutMessage`s addressed to a `ThreadRef`; an `Outbox` delivers them to a
`Surface` (Slack, Discord, an in-memory double) within that surface's `PlatformLimits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "DISCORD",
    "KINDS",
    "MEMORY",
    "SLACK",
    "TONES",
    "Button",
    "OutMessage",
    "PermanentSurfaceError",
    "PlatformLimits",
    "StartRefused",
    "Surface",
    "SurfaceError",
    "ThreadRef",
    "TransientSurfaceError",
]


@dataclass(frozen=True)
class ThreadRef:
    """Where a conversation lives: `platform:channel:thread` (thread may be empty for a channel root).

    platform and channel must not contain ":"; the thread part may (everything after the second ":").
    """

    platform: str
    channel: str
    thread: str = ""

    def __post_init__(self) -> None:
        if not self.platform or ":" in self.platform:
            raise ValueError(f"ThreadRef platform must be non-empty without ':', got {self.platform!r}")
        if not self.channel or ":" in self.channel:
            raise ValueError(f"ThreadRef channel must be non-empty without ':', got {self.channel!r}")

    def __str__(self) -> str:
        return f"{self.platform}:{self.channel}:{self.thread}"

    @classmethod
    def parse(cls, s: str) -> ThreadRef:
        parts = s.split(":", 2)
        if len(parts) != 3:
            raise ValueError(f"not a thread reference (want platform:channel:thread): {s!r}")
        return cls(parts[0], parts[1], parts[2])


BUTTON_STYLES = frozenset({"default", "primary", "danger"})


@dataclass(frozen=True)
class Button:
    """An interactive button; `action_id` is an `adapters.ids` string (fl1:...)."""

    label: str
    action_id: str
    style: str = "default"

    def __post_init__(self) -> None:
        if self.style not in BUTTON_STYLES:
            raise ValueError(f"button style must be one of {sorted(BUTTON_STYLES)}, got {self.style!r}")


# status: the run's card, edited in place; prose: main-thread speech; ask: a question card;
# receipt: inbox mail acknowledgement; notice: handoff/retry/error/reset lines; oracle: a side answer;
# summary: the final card.
KINDS = frozenset({"status", "prose", "ask", "receipt", "notice", "oracle", "summary"})
# How a message should look where a platform can colour it (Discord embed colour, a Slack attachment
# bar, a CSS class): "" neutral, "warning" (e.g. a run past 80% of its cost cap), "danger" (at it).
TONES = frozenset({"", "warning", "danger"})


@dataclass(frozen=True)
class OutMessage:
    """One logical message in a thread.

    `key` is its identity inside the thread ("status", "ask:q1", "mail:m2", "prose:7", "summary").
    Putting a message whose key was already posted edits that platform message when `replace` is
    True, or posts a fresh one (the key then points at the new one) when False. `important`
    messages (ask cards, the summary) are never dropped by the outbox. `origin` ties a receipt to
    the person's message it acknowledges.
    """

    key: str
    kind: str
    text: str
    title: str = ""
    fields: list[tuple[str, str]] = field(default_factory=list)
    buttons: list[Button] = field(default_factory=list)
    important: bool = False
    replace: bool = True
    # The platform id of a person's message this one answers (an inbox receipt for that message):
    # platforms that can may show it there (a reaction) instead of as a message of its own.
    origin: str = ""
    # A ThreadRef string: show this message in that thread only (a receipt where the mail was written),
    # not in the run's other threads.
    only_in: str = ""
    # One of TONES: a colour hint platforms may map; the text stays complete without it.
    tone: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("OutMessage key must be non-empty")
        if self.kind not in KINDS:
            raise ValueError(f"OutMessage kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if self.tone not in TONES:
            raise ValueError(f"OutMessage tone must be one of {sorted(TONES)}, got {self.tone!r}")


@dataclass(frozen=True)
class PlatformLimits:
    """What a platform tolerates. The outbox splits text at `text_max` and paces calls with two
    token buckets: posts (`post_per_s`, `post_burst`) and edits (`update_per_min`, `update_burst`)."""

    text_max: int
    post_per_s: float
    post_burst: int
    update_per_min: float
    update_burst: int
    buttons_max: int = 25
    button_label_max: int = 75
    title_max: int = 150
    fields_max: int = 10


# Slack: message text is cut at 40,000 chars, but a section block holds 3,000 and we render prose in
# sections, so one chunk is 3,000. chat.postMessage ~1/s per channel with short bursts; chat.update
# is Tier 3 (50+/min). Button text max 75; an actions block holds 25 elements; header text 150.
SLACK = PlatformLimits(text_max=3000, post_per_s=1.0, post_burst=3, update_per_min=50.0, update_burst=5,
                       buttons_max=25, button_label_max=75, title_max=150, fields_max=10)

# Discord: content 2,000; the per-channel message route allows about 5 requests per 5 s, edits share
# a similar bucket. 5 action rows x 5 buttons; label max 80; embed title max 256; embed fields 25.
DISCORD = PlatformLimits(text_max=2000, post_per_s=1.0, post_burst=5, update_per_min=60.0, update_burst=5,
                         buttons_max=25, button_label_max=80, title_max=256, fields_max=25)

# In-memory double for tests and the terminal: generous, never the bottleneck.
MEMORY = PlatformLimits(text_max=4000, post_per_s=1000.0, post_burst=1000, update_per_min=60000.0,
                        update_burst=1000)


class SurfaceError(Exception):
    """Base class of the errors a Surface may raise."""


class TransientSurfaceError(SurfaceError):
    """Try again later (rate limited, 5xx, network); `retry_after` in seconds when the platform said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StartRefused(Exception):
    """A front end cannot come up for a reason a person must fix (a refused token, a switched-off
    intent, a taken port); the message says what to do, in one line, with no secret in it."""


class PermanentSurfaceError(SurfaceError):
    """Retrying the same call will not help (bad request, missing permission, message deleted)."""


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
        """Tell one user something only they see (Slack ephemeral, Discord ephemeral follow-up)."""
        ...
