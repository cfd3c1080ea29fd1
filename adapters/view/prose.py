"""ProseBuffer: main-thread speech gathered for a moment, then posted as one message."""

from __future__ import annotations

from collections.abc import Callable

from adapters.platform import OutMessage


class ProseBuffer:
    def __init__(self, linger_s: float, max_chars: int) -> None:
        self.linger_s, self.max_chars = linger_s, max_chars
        self._parts: list[str] = []
        self._live: list[str] = []  # each part's live message key ("" when it was not streamed)
        self._chars = 0
        self._since = 0.0

    def __bool__(self) -> bool:
        return bool(self._parts)

    def due_at(self) -> float | None:
        return self._since + self.linger_s if self._parts else None

    def add(self, text: str, now: float, key: Callable[[], str], live: str = "") -> OutMessage | None:
        """Gather `text` (streamed as the live message `live`, if it was); returns the earlier gathering
        (keyed by `key()`) if this would overflow it."""
        text = text.strip()
        out = self.take(key()) if self._parts and self._chars + 2 + len(text) > self.max_chars else None
        if not self._parts:
            self._since = now
        self._parts.append(text)
        self._live.append(live)
        self._chars += len(text) + 2
        return out

    def take(self, key: str) -> OutMessage | None:
        """Everything gathered as one prose message (None when empty). Prose never edits an older post."""
        if not self._parts:
            return None
        streamed = tuple(self._live) if all(self._live) else ()  # shown as written only if every part was
        msg = OutMessage(key, "prose", "\n\n".join(self._parts), replace=False, live_keys=streamed)
        self._parts, self._live, self._chars = [], [], 0
        return msg
