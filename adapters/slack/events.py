"""Events API: mentions, thread replies, Slack's own Stop button.

=========================  ===============================================================
event                      what it does
=========================  ===============================================================
app_mention, top level     starts a run: its status card becomes a root message (as /flower)
app_mention in a thread    the thread's run hears it (as a reply); no run there: starts one
                           in that thread
message in a run's thread  `Hub.said`: ?oracle, qN: answer, else inbox mail with a receipt;
                           in the thread of a run that has ended: its next round. With files:
                           `Hub.attach` (they are downloaded first, see files.py)
agent_session_stopped      interrupts the thread's run; the session leaves `processing`
=========================  ===============================================================

Ignored: bots (the bot itself included), edits, deletions and other message subtypes, messages
outside run threads or in threads of runs that died with the bot, and a message that mentions the bot (Slack
sends it twice, as message and as app_mention; the mention is the one acted on). An event whose
`user`, `text`, `ts`, `thread_ts`, `channel` or `subtype` is there but not a string (a number, an
object, a null) is ignored with one warning: it never reaches the hub.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp

from adapters.hub import Attach, IntentResult, Interrupt, Said
from adapters.platform import ThreadRef
from adapters.slack.commands import HELP
from adapters.slack.context import SlackContext, usage
from adapters.slack.files import SharedFile, read_files
from adapters.slack.inbound import PayloadError, parse_mention, text_field
from adapters.slack.text import strip_bot_mention

__all__ = ["PERSON_SUBTYPES", "STOPPED_TEXT", "register"]

log = logging.getLogger(__name__)

PERSON_SUBTYPES = frozenset({"", "thread_broadcast", "file_share"})  # what a person writes
STOPPED_TEXT = "{who} pressed Stop in Slack. Stop what you are doing and report where you are."


def fields(event: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, str]:
    """The event's string fields by name (an optional one absent is ""); PayloadError for any of
    them present but not a string."""
    got = {k: text_field(event, k, null_ok=False) for k in required}
    got.update({k: text_field(event, k, required=False, null_ok=False) for k in optional})
    return got


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_message(event: dict[str, Any]) -> None:
        if event.get("bot_id"):
            return
        try:  # edits, deletions... first: they carry no user of their own at the top
            if text_field(event, "subtype", required=False, null_ok=False) not in PERSON_SUBTYPES:
                return
            got = fields(event, ("user", "channel", "ts"), ("text", "thread_ts"))
            shared = read_files(event)
        except PayloadError as exc:
            log.warning("message event not understood: %s", exc)
            return
        user, channel, ts, text, thread_ts = got["user"], got["channel"], got["ts"], got["text"], got["thread_ts"]
        if not thread_ts or thread_ts == ts or _mentions(ctx, text):
            return
        thread = ctx.thread(channel, thread_ts)
        if not ctx.answers_here(thread):
            return
        await ctx.note(user)
        if shared:  # files go to the run's inbox/ with the words (files.py)
            result = await attach_shared(ctx, thread, user, text, ts, shared)
        else:
            result = await ctx.hub.submit(Said(text, origin=ts), user, where=thread)
        if result is not None:
            await ctx.show(result, channel, user, thread_ts)

    async def on_mention(event: dict[str, Any]) -> None:
        if event.get("bot_id"):
            return
        try:
            got = fields(event, ("user", "channel", "ts"), ("text", "thread_ts"))
            shared = read_files(event)
        except PayloadError as exc:
            log.warning("app_mention event not understood: %s", exc)
            return
        user, channel, ts, thread_ts = got["user"], got["channel"], got["ts"], got["thread_ts"]
        text = strip_bot_mention(got["text"], ctx.bot_user_id)
        await ctx.note(user)
        if thread_ts and thread_ts != ts and ctx.answers_here(ctx.thread(channel, thread_ts)):
            here = ctx.thread(channel, thread_ts)
            result = await attach_shared(ctx, here, user, text, ts, shared) if shared else \
                await ctx.hub.submit(Said(text, origin=ts), user, where=here)
            if result is not None:
                await ctx.show(result, channel, user, thread_ts)
            return
        in_thread = thread_ts if thread_ts and thread_ts != ts else ""
        if not text or text.lower() in ("help", "usage"):
            await ctx.tell(channel, user, HELP if text else usage(), in_thread)
            return
        cmd = parse_mention(text)
        result = await ctx.start_run(cmd.text, channel, user, thread_ts=in_thread, options=cmd.options,
                                     approve=cmd.approve, model=cmd.model, effort=cmd.effort, plan=cmd.plan)
        if not result.ok:
            await ctx.show(result, channel, user, in_thread)

    async def on_session_stopped(event: dict[str, Any]) -> None:
        try:
            channel = text_field(event, "channel", null_ok=False)
            thread_ts = text_field(event, "thread_ts", null_ok=False)
            user = text_field(event, "user", required=False)  # (null: nobody in particular)
        except PayloadError as exc:
            log.warning("agent_session_stopped event not understood: %s", exc)
            return
        thread = ctx.thread(channel, thread_ts)
        sessions = ctx.surface.sessions
        record = ctx.run_in(thread)
        if record is None or not ctx.hub.query.is_live(record.run_id):
            if sessions is not None:
                sessions.want(thread, "closed")  # nothing runs there: Slack waits for us to leave processing
            return
        await ctx.note(user)
        who = ctx.hub.query.display(user) if user else "Someone"
        result = await ctx.hub.submit(Interrupt(record.run_id, STOPPED_TEXT.format(who=who)), user or record.owner)
        if result.ok and sessions is not None:
            sessions.want(thread, "active")
        elif user:
            await ctx.show(result, channel, user, thread_ts)

    async def other_event(event: dict[str, Any]) -> None:
        log.debug("event %r not used", event.get("type"))

    app.event("message")(on_message)
    app.event("app_mention")(on_mention)
    app.event("agent_session_stopped")(on_session_stopped)
    app.event(re.compile(r".*"))(other_event)  # acked and dropped, not "unhandled"


def _mentions(ctx: SlackContext, text: str) -> bool:
    return bool(ctx.bot_user_id) and f"<@{ctx.bot_user_id}" in text


async def attach_shared(ctx: SlackContext, thread: ThreadRef, user: str, text: str, ts: str,
                        shared: list[SharedFile]) -> IntentResult | None:
    """A person's message with files in `thread`: fetched, then handed to the hub (None: no run there)."""
    run_id = ctx.hub.query.run_in(thread)
    if run_id is None or ctx.files is None:
        return None
    limit = ctx.hub.query.upload_limits(run_id, thread).max_file_bytes
    incoming = [await ctx.files.fetch(f, limit) for f in shared]
    return await ctx.hub.submit(Attach(run_id, tuple(incoming), text, origin=ts), user, where=thread)
