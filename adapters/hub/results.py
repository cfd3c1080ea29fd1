"""What an intent returns to the platform that forwarded it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IntentResult:
    """`message` is fit to show the actor (ephemerally). Refusals are ok=False and changed nothing.

    `needs_input`: the button wants words first (free-text answer, interrupt, oracle question): the
    platform opens a form with this prompt and calls `handle_action` again with `text=`.
    `duplicate`: a replayed delivery or a second click; platforms should show nothing new.
    """

    ok: bool
    message: str
    run_id: str = ""
    needs_input: str = ""
    duplicate: bool = False

    def __bool__(self) -> bool:
        return self.ok
