"""What a person does, as values: one frozen dataclass per intent, and the one table of who may.

```
platform: parse ──▶ Intent ──▶ hub.submit(intent, actor, delivery_id=, where=) ──▶ IntentResult ──▶ render
```

=============  ===========================  ==========  ===================================================
intent         fields                       permission  what it does
=============  ===========================  ==========  ===================================================
Start          task, options                start*      a new run in `where` (its home thread)
Answer         run_id, card_id, text        answer      settles a question (or an approval's option)
Decline        run_id, card_id, reason      answer      declines it
Approve        run_id, card_id, decision    answer      a tool approval: "once" / "run" / "deny"
Send           run_id, text, origin         send        inbox mail (the run must be live)
Attach         run_id, files, text, origin  send        files into the run's inbox/, then one mail
Interrupt      run_id, text                 send        cut the turn short with words (live)
Oracle         run_id, question             answer      a side question about the run (live)
Stop           run_id                       stop        end the run (or: never wake it)
Steer          run_id, model, effort        send        the run's model and/or effort, from its next turn
Undo           run_id, checkpoint           stop        list the checkpoints ("" ) / restore one (not live)
Wake           run_id, remark               answer      bring back a run a restart left asleep
Continue       run_id, text                 send        an ended run's next round
Resume         run_id, text                 (own)       show the run in `where` too, and go on with text
Follow         run_id                       (own)       show a live run in `where` too
Unfollow       —                            —           `where` stops showing the run it follows
ShowFiles      run_id                       (own)       the summary's Files button: changed files here
Said           text, origin, reply_to       —           a plain message in `where`: becomes one of the above
Click          action_id, text, stop_form   —           a button's id: becomes one of the above
AddRoutine     task, schedule, timezone…    start*      a routine whose runs appear in `where`'s channel
RoutineAction  routine_id, verb             manage†     pause, resume, run (now) or delete a routine
=============  ===========================  ==========  ===================================================

`start*`: may start runs in `where`'s channel. `(own)`: the handler applies the same permission
("answer": seeing a run takes what answering it takes) with a refusal that says what was refused
("You cannot follow run r1: …"). `—`: the intent names no run itself; the door finds it.
`manage†`: the routine's owner while they may still start runs in its channel, or that channel's admins
(ROUTINE_PERMISSIONS; Access.can_manage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from adapters.access import Permission, RunPermission
from adapters.hub.files import Incoming
from adapters.hub.options import RunOptions
from adapters.hub.results import IntentResult
from adapters.platform import ThreadRef

__all__ = [
    "PERMISSIONS", "ROUTINE_PERMISSIONS", "AddRoutine", "Answer", "Approve", "Attach", "Click", "Continue", "Decline",
    "Follow", "Intent", "Interrupt", "Oracle", "Permission", "Resume", "RoutineAction", "RoutineIntent",
    "RoutineVerb", "RunIntent", "Said", "Send", "ShowFiles", "Start", "Steer", "Stop", "Submit", "Undo", "Unfollow",
    "Wake",
]



@dataclass(frozen=True)
class Start:
    task: str
    options: RunOptions | None = None


@dataclass(frozen=True)
class Answer:
    run_id: str
    card_id: str
    text: str


@dataclass(frozen=True)
class Decline:
    run_id: str
    card_id: str
    reason: str = ""


@dataclass(frozen=True)
class Approve:
    """`decision`: "once" / "run" allow (the card's first two options), "deny" declines with `text`."""

    run_id: str
    card_id: str
    decision: str
    text: str = ""


@dataclass(frozen=True)
class Send:
    """`origin`: the platform id of the person's own message, so its receipt can show on it."""

    run_id: str
    text: str
    origin: str = ""


@dataclass(frozen=True)
class Attach:
    run_id: str
    files: tuple[Incoming, ...]
    text: str = ""
    origin: str = ""


@dataclass(frozen=True)
class Interrupt:
    run_id: str
    text: str = ""


@dataclass(frozen=True)
class Oracle:
    run_id: str
    question: str


@dataclass(frozen=True)
class Stop:
    run_id: str


@dataclass(frozen=True)
class Steer:
    """A new model and/or effort for the run ("" keeps that part as it is)."""

    run_id: str
    model: str = ""
    effort: str = ""


@dataclass(frozen=True)
class Undo:
    """The workspace back as a checkpoint saw it; "" lists the checkpoints (with a Restore button each)."""

    run_id: str
    checkpoint: str = ""


@dataclass(frozen=True)
class Wake:
    run_id: str
    remark: str = ""


@dataclass(frozen=True)
class Continue:
    run_id: str
    text: str


@dataclass(frozen=True)
class Resume:
    run_id: str
    text: str = ""


@dataclass(frozen=True)
class Follow:
    run_id: str


@dataclass(frozen=True)
class Unfollow:
    """`where` stops showing the run it follows."""


@dataclass(frozen=True)
class ShowFiles:
    run_id: str


@dataclass(frozen=True)
class Said:
    """A plain message in `where`: an answer when it replies to a card (`reply_to`: the platform id of the
    message it replies to) or says `qN: …`, `?…` asks the oracle, else inbox mail, or an ended run's next
    round (routing.said has the rule)."""

    text: str
    origin: str = ""
    reply_to: str = ""


@dataclass(frozen=True)
class Click:
    """A button (adapters.ids) and, when a form asked for them, the words typed into it. `stop_form`: the
    platform has a Stop form (message + "end the run"), so a Stop button asks for it first."""

    action_id: str
    text: str | None = None
    stop_form: bool = False


@dataclass(frozen=True)
class AddRoutine:
    """A task that starts itself in `where`'s channel (adapters/hub/routines.py). `schedule`: what the person
    typed (adapters/hub/schedule.py); `timezone`: an IANA zone, "" for the person's (`zone_hint`, what the
    platform knows of them) or else the bot's. `overlap`: "skip" or "queue" while its previous run is live;
    `catch_up`: fire once at start for occurrences missed while the bot was down."""

    task: str
    schedule: str
    timezone: str = ""
    name: str = ""
    options: RunOptions | None = None
    overlap: str = "skip"
    catch_up: bool = True
    zone_hint: str = ""


RoutineVerb = Literal["pause", "resume", "run", "delete"]


@dataclass(frozen=True)
class RoutineAction:
    routine_id: str
    verb: RoutineVerb


RunIntent = Answer | Decline | Approve | Send | Attach | Interrupt | Oracle | Stop | Steer | Undo | Wake | \
    Continue | Resume | Follow | ShowFiles
RoutineIntent = AddRoutine | RoutineAction
Intent = Start | RunIntent | Unfollow | Said | Click | RoutineIntent

# Who may: the one table the door applies before any handler (intents absent here apply it themselves).
PERMISSIONS: dict[type[RunIntent], RunPermission] = {
    Answer: "answer", Decline: "answer", Approve: "answer", Oracle: "answer", Wake: "answer",
    Send: "send", Attach: "send", Interrupt: "send", Continue: "send", Steer: "send",
    Stop: "stop", Undo: "stop",
}


# Who may, for routines: "start" in the routine's channel to add one; "manage" to change one (Access.can_manage).
ROUTINE_PERMISSIONS: dict[type[RoutineIntent], Literal["start", "manage"]] = {AddRoutine: "start",
                                                                              RoutineAction: "manage"}


class Submit(Protocol):
    """The door (`Hub.submit`), as handlers that go on with another intent receive it: a resume that
    follows and sends, files that become mail. They never get the Hub."""

    async def __call__(self, intent: Intent, actor: str, *, delivery_id: str | None = None,
                       where: ThreadRef | None = None) -> IntentResult: ...
