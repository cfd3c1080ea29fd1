"""What a person's input in a thread means, routed to the hub's intents (only its public surface).

- `said`: a plain message — an answer when it replies to a card or says `qN: …`, `?…` asks the
  oracle, anything else is inbox mail (replies.py has the rules), or, when the run has ended, the
  start of its next round (rounds.py).
- `handle_action`: a button id from `adapters.ids` — decoded, deduplicated on the platform's delivery
  id, and routed; buttons that need words first answer with the prompt to ask for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from adapters.hub.book import has_ended
from adapters.hub.changes import post_files
from adapters.hub.replies import parse_reply
from adapters.hub.results import IntentResult
from adapters.ids import IdError, decode
from adapters.surface import ThreadRef

if TYPE_CHECKING:
    from adapters.hub.hub import Hub

INPUT_PROMPTS = {"txt": "Your answer", "int": "What should the agent hear? (empty: just stop and go on)",
                 "orc": "Your question about the run (the run is not disturbed)"}
# What a form's words will need (checked before the form opens, so nobody types into a form for nothing).
INPUT_NEEDS: dict[str, Literal["answer", "send"]] = {"txt": "answer", "int": "send", "orc": "answer"}


async def said(hub: Hub, thread: ThreadRef, user: str, text: str, *, origin: str = "",
               reply_to: str = "") -> IntentResult | None:
    """A person's plain message in a thread (see replies.py for what it means). `origin` is that
    message's platform id; `reply_to` the id of the message it replies to, if any. None when the
    thread holds no run (the platform then ignores the message)."""
    run_id = hub.run_in(thread)
    if run_id is None or not text.strip():
        return None
    reply = parse_reply(text)
    card_id = hub.cards.by_message(run_id, thread, reply_to) if reply_to else None
    if card_id is None and reply.kind == "answer":
        card_id = hub.cards.by_key(run_id, reply.key)
    if card_id is not None:
        return await hub.answer(run_id, card_id, reply.text, user, where=thread)
    if reply.kind == "oracle":
        return await hub.oracle(run_id, reply.text, user)
    record = hub.run(run_id)
    if record is not None and not hub.is_live(run_id) and has_ended(record):  # a thread is a conversation
        return await hub.continue_run(run_id, text.strip(), user, where=thread)
    return await hub.send(run_id, text.strip(), user, origin=origin, where=thread)


async def handle_action(hub: Hub, action_id: str, user: str, *, delivery_id: str | None = None,
                        text: str | None = None, where: ThreadRef | None = None) -> IntentResult:
    """A button (or a form submitted after one): decode, dedupe, route. `where`: the thread the
    click came from, when the platform knows it."""
    try:
        action = decode(action_id)
    except IdError as exc:
        return IntentResult(False, f"That button is not one of mine ({exc}).")
    if delivery_id and hub.seen(f"delivery:{delivery_id}"):
        return IntentResult(True, "Already handled.", action.run_id, duplicate=True)
    verb, run_id, card_id = action.verb, action.run_id, action.ask_id
    if verb in INPUT_PROMPTS and text is None:
        record, decision = hub.run(run_id), hub.may(user, INPUT_NEEDS[verb], run_id=run_id)
        if record is None or not decision:
            return await hub.refuse(record.thread, user, decision.reason, run_id) if record is not None else \
                IntentResult(False, decision.reason, run_id)
        return IntentResult(True, INPUT_PROMPTS[verb], run_id, needs_input=INPUT_PROMPTS[verb])
    if verb == "ans":
        options = hub.cards.options(run_id, card_id)
        if action.option is not None and action.option < len(options):
            return await hub.answer(run_id, card_id, options[action.option], user, where=where)
        if not hub.cards.check(run_id, card_id):  # settled, its run ended…: the answer path says which, and to whom
            return await hub.answer(run_id, card_id, "", user, where=where)
        return IntentResult(False, "That option no longer exists.", run_id)
    if verb == "txt":
        return await hub.answer(run_id, card_id, text or "", user, where=where)
    if verb == "dec":
        return await hub.decline(run_id, card_id, user, text or "", where=where)
    if verb == "stop":
        return await hub.stop(run_id, user)
    if verb == "int":
        return await hub.interrupt(run_id, text or "", user)
    if verb == "wake":
        return await hub.wake(run_id, user)
    if verb == "fil":  # the summary's Files button (changes.py)
        record = hub.run(run_id)
        return await post_files(hub, record, user, where) if record is not None else \
            IntentResult(False, f"No run {run_id}.", run_id)
    if verb == "orc":
        return await hub.oracle(run_id, text or "", user)
    # A verb the codec knows but nothing here routes (a newer version's button): say so, change nothing.
    return IntentResult(False, f"I don't know what that button does ({verb!r}); it may be from a newer version "
                        "of the bot.", run_id)
