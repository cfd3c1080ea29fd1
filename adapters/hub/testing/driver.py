"""What a door driver is: a person on one platform, doing things through the platform's real inbound path
and reading what it showed them. See `adapters.hub.testing` for how the suite uses one.

```
check ──▶ DoorDriver ──(the platform's library, its double, HTTP…)──▶ the bot ──▶ hub.submit
  │          │  start · press · press_id · submit_form · say · stop     (what a person does)
  │          └─ card (the thread, as shown) · Told (what only that person was shown)
  └──▶ driver.hub.query (the hub's books) · QuestionRuns (what the run side received)
```

A driver never calls `hub.submit` itself unless its platform is the hub's own memory surface: it
does what a person does (a slash command, a click on a posted message, a message in the thread, a
form) and waits until the bot has handled it — bounded, on the platform's own signals, never a sleep.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from adapters.hub.query import HubQuery
from adapters.hub.testing.runs import QuestionRuns
from adapters.platform import ThreadRef
from adapters.platform.suite import Skip
from adapters.state import StateStore

__all__ = ["DoorDriver", "HubSeen", "MakeDriver", "OpenForm", "Shown", "Skip", "Started", "Told"]


@dataclass(frozen=True)
class OpenForm:
    """A form the platform opened for the person (a Slack modal, a Discord modal, the web's `needs_input`,
    the memory surface's `IntentResult.form`). `handle` is the driver's own: what submitting it needs."""

    prompt: str
    handle: object = None


@dataclass(frozen=True)
class Told:
    """What one person was shown, alone, in answer to one thing they did: ephemeral lines, the
    interaction's replies, the HTTP answer as the page shows it; and a form, if one opened."""

    lines: tuple[str, ...] = ()
    form: OpenForm | None = None


@dataclass(frozen=True)
class Shown:
    """One message as the people of its thread see it: its readable text (title and body), its buttons
    as (label, interactive id) in order, and the driver's handle to press them later (a person's screen
    keeps showing a card's buttons until it reloads: pressing a stale card is pressing this)."""

    text: str
    buttons: tuple[tuple[str, str], ...] = ()
    handle: object = None


@dataclass(frozen=True)
class Started:
    """A start: the thread the platform showed the run in (None: none appeared), and what the person was told."""

    thread: ThreadRef | None
    told: Told


class HubSeen(Protocol):
    """What the checks read of the driver's Hub (a Hub is one): its answers, and the store its channel
    policies are kept in."""

    @property
    def query(self) -> HubQuery: ...

    @property
    def store(self) -> StateStore: ...


class DoorDriver(Protocol):
    """One platform's bot, wired to one hub whose runs the suite's QuestionRuns builds, and people on it."""

    @property
    def hub(self) -> HubSeen:
        """The hub the bot is attached to (the checks read `hub.query`, and set channel policies in `hub.store`)."""
        ...

    @property
    def platform(self) -> str:
        """The `ThreadRef.platform` of this platform's threads."""
        ...

    @property
    def channel(self) -> str:
        """"platform:channel" where `start` starts runs: the key of its channel policy."""
        ...

    @property
    def people(self) -> Sequence[str]:
        """People who use the platform, as the hub names them (user ids); [0] starts the runs. One person is
        enough for a platform that has only one (the checks that need a second then cannot be played)."""
        ...

    async def start(self, task: str, user: str) -> Started:
        """`user` starts a run with `task` the platform's way, in a new thread of `channel`."""
        ...

    async def card(self, thread: ThreadRef, key: str, *, settled: bool = False) -> Shown:
        """The card of question `key` ("q1") in `thread` as people see it, once it shows its buttons — or,
        `settled`, once the same message shows none. Waits for it (bounded); AssertionError when it does
        not come."""
        ...

    async def press(self, shown: Shown, index: int, user: str, *, delivery: str | None = None) -> Told:
        """`user` presses button `index` of `shown` (as their screen shows it, even if it changed since).
        `delivery`: a name for this delivery; pressing again with the same name is the platform delivering
        the very same interaction again (a Slack trigger, a Discord interaction, the web's delivery_id)."""
        ...

    async def press_id(self, thread: ThreadRef, action_id: str, user: str) -> Told:
        """`user` presses a button carrying `action_id` on a message in `thread` (a button the bot may never
        have made: an old version's, another app's, a forged one)."""
        ...

    async def submit_form(self, form: OpenForm, text: str, user: str) -> Told:
        """`user` fills the form with `text` and submits it."""
        ...

    async def say(self, thread: ThreadRef, text: str, user: str) -> Told:
        """`user` writes `text` in the thread (a plain message, not a reply to any message)."""
        ...

    async def stop(self, thread: ThreadRef, user: str) -> Told:
        """`user` ends the run of `thread` for good, the platform's way (its Stop button and form, a command…)."""
        ...

    async def close(self) -> None:
        """The bot goes away (its hub closes), and the platform's double with it."""
        ...


# make_driver(kit): a driver whose bot runs on a hub built with `kit=kit` (sync or async).
MakeDriver = Callable[[QuestionRuns], DoorDriver | Awaitable[DoorDriver]]


