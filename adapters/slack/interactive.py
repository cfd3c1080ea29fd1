"""Buttons, modals and the message shortcut.

A click is acked at once, then routed by its id's verb (adapters.ids):

Every click is submitted to the hub's door as a `Click` (delivery id: the click's trigger_id); the door
decides. When its result asks for a form (`IntentResult.form`), a modal opens:

=============  =======================================================================
words          answer in words, interrupt, ask the oracle: one text field; its submission
               goes back as the same `Click` with the text (delivery id: the view's id)
stop           the Stop modal: optional message + "end the run" → `Stop` or `Interrupt`
=============  =======================================================================

The door refuses people who may not act before a form opens, so nobody types an answer for nothing.
The "Interrupt this run" message shortcut opens the same stop modal for the run whose thread holds
the message; "Stop following here" ends the mirror a thread shows (`/flower unfollow` cannot be
typed in a thread: Slack delivers no slash command from one). Clicks and submissions that are not
ours, or arrive malformed, are acked, logged and explained to the person.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.models.views import View

from adapters.hub import NOT_MINE, Click, IntentResult, Interrupt, Stop, Unfollow, opens_form
from adapters.ids import IdError, decode, encode
from adapters.platform import SurfaceError
from adapters.slack.context import SlackContext
from adapters.slack.errors import slack_call
from adapters.slack.inbound import Action, PayloadError, message_thread, read_action, text_field
from adapters.slack.modals import (
    INPUT_CALLBACK,
    PLAN_PROMPT,
    PLAN_TITLE,
    STOP_CALLBACK,
    input_view,
    read_submission,
    stop_view,
)
from adapters.slack.routines_list import routines_list
from adapters.view.plan_card import PLAN_REVIEW

__all__ = ["SHORTCUT_CALLBACK", "UNFOLLOW_CALLBACK", "register"]

log = logging.getLogger(__name__)

SHORTCUT_CALLBACK = "flower_interrupt"
UNFOLLOW_CALLBACK = "flower_unfollow"
Ack = Callable[..., Awaitable[Any]]
NOT_OURS = f"{NOT_MINE} (or comes from an older version of the bot)."


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_click(ack: Ack, body: dict[str, Any], respond: Any) -> None:
        await ack()
        try:
            a = read_action(body)
        except PayloadError as exc:
            log.warning("block_actions payload not understood: %s", exc)
            await _explain(respond, "I could not read that click; please try again.")
            return
        click = Click(a.action_id, stop_form=True)
        await ctx.note(a.user, a.user_name, wait=not opens_form(click))  # a form's trigger lasts 3 s
        thread_ts = "" if a.ephemeral else a.thread_ts
        result = await ctx.hub.submit(click, a.user,
                                      delivery_id=a.trigger_id or a.action_ts or None,
                                      where=ctx.thread(a.channel, thread_ts))
        if result.form is not None:
            await _open(ctx, a, _form_view(ctx, a, result, thread_ts))
            return
        await ctx.show(result, a.channel, a.user, thread_ts)
        if result.ok and a.ephemeral and result.routine_id:  # a routine's button: the list it was on, afresh
            text, blocks = routines_list(ctx, a.channel)
            try:
                await respond(replace_original=True, text=text, blocks=[b.to_dict() for b in blocks])
            except Exception as exc:  # an expired response_url: the person's next /flower routines is fresh
                log.info("routines list not refreshed: %r", exc)

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
        result = await ctx.hub.submit(Click(action_id, sub.text), user, delivery_id=f"view:{view_id}", where=where)
        await ctx.show(result, sub.meta.get("c", ""), user, sub.meta.get("t", ""), quiet_when_ok=verb != "int")

    async def on_stop(ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        try:
            user = text_field(body, "user", "id")
            sub = read_submission(view)
            run_id, view_id = sub.meta["r"], text_field(view, "id")
        except (PayloadError, KeyError) as exc:
            log.warning("stop modal submission not understood: %s", exc)
            await ack(response_action="errors", errors={"text": "This form is out of date; close it and try again."})
            return
        await ack()
        intent = Stop(run_id) if sub.end else Interrupt(run_id, sub.text.strip())
        result = await ctx.hub.submit(intent, user, delivery_id=f"view:{view_id}")
        await ctx.show(result, sub.meta.get("c", ""), user, sub.meta.get("t", ""), quiet_when_ok=False)

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
        await ctx.note(user, name, wait=False)  # the Stop form comes next: its trigger lasts 3 s
        record = ctx.run_in(ctx.thread(channel, thread_ts))
        if record is None or not ctx.hub.query.is_live(record.run_id):
            await ctx.tell(channel, user, "That message is not in the thread of a live run.", thread_ts)
            return
        # The shortcut is the run's Stop button, pressed from any of its messages.
        a = Action(action_id=encode("stop", record.run_id), value="", user=user, user_name="", channel=channel,
                   message_ts="", thread_ts=thread_ts, trigger_id=trigger, action_ts="", ephemeral=False,
                   message_text="")
        result = await ctx.hub.submit(Click(a.action_id, stop_form=True), user, delivery_id=trigger,
                                      where=ctx.thread(channel, thread_ts))
        if result.form is not None:
            await _open(ctx, a, _form_view(ctx, a, result, thread_ts))
            return
        await ctx.show(result, channel, user, thread_ts)

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
        await ctx.note(user, name)
        result = await ctx.hub.submit(Unfollow(), user, where=ctx.thread(channel, thread_ts))
        if not result.ok and not ctx.surface.told_recently(user, result.message):  # ok: the thread says it
            await ctx.tell(channel, user, result.message, thread_ts)

    async def not_ours(ack: Ack, body: dict[str, Any], respond: Any) -> None:
        await ack()
        log.warning("interaction not handled: type %r, id %r", body.get("type"), _interaction_id(body))
        await _explain(respond, NOT_OURS)

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


def _form_view(ctx: SlackContext, a: Action, result: IntentResult, thread_ts: str) -> View:
    """The modal the door asked for: the Stop form, or one text field for the button's words."""
    form = result.form
    if form is None or form.kind == "stop":
        record = ctx.hub.query.run(result.run_id)
        return stop_view(result.run_id, channel=a.channel, thread=thread_ts, message=a.value,
                         task=record.task if record is not None else "")
    action = decode(a.action_id)  # the door routed it, so it decodes
    verb = action.verb
    if verb == "txt" and ctx.card_kind(action.run_id, action.card_id) == PLAN_REVIEW:  # Keep planning…: a new plan
        return input_view(a.action_id, verb, PLAN_PROMPT, channel=a.channel, thread=thread_ts,
                          context=a.message_text, title=PLAN_TITLE)
    return input_view(a.action_id, verb, form.prompt, channel=a.channel, thread=thread_ts,
                      context=a.message_text if verb == "txt" else "")


async def _open(ctx: SlackContext, a: Action, view: View) -> None:
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
