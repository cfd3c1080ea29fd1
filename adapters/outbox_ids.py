"""Which platform messages show each key of an outbox's thread: remembered in memory, kept in the store.

```
Outbox ──known(key) / remember(key, ids)──▶ MessageIdCache ──get/save_message──▶ MessageIds (the store)
```

A key is shown by one platform message per chunk of its text: the first has the key itself, the
k-th the key ``f"{key}#{k}"``, so the whole list can be read back from the store chunk by chunk.
Memory is bounded (`max_known` keys, least recently used forgotten): a run posts an unbounded number
of keys but edits only recent ones, and a forgotten key is looked up in the store again. A failing
store is logged and treated as not knowing the key; it never stops a delivery.
"""

from __future__ import annotations

import logging
from typing import Protocol

from adapters.lru import LRU
from adapters.platform import ThreadRef

__all__ = ["MessageIdCache", "MessageIds"]

# The outbox's logger: these lines read, and are filtered, as the outbox's always were.
log = logging.getLogger("adapters.outbox")


class MessageIds(Protocol):
    """The slice of a StateStore the outbox uses to remember key -> platform message id."""

    def save_message(self, thread: ThreadRef, key: str, message_id: str) -> None: ...
    def get_message(self, thread: ThreadRef, key: str) -> str | None: ...


class MessageIdCache:
    """The platform ids of each key's chunks in one thread (first = the key's message), the store behind."""

    def __init__(self, thread: ThreadRef, store: MessageIds | None, max_known: int) -> None:
        self.thread, self._store = thread, store
        self._ids: LRU[str, list[str]] = LRU(max_known)
        self._absent: LRU[str, bool] = LRU(max_known)  # keys the store did not know (saves a lookup)

    def known(self, key: str) -> list[str] | None:
        """The ids of the messages showing `key`, from memory or the store; None if it was never posted."""
        ids = self._ids.get(key)
        if ids is None and self._store is not None and key not in self._absent:
            try:
                first = self._store.get_message(self.thread, key)
                if first is not None:
                    ids = [first]
                    k = 2
                    while (more := self._store.get_message(self.thread, f"{key}#{k}")) is not None:
                        ids.append(more)
                        k += 1
                    self._ids.put(key, ids)
                else:
                    self._absent.put(key, True)  # only this outbox writes this thread's keys
            except Exception as exc:
                log.warning("outbox store lookup failed for %s %s: %r", self.thread, key, exc)
        return ids

    def remember(self, key: str, ids: list[str]) -> None:
        """`key` is now shown by `ids`: keep them in memory and in the store."""
        self._ids.put(key, ids)
        self._absent.discard(key)
        if self._store is not None:
            try:
                for k, mid in enumerate(ids):
                    self._store.save_message(self.thread, key if k == 0 else f"{key}#{k + 1}", mid)
            except Exception as exc:
                log.warning("outbox store save failed for %s %s: %r", self.thread, key, exc)
