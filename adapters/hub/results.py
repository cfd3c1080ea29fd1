"""What an intent returns to the platform that forwarded it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from adapters.platform.messages import ThreadRef


@dataclass(frozen=True)
class Form:
    """What a platform opens before an intent can go on: `kind` "words" (one text field) or "stop" (a
    message and "end the run"), with its title and the prompt above the field."""

    kind: Literal["words", "stop"]
    title: str
    prompt: str


@dataclass(frozen=True)
class IntentResult:
    """`message` is fit to show the actor (ephemerally). Refusals are ok=False and changed nothing.

    `needs_input`: the button wants words first (free-text answer, interrupt, oracle question, the Stop
    form): the platform opens `form` (this is its prompt) and submits the click again with `text=`.
    `duplicate`: a replayed delivery (ok) — nothing new to say — or a late click on a card that no longer
    takes an answer (not ok): settled, its run ended, left behind by a restart; `message` says which
    (CardRules.check is the one rule).
    `told`: the hub has already told the actor this refusal itself, alone (`Hub.refuse`); platforms show
    nothing more. Every other refusal is for the platform to show, every time (never "said a moment ago").
    `ignored`: a plain message in a thread that holds no run: not for the hub, the platform ignores it.
    `routine_id`: the routine a routine intent made or changed.
    """

    ok: bool
    message: str
    run_id: str = ""
    needs_input: str = ""
    duplicate: bool = False
    told: bool = False
    form: Form | None = None
    ignored: bool = False
    routine_id: str = ""  # the routine an AddRoutine or RoutineAction was about

    def __bool__(self) -> bool:
        return self.ok

    @property
    def replayed(self) -> bool:
        """A delivery the hub handled before (a retried event, a double click): nothing new to say."""
        return self.ok and self.duplicate

    def to_show(self, *, quiet_when_ok: bool) -> str | None:
        """The one rule for what the person who acted is told (None: nothing). A replay says nothing; a
        success says nothing where the thread itself shows it (`quiet_when_ok`); a refusal the hub told
        already says nothing more; any other refusal, and a late click on a stale card, says why. A routine's
        change shows in no thread, so it is always said."""
        if self.replayed or self.told or (self.ok and quiet_when_ok and not self.routine_id):
            return None
        return self.message or None


# Tell one person alone why not, changing nothing: (thread, user, reason, run_id) → the refusal, told.
Refuse = Callable[["ThreadRef", str, str, str], Awaitable[IntentResult]]
