"""Which intent a plain message or a button means: the door's second stage (see door.py).

- `said`: a plain message in a thread — an answer when it replies to a card or says `qN: …`, `?…`
  asks the oracle, anything else is inbox mail (replies.py has the rules), or, when the run has
  ended, the start of its next round. None when the thread holds no run.
- `click`: a decoded button id (adapters.ids) — the intent its verb names, or a `Form` when the
  button wants words first (`FORMS`), or a result to show (an option that no longer exists, a verb
  this version does not route).

Every verb of `adapters.ids.VERBS` is routed here; a verb added there and forgotten here fails
tests/hub/test_door.py, not silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.access import RunPermission
from adapters.hub.cards import CardRules
from adapters.hub.intents import (
    Answer,
    Click,
    Continue,
    Decline,
    Interrupt,
    Oracle,
    RoutineAction,
    RoutineVerb,
    RunIntent,
    Said,
    Send,
    ShowFiles,
    Stop,
    Undo,
    Wake,
)
from adapters.hub.registry import RunRegistry, has_ended
from adapters.hub.replies import parse_reply
from adapters.hub.results import Form, IntentResult
from adapters.ids import ActionId, IdError, decode
from adapters.platform import ThreadRef

__all__ = ["FORMS", "NOT_MINE", "ROUTINE_VERBS", "WordsFirst", "click", "opens_form", "said"]

NOT_MINE = "That button is not one of mine"


@dataclass(frozen=True)
class WordsFirst:
    """A button that wants words before it acts: the form to open, once `permission` allows it."""

    run_id: str
    permission: RunPermission
    form: Form


# verb → (what the form's words will need, the form). Checked before the form opens, so nobody types
# into a form for nothing. "stop" only where the platform has a Stop form (Click.stop_form).
FORMS: dict[str, tuple[RunPermission, Form]] = {
    "txt": ("answer", Form("words", "Answer", "Your answer")),
    "int": ("send", Form("words", "Interrupt", "What should the agent hear? (empty: just stop and go on)")),
    "orc": ("answer", Form("words", "Ask the oracle", "Your question about the run (the run is not disturbed)")),
    "stop": ("send", Form("stop", "Stop the run", "A message for the agent (optional)")),
}


def opens_form(click: Click) -> bool:
    """Whether the door may answer this click with a form rather than act (a platform that must choose
    between a form and an acknowledgement before it knows, Discord, asks this first). Pure."""
    try:
        verb = decode(click.action_id).verb
    except IdError:
        return False
    return verb in FORMS and click.text is None and (verb != "stop" or click.stop_form)


def said(said: Said, thread: ThreadRef, registry: RunRegistry, cards: CardRules) -> RunIntent | None:
    """What a person's plain message in `thread` means; None when the thread holds no run (or it says nothing)."""
    run_id = registry.run_in(thread)
    if run_id is None or not said.text.strip():
        return None
    reply = parse_reply(said.text)
    card_id = cards.by_message(run_id, thread, said.reply_to) if said.reply_to else None
    if card_id is None and reply.kind == "answer":
        card_id = cards.by_key(run_id, reply.key)
    if card_id is not None:
        return Answer(run_id, card_id, reply.text)
    if reply.kind == "oracle":
        return Oracle(run_id, reply.text)
    record = registry.record(run_id)
    if record is not None and not registry.is_live(run_id) and has_ended(record):  # a thread is a conversation
        return Continue(run_id, said.text.strip())
    return Send(run_id, said.text.strip(), origin=said.origin)


# A routine's buttons (a routines list): verb → what it does to the routine its id names.
ROUTINE_VERBS: dict[str, RoutineVerb] = {"rtp": "pause", "rtr": "resume", "rtn": "run", "rtd": "delete"}


def click(action: ActionId, pressed: Click, cards: CardRules) -> RunIntent | RoutineAction | WordsFirst | IntentResult:
    """The intent a decoded button names (`pressed.text`: the words a form asked for, if any)."""
    verb, run_id, card_id, text = action.verb, action.run_id, action.card_id, pressed.text
    if verb in ROUTINE_VERBS:
        return RoutineAction(run_id, ROUTINE_VERBS[verb])
    if opens_form(pressed):
        if verb == "txt" and not cards.check(run_id, card_id):  # a stale card: told why, no form to fill in vain
            return Answer(run_id, card_id, "")
        permission, form = FORMS[verb]
        return WordsFirst(run_id, permission, form)
    if verb == "ans":
        options = cards.options(run_id, card_id)
        if action.option is not None and action.option < len(options):
            return Answer(run_id, card_id, options[action.option])
        if not cards.check(run_id, card_id):  # settled, its run ended…: the answer path says which, and to whom
            return Answer(run_id, card_id, "")
        return IntentResult(False, "That option no longer exists.", run_id)
    if verb == "txt":
        return Answer(run_id, card_id, text or "")
    if verb == "dec":
        return Decline(run_id, card_id, text or "")
    if verb == "stop":
        return Stop(run_id)
    if verb == "int":
        return Interrupt(run_id, text or "")
    if verb == "wake":
        return Wake(run_id)
    if verb == "fil":  # the summary's Files button (changes.py)
        return ShowFiles(run_id)
    if verb == "undo":  # the summary's "Undo changes…": the checkpoints, listed (undo.py)
        return Undo(run_id)
    if verb == "rst":  # a listed checkpoint's Restore
        return Undo(run_id, card_id)
    if verb == "orc":
        return Oracle(run_id, text or "")
    # A verb the codec knows but nothing here routes (a newer version's button): say so, change nothing.
    return IntentResult(False, f"I don't know what that button does ({verb!r}); it may be from a newer version "
                        "of the bot.", run_id)
