"""Buttons, modals and the message shortcut.

A click is acked at once, then routed by its id's verb (adapters.ids):

=============  =======================================================================
ans, dec       straight to `Hub.handle_action` (delivery id: the click's trigger_id)
txt, int, orc  `handle_action` says it needs words → a modal; its submission goes back to
               `handle_action` with the text (delivery id: the view's id)
stop           the stop modal: optional message + "end the run" (unticked = interrupt)
=============  =======================================================================

People who may not act are refused before a modal opens, so nobody types an answer for nothing.
The "Interrupt this run" message shortcut opens the same stop modal for the run whose thread holds
the message; "Stop following here" ends the mirror a thread shows (`/flower unfollow` cannot be
typed in a thread: Slack delivers no slash command from one). Clicks and submissions that are not
ours, or arrive malformed, are acked, logged and explained to the person.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from slack_bolt.async_app import AsyncApp

from adapters.ids import IdError, decode
from adapters.slack.context import SlackContext
from adapters.slack.errors import slack_call
from adapters.slack.inbound import Action, PayloadError, message_thread, read_action, text_field
from adapters.slack.modals import INPUT_CALLBACK, STOP_CALLBACK, input_view, read_submission, stop_view
from adapters.state import RunRecord
from adapters.surface import SurfaceError

__all__ = ["SHORTCUT_CALLBACK", "UNFOLLOW_CALLBACK", "register"]

log = logging.getLogger(__name__)

SHORTCUT_CALLBACK = "flower_interrupt"
UNFOLLOW_CALLBACK = "flower_unfollow"
# verb -> the access check it needs
NEEDS_WORDS: dict[str, Literal["answer", "send"]] = {"txt": "answer", "orc": "answer", "int": "send"}
Ack = Callable[..., Awaitable[Any]]
NOT_MINE = "That button is not one of mine (or comes from an older version of the bot)."


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_click(ack: Ack, body: dict[str, Any], respond: Any) -> None:
        await ack()
        try:
            a = read_action(body)
        except PayloadError as exc:
            log.warning("block_actions payload not understood: %s", exc)
            await _explain(respond, "I could not read that click; please try again.")
            return
        await ctx.know(a.user, a.user_name)
        try:
            verb, run_id = (act := decode(a.action_id)).verb, act.run_id
        except IdError as exc:
            log.warning("click on an id that is not ours: %s", exc)
            await ctx.tell(a.channel, a.user, NOT_MINE, a.thread_ts)
            return
        thread_ts = "" if a.ephemeral else a.thread_ts
        if verb == "stop":
            record = await _may(ctx, run_id, a.user, "send", a.channel, thread_ts)
            if record is not None:
                await _open(ctx, a, stop_view(run_id, channel=a.channel, thread=thread_ts, message=a.value,
                                                 task=record.task))
            return
        if verb in NEEDS_WORDS and await _may(ctx, run_id, a.user, NEEDS_WORDS[verb], a.channel, thread_ts) is None:
            return
        where = ctx.thread(a.channel, thread_ts)
        result = await ctx.hub.handle_action(a.action_id, a.user, delivery_id=a.trigger_id or a.action_ts or None,
                                                where=where)
        if result.needs_input:
            await _open(ctx, a, input_view(a.action_id, verb, result.needs_input, channel=a.channel,
                                              thread=thread_ts, context=a.message_text if verb == "txt" else ""))
            return
        await ctx.report(result, a.channel, a.user, thread_ts)

    async def on_input(ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        try:
            user = text_field(body, "user", "id")
            sub = read_submission(view)
            action_id, view_id = sub.meta["a"], text_field(view, "id")
            verb = decode(action_id).verb
        except (PayloadError, KeyError, IdError) as exc:
            log.warning("modal submission not understood: %s", exc)
            await ack(response_action="errors", errors={"text": "This form is out of date; close it and try again."})
            return
        if verb in ("txt", "orc") and not sub.text.strip():
            await ack(response_action="errors", errors={"text": "Write something first."})
            return
        await ack()
        where = ctx.thread(sub.meta["c"], sub.meta.get("t", "")) if sub.meta.get("c") else None
        result = await ctx.hub.handle_action(action_id, user, delivery_id=f"view:{view_id}", text=sub.text,
                                                where=where)
        await ctx.report(result, sub.meta.get("c", ""), user, sub.meta.get("t", ""), success=verb == "int")

    async def on_stop(ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        try:
            user = text_field(body, "user", "id")
            sub = read_submission(view)
            run_id = sub.meta["r"]
        except (PayloadError, KeyError) as exc:
            log.warning("stop modal submission not understood: %s", exc)
            await ack(response_action="errors", errors={"text": "This form is out of date; close it and try again."})
            return
        await ack()
        hub = ctx.hub
        result = await hub.stop(run_id, user) if sub.end else await hub.interrupt(run_id, sub.text.strip(), user)
        await ctx.report(result, sub.meta.get("c", ""), user, sub.meta.get("t", ""), success=True)

    async def on_shortcut(ack: Ack, body: dict[str, Any], respond: Any) -> None:
        await ack()
        try:
            user, name = text_field(body, "user", "id"), text_field(body, "user", "name", required=False)
            channel = text_field(body, "channel", "id")
            _ts, thread_ts = message_thread(body.get("message") or {})
            trigger = text_field(body, "trigger_id")
        except PayloadError as exc:
            log.warning("message shortcut payload not understood: %s", exc)
            await _explain(respond, "I could not read that shortcut; please try again.")
            return
        await ctx.know(user, name)
        record = ctx.run_in(ctx.thread(channel, thread_ts))
        if record is None or not ctx.hub.is_live(record.run_id):
            await ctx.tell(channel, user, "That message is not in the thread of a live run.", thread_ts)
            return
        if await _may(ctx, record.run_id, user, "send", channel, thread_ts) is None:
            return
        a = Action(action_id="", value="", user=user, user_name="", channel=channel, message_ts="",
                   thread_ts=thread_ts, trigger_id=trigger, action_ts="", ephemeral=False, message_text="")
        await _open(ctx, a, stop_view(record.run_id, channel=channel, thread=thread_ts, task=record.task))

    async def on_unfollow(ack: Ack, body: dict[str, Any], respond: Any) -> None:
        await ack()
        try:
            user, name = text_field(body, "user", "id"), text_field(body, "user", "name", required=False)
            channel = text_field(body, "channel", "id")
            _ts, thread_ts = message_thread(body.get("message") or {})
        except PayloadError as exc:
            log.warning("unfollow shortcut payload not understood: %s", exc)
            await _explain(respond, "I could not read that shortcut; please try again.")
            return
        await ctx.know(user, name)
        result = await ctx.hub.unfollow(ctx.thread(channel, thread_ts), user)
        if not result.ok and not ctx.surface.told_recently(user, result.message):  # ok: the thread says it
            await ctx.tell(channel, user, result.message, thread_ts)

    async def not_ours(ack: Ack, body: dict[str, Any], respond: Any) -> None:
        await ack()
        log.warning("interaction not handled: type %r, id %r", body.get("type"), _interaction_id(body))
        await _explain(respond, NOT_MINE)

    async def view_not_ours(ack: Ack, view: dict[str, Any]) -> None:
        await ack()
        log.warning("modal submission not handled: callback_id %r", view.get("callback_id"))

    app.action(re.compile(r"^fl1:"))(on_click)
    app.view(INPUT_CALLBACK)(on_input)
    app.view(STOP_CALLBACK)(on_stop)
    app.shortcut(SHORTCUT_CALLBACK)(on_shortcut)
    app.shortcut(UNFOLLOW_CALLBACK)(on_unfollow)
    # Catch-alls last: every interaction is acked, the rest is logged.
    app.action(re.compile(r".*"))(not_ours)
    app.shortcut(re.compile(r".*"))(not_ours)
    app.view(re.compile(r".*"))(view_not_ours)


async def _may(ctx: SlackContext, run_id: str, user: str, what: Literal["answer", "send"], channel: str,
               thread_ts: str) -> RunRecord | None:
    """The run if `user` may `what` on it (the hub's rule, asked before a form opens); otherwise the
    refusal is told and None."""
    hub = ctx.hub
    record = hub.run(run_id)
    if record is None:
        await ctx.tell(channel, user, f"I don't know run {run_id}.", thread_ts)
        return None
    decision = hub.may(user, what, run_id=run_id)
    if not decision:
        await hub.refuse(record.thread, user, decision.reason, run_id)
        return None
    return record


async def _open(ctx: SlackContext, a: Action, view: Any) -> None:
    if not a.trigger_id:
        await ctx.tell(a.channel, a.user, "Slack sent no trigger to open a form; please click again.", a.thread_ts)
        return
    try:
        await slack_call("views.open", ctx.client.views_open(trigger_id=a.trigger_id, view=view))
    except SurfaceError as exc:  # an expired trigger (slow network), a bad view
        log.warning("could not open a modal: %s", exc)
        await ctx.tell(a.channel, a.user, "I could not open the form; please try again (or reply `qN: …` in the "
                          "thread to answer in words).", a.thread_ts)


async def _explain(respond: Any, text: str) -> None:
    try:
        await respond(text=text, response_type="ephemeral", replace_original=False)
    except Exception as exc:  # no response_url in a payload this broken: the log has it
        log.info("could not explain to the user: %r", exc)


def _interaction_id(body: dict[str, Any]) -> str:
    actions = body.get("actions")
    if isinstance(actions, list) and actions and isinstance(actions[0], dict):
        return str(actions[0].get("action_id", ""))
    return str(body.get("callback_id", ""))
