"""People as the platforms introduce them: a display name and group memberships per user id.

Platforms note what they learn with every inbound payload (a Slack user's name, a Discord member's
roles); the view shows names through `display`, and access checks consult `groups`, so a channel
policy may list a group ("role:123") as well as users. Nothing here is persisted: names and roles
arrive again with the next click.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

__all__ = ["People"]


class People:
    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._groups: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    def note(self, user: str, name: str = "", groups: Iterable[str] | None = None) -> None:
        """Remember what a platform just told us about `user` (empty name / None groups: unchanged)."""
        with self._lock:
            if name:
                self._names[user] = name
            if groups is not None:
                self._groups[user] = frozenset(groups)

    def display(self, user: str) -> str:
        """How a card names the user: their noted name, else the id itself."""
        return self._names.get(user) or user or "someone"

    def groups(self, user: str) -> frozenset[str]:
        return self._groups.get(user, frozenset())
