"""Clicks, form submissions and thread messages -> hub intents.

Buttons carry `adapters.ids` action ids. A button that needs words (answer in words, interrupt,
ask the oracle) opens a form first — the form must be the interaction's first answer, so nothing
is deferred before it; the Stop button opens the Stop form (message + "end the run"). Every other
click is acknowledged at once with a silent deferred update and handled beside it: the card itself
shows the outcome, so a successful answer adds no message. The interaction id is the delivery id.

Clicks and forms carry `where=` (the thread, or the DM, they came from): the cards of a run shown in
several places say where it was answered.

A person's message in a run's thread (its own or one following it) goes to `hub.said` (oracle,
keyed answer, reply to a card, or inbox mail — one rule for every platform, in the hub); one with
attachments goes to `hub.attach` once they are fetched (files.py). Bots,
webhooks and system messages are ignored, and so are threads that hold no run.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

from adapters.discord_bridge.checks import message_problem
from adapters.discord_bridge.context import DiscordContext
from adapters.discord_bridge.files import fetch_all
from adapters.discord_bridge.modals import StopModal, WordsModal
from adapters.discord_bridge.reply import Reply
from adapters.ids import IdError, decode, encode

__all__ = ["SUBAGENT_WARNING", "Actions"]

log = logging.getLogger(__name__)

SUBAGENT_WARNING = "\nA subagent in flight loses its half-done work. To end the run for good: `/flower end`."
_PERSON_MESSAGES = (discord.MessageType.default, discord.MessageType.reply)


class Actions:
    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    def fresh(self, interaction: discord.Interaction[Any]) -> bool:
        return self.ctx.fresh(interaction)

    # ---- buttons ---------------------------------------------------------------------------------
    async def on_button(self, interaction: discord.Interaction[Any], action_id: str) -> None:
        reply = Reply(interaction)
        async with reply.active():
            try:
                action = decode(action_id)
            except IdError as exc:
                log.info("a click on a button that is not ours (%s)", exc)
                await reply.say("That button is not one of mine (another bot's, or an older version's).")
                return
            user = self.ctx.note(interaction.user)
            if action.verb == "stop":
                decision = self.ctx.hub.may(user, "send", run_id=action.run_id)  # before a form opens for nothing
                if not decision:
                    await reply.say(decision.reason)
                    return
                await interaction.response.send_modal(StopModal(
                    run_id=action.run_id, fresh=self.fresh,
                    on_submit=lambda ix, text, end: self.on_stop_form(ix, action.run_id, text, end)))
                return
            delivery = str(interaction.id)
            where = self.ctx.where(interaction.channel)
            if action.verb in ("txt", "int", "orc"):
                result = await self.ctx.hub.handle_action(action_id, user, delivery_id=delivery, where=where)
                if result.needs_input:
                    key = action.card_id.split("-", 1)[-1]
                    await interaction.response.send_modal(WordsModal(
                        verb=action.verb, run_id=action.run_id, key=key, prompt=result.needs_input, fresh=self.fresh,
                        on_submit=lambda ix, text: self.on_words_form(ix, action_id, text)))
                    return
                reply.ack(thinking=False)
                await self.ctx.tell(reply, result)
                return
            reply.ack(thinking=False)
            # On a live run the card itself shows the answer; a sleeping run's wake is worth a word.
            live = self.ctx.hub.is_live(action.run_id)
            result = await self.ctx.hub.handle_action(action_id, user, delivery_id=delivery, where=where)
            await self.ctx.tell(reply, result, quiet_when_ok=live and action.verb in ("ans", "dec"))

    # ---- forms -----------------------------------------------------------------------------------
    async def on_words_form(self, interaction: discord.Interaction[Any], action_id: str, text: str) -> None:
        reply = Reply(interaction)
        async with reply.active():
            reply.ack(thinking=False)
            user = self.ctx.note(interaction.user)
            action = decode(action_id)
            live = self.ctx.hub.is_live(action.run_id)
            result = await self.ctx.hub.handle_action(action_id, user, delivery_id=str(interaction.id), text=text,
                                                      where=self.ctx.where(interaction.channel))
            verb = action.verb
            await self.ctx.tell(reply, result, quiet_when_ok=live and verb == "txt",
                                suffix=SUBAGENT_WARNING if verb == "int" else "")

    async def on_stop_form(self, interaction: discord.Interaction[Any], run_id: str, text: str, end: bool) -> None:
        reply = Reply(interaction)
        async with reply.active():
            reply.ack(thinking=False)
            user = self.ctx.note(interaction.user)
            delivery = str(interaction.id)
            if end:
                result = await self.ctx.hub.handle_action(encode("stop", run_id), user, delivery_id=delivery)
            else:
                result = await self.ctx.hub.handle_action(encode("int", run_id), user, delivery_id=delivery,
                                                          text=text)
            await self.ctx.tell(reply, result, suffix="" if end else SUBAGENT_WARNING)

    # ---- thread messages ------------------------------------------------------------------------
    async def on_message(self, message: discord.Message) -> None:
        if (problem := message_problem(message)) is not None:  # discord.py parsed it, but it is no one's message
            log.warning("discord: skipped a malformed MESSAGE_CREATE dispatch: %s", problem)
            return
        if not self.ctx.ready or message.author.bot or message.webhook_id is not None:
            return
        if message.type not in _PERSON_MESSAGES or not (message.content.strip() or message.attachments):
            return
        thread, run_id = self.ctx.run_here(message.channel)
        if thread is None or run_id is None:
            return
        hub = self.ctx.hub
        if hub.seen(f"discord:message:{message.id}"):
            return  # the same message again (a replayed dispatch)
        user = self.ctx.note(message.author)
        ref = message.reference
        reply_to = str(ref.message_id) if ref is not None and ref.message_id is not None else ""
        try:
            if message.attachments:  # files go to the run's inbox/ with the words (files.py)
                files = await fetch_all(message.attachments, hub.upload_limits(run_id, thread).max_file_bytes)
                await hub.attach(run_id, files, message.content, user, origin=str(message.id), where=thread)
            else:
                result = await hub.said(thread, user, message.content, origin=str(message.id), reply_to=reply_to)
                shown = result.to_show(quiet_when_ok=True) if result is not None else None
                if shown is not None:  # no interaction to answer: the hub tells the one person (a DM)
                    await hub.refuse(thread, user, shown, run_id)
        except Exception:  # one bad message must not take the listener down
            log.exception("message %s in %s not handled", message.id, thread)
