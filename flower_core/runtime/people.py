"""What an attempt asks the step's human channel while it runs: who waits on a person, and withdrawing them.

The channel is duck-typed (``pending()``, ``withdraw(id)``), as everywhere in the runtime: a step without
one has nobody to wait for.
"""

from __future__ import annotations

from typing import Any


def waiting_questions(channel: Any, withdraw: bool) -> int:
    """How many of the step's own questions wait for a person, so their calls may be cut at once. With
    ``withdraw`` (the run is being interrupted) they are withdrawn first and the count is of those
    withdrawn: an answer from then on is refused instead of lost, and one that got in just before is
    not counted (its result is on its way). The runtime's own questions (a ``kind``, e.g. budget) are
    not the step's calls. Waiting approvals are withdrawn too (the CLI cancels their decision on an
    interrupt, so a click after it would be told "allowed" about a call that never runs), but they are
    not question calls and are not counted."""
    pending = getattr(channel, "pending", None)
    if pending is None:
        return 0
    waiting = pending()
    own = [a for a in waiting if not getattr(a, "kind", "")]
    if not (withdraw and hasattr(channel, "withdraw")):
        return len(own)
    for approval in (a for a in waiting if getattr(a, "kind", "") == "approval"):
        channel.withdraw(approval.id)
    return sum(1 for a in own if channel.withdraw(a.id))


def person_waits(channel: Any) -> bool:
    """Something of this run (a question, an approval, the cap) waits for a person right now."""
    pending = getattr(channel, "pending", None)
    return bool(pending()) if pending is not None else False
