"""The platform side of a conformance rig: what a probe must answer, and what a check gets.

See `adapters.platform.testing` for how the suite uses them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from adapters.platform.contract import Surface
from adapters.platform.messages import ThreadRef
from adapters.platform.suite import Skip

__all__ = ["FAULTS", "Fault", "MakeRig", "Notes", "Probe", "Rig", "Seen", "Skip"]

# rate_limited: HTTP 429 with a wait; unavailable: the platform is down (5xx, network);
# refused: the platform says no to this call (4xx, a denied write).
Fault = Literal["rate_limited", "unavailable", "refused"]
FAULTS: tuple[Fault, ...] = ("rate_limited", "unavailable", "refused")


@dataclass(frozen=True)
class Seen:
    """One message as a person sees it on the platform."""

    text: str  # everything readable in it (title, body, fields), unescaped, invisible characters removed
    buttons: tuple[tuple[str, str], ...] = ()  # (label, interactive id), in order
    pings: frozenset[str] = frozenset()  # whom it notifies: "@everyone", "@here", "user:U1", "role:R1"


class Probe(Protocol):
    """The platform side of one rig: test code of the platform's own, reading its double (or a
    sandbox of the real platform), never the surface's internals."""

    @property
    def thread(self) -> ThreadRef:
        """A thread of this rig's own, where the surface may post."""
        ...

    @property
    def users(self) -> Sequence[str]:
        """People of the platform, as the surface names them (at least one)."""
        ...

    async def read(self, thread: ThreadRef, message_id: str) -> Seen | None:
        """The message as shown now; None when the thread has no such message."""
        ...

    async def shown(self, thread: ThreadRef) -> int:
        """How many messages everyone in the thread sees."""
        ...

    async def told(self, user: str) -> list[str]:
        """Every line only `user` was shown (ephemeral notices, direct messages), oldest first."""
        ...

    async def remove(self, thread: ThreadRef, message_id: str) -> None:
        """Delete the message on the platform, behind the surface's back (a person or a moderator did)."""
        ...

    def fail(self, fault: Fault, retry_after: float) -> bool:
        """From now until `heal()`, the platform answers the surface's posts and edits with `fault`
        (a 429 announces `retry_after` seconds). False: this platform cannot fail that way."""
        ...

    def heal(self) -> None:
        """The platform answers normally again."""
        ...

    def private(self, thread: ThreadRef) -> str | None:
        """The one user a thread is shared with (a direct message), None for a shared thread."""
        ...


@dataclass
class Rig:
    surface: Surface
    probe: Probe
    close: Callable[[], Awaitable[None]] | None = None  # awaited after the check (with a deadline)


MakeRig = Callable[[], Rig | Awaitable[Rig]]


class Notes:
    """What a check may record beside passing or failing."""

    def __init__(self, fallbacks: dict[str, str]) -> None:
        self.fallbacks = fallbacks

    def fallback(self, member: str, what: str) -> None:
        self.fallbacks[member] = what
