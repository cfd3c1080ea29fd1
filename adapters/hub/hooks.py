"""HubHooks: what a platform tells the hub that is not a person's intent (`hub.hooks`).

```
note(user, name, groups)              what the platform just learned about a person (names, roles)
remember_message(thread, key, id)     a run's message the platform posted itself (a card it opened a thread under)
tap(fn)                               see every event of every run, synchronously (never block, never raise)
auto_mirror(fn)                       name a thread every run should also show in (the web page's)
seen(key)                             a delivery of the platform's own seen before (a replayed dispatch)?
open_threads(platform, opener)        how a routine's run gets a thread in one of the platform's channels
```
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from adapters.hub.launcher import Tap
from adapters.hub.mirrors import Mirrors
from adapters.hub.scheduler import Opener
from adapters.people import People
from adapters.platform import ThreadRef
from adapters.state import RunRecord, StateStore

__all__ = ["HubHooks"]


class HubHooks:
    def __init__(self, store: StateStore, people: People, taps: list[Tap], mirrors: Mirrors,
                 openers: dict[str, Opener]) -> None:
        self.store, self.people, self.taps, self.mirrors, self.openers = store, people, taps, mirrors, openers

    def open_threads(self, platform: str, opener: Opener) -> None:
        """How a routine's run (started by the clock, not by a person in a thread) gets its thread in a
        channel of `platform`: `opener(channel, card)` posts `card` as the root of a new thread, remembers it
        as the run's status card (`remember_message(thread, card.key, id)`) and returns the thread. A
        platform whose threads need no root (the web page) just names a new one."""
        self.openers[platform] = opener

    def note(self, user: str, name: str = "", groups: Iterable[str] | None = None) -> None:
        """What a platform just learned about a person (a display name, group memberships for access)."""
        self.people.note(user, name, groups)

    def remember_message(self, thread: ThreadRef, key: str, message_id: str) -> None:
        """A platform posted a run's message itself (a status card it opened a thread under): later edits
        of that key edit it."""
        self.store.save_message(thread, key, message_id)

    def tap(self, fn: Tap) -> None:
        """See every event of every run as (run id, event), synchronously: never block, never raise."""
        self.taps.append(fn)

    def auto_mirror(self, fn: Callable[[RunRecord], ThreadRef | None]) -> None:
        """Name a thread every run should also show in (None: not this one)."""
        self.mirrors.auto.append(fn)

    def seen(self, key: str) -> bool:
        """Deduplicate a platform's own delivery (a replayed dispatch): True when `key` was seen within the
        dedupe window (else it is noted). Intents pass their delivery id to `submit` instead."""
        return self.store.seen(key)
