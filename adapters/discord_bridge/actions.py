"""Actions: the bridge's listener for clicks, form submissions and thread messages → the hub's door.

Buttons carry `adapters.ids` action ids and are submitted as `Click`s (the interaction id is the
delivery id). A button that may want words (answer in words, interrupt, ask the oracle, Stop:
`opens_form`) is submitted before anything is sent, because a form must be the interaction's first
answer: when the door asks for one, it opens (the Stop form: message + "end the run"). Every other
click is acknowledged at once with a silent deferred update and submitted beside it: the card itself
shows the outcome, so a successful answer adds no message.

Clicks and forms carry `where=` (the thread, or the DM, they came from): the cards of a run shown in
several places say where it was answered.

A person's message in a run's thread (its own or one following it) is submitted as `Said` (oracle,
keyed answer, reply to a card, or inbox mail — one rule for every platform, in the hub); one with
attachments as `Attach` once they are fetched (files.py). Bots, webhooks and system messages are
ignored, and so are threads that hold no run. Payload checks are inbound.py's.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

from adapters.discord_bridge.context import DiscordContext
from adapters.discord_bridge.files import fetch_all
from adapters.discord_bridge.inbound import is_person_message, message_problem, reply_to_of, stop_form_intent
from adapters.discord_bridge.modals import PLAN_PROMPT, PLAN_WORDS, StopModal, WordsModal
from adapters.discord_bridge.render import SUBAGENT_WARNING
from adapters.discord_bridge.reply import Reply
from adapters.hub import Attach, Click, IntentResult, Said, opens_form
from adapters.ids import IdError, decode
from adapters.view.plan_card import PLAN_REVIEW

__all__ = ["Actions"]

log = logging.getLogger(__name__)


class Actions:
    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    def fresh(self, interaction: discord.Interaction[Any]) -> bool:
        return self.ctx.fresh(interaction)

    # ---- buttons ---------------------------------------------------------------------------------
    async def on_button(self, interaction: discord.Interaction[Any], action_id: str) -> None:
        reply = Reply(interaction)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            click = Click(action_id, stop_form=True)
            submit = self.ctx.hub.submit
            delivery, where = str(interaction.id), self.ctx.where(interaction.channel)
            if opens_form(click):  # nothing may be sent before a form
                result = await submit(click, user, delivery_id=delivery, where=where)
                if result.form is not None:
                    await interaction.response.send_modal(self._form(result, action_id))
                    return
                reply.ack(thinking=False)
                await self.ctx.show(reply, result)
                return
            reply.ack(thinking=False)
            # On a live run the card itself shows the answer; a sleeping run's wake is worth a word.
            verb, run_id = _verb_and_run(action_id)
            live = self.ctx.hub.query.is_live(run_id)
            result = await submit(click, user, delivery_id=delivery, where=where)
            await self.ctx.show(reply, result, quiet_when_ok=live and verb in ("ans", "dec"))

    def _form(self, result: IntentResult, action_id: str) -> discord.ui.Modal:
        """The form the door asked for: the Stop form, or one text field for the button's words."""
        run_id = result.run_id
        if result.form is None or result.form.kind == "stop":
            return StopModal(run_id=run_id, fresh=self.fresh,
                             on_submit=lambda ix, text, end: self.on_stop_form(ix, run_id, text, end))
        action = decode(action_id)  # the door routed it, so it decodes
        plan = action.verb == "txt" and self.ctx.card_kind(run_id, action.card_id) == PLAN_REVIEW  # Keep planning…
        return WordsModal(verb=action.verb, run_id=run_id, key=action.card_id.split("-", 1)[-1],
                          prompt=PLAN_PROMPT if plan else result.form.prompt, fresh=self.fresh,
                          on_submit=lambda ix, text: self.on_words_form(ix, action_id, text),
                          words=PLAN_WORDS if plan else None)

    # ---- forms -----------------------------------------------------------------------------------
    async def on_words_form(self, interaction: discord.Interaction[Any], action_id: str, text: str) -> None:
        reply = Reply(interaction)
        async with reply.active():
            reply.ack(thinking=False)
            user = self.ctx.note(interaction.user)
            verb, run_id = _verb_and_run(action_id)
            live = self.ctx.hub.query.is_live(run_id)
            result = await self.ctx.hub.submit(Click(action_id, text), user, delivery_id=str(interaction.id),
                                               where=self.ctx.where(interaction.channel))
            await self.ctx.show(reply, result, quiet_when_ok=live and verb == "txt",
                                suffix=SUBAGENT_WARNING if verb == "int" else "")

    async def on_stop_form(self, interaction: discord.Interaction[Any], run_id: str, text: str, end: bool) -> None:
        reply = Reply(interaction)
        async with reply.active():
            reply.ack(thinking=False)
            user = self.ctx.note(interaction.user)
            result = await self.ctx.hub.submit(stop_form_intent(run_id, text, end), user,
                                               delivery_id=str(interaction.id))
            await self.ctx.show(reply, result, suffix="" if end else SUBAGENT_WARNING)

    # ---- thread messages ------------------------------------------------------------------------
    async def on_message(self, message: discord.Message) -> None:
        if (problem := message_problem(message)) is not None:  # discord.py parsed it, but it is no one's message
            log.warning("discord: skipped a malformed MESSAGE_CREATE dispatch: %s", problem)
            return
        if not self.ctx.ready or not is_person_message(message):
            return
        thread, run_id = self.ctx.run_here(message.channel)
        if thread is None or run_id is None:
            return
        hub = self.ctx.hub
        if hub.hooks.seen(f"discord:message:{message.id}"):
            return  # the same message again (a replayed dispatch)
        user = self.ctx.note(message.author)
        try:
            if message.attachments:  # files go to the run's inbox/ with the words (files.py)
                files = await fetch_all(message.attachments, hub.query.upload_limits(run_id, thread).max_file_bytes)
                await hub.submit(Attach(run_id, tuple(files), message.content, str(message.id)), user, where=thread)
            else:
                result = await hub.submit(Said(message.content, str(message.id), reply_to_of(message)), user,
                                          where=thread)
                shown = result.to_show(quiet_when_ok=True)
                if shown is not None:  # no interaction to answer: the person is told alone (a DM)
                    await self.ctx.tell(thread, user, shown)
        except Exception:  # one bad message must not take the listener down
            log.exception("message %s in %s not handled", message.id, thread)


def _verb_and_run(action_id: str) -> tuple[str, str]:
    """The button's verb and run, for how its outcome is shown ("", "" for an id that is not ours)."""
    try:
        action = decode(action_id)
    except IdError:
        return "", ""
    return action.verb, action.run_id
