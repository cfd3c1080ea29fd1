"""Slash commands: `/flower <task|status|runs [all]|help|follow <run>|unfollow <run>|resume <run> [words]>`,
`/flower <when> <task>` (a routine), `/flower routines` and `/stop [message]`.

Quick answers (help, usage, status, lists) travel in the ack itself, which Slack shows to the caller
alone. Everything else is acked first and answered after through the command's response_url, which
works even where the bot is not (yet) a member of the channel.

Slack does not deliver slash commands typed in threads, so `/stop` works on the channel: it
interrupts the caller's only live run there; with several (or none of their own but others they may
interrupt) it lists them, each with a Stop button opening the stop modal prefilled with the message.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.models.blocks import ActionsBlock, ButtonElement, SectionBlock

from adapters.hub import THREAD_HELP, AddRoutine, Interrupt, Wake
from adapters.ids import encode
from adapters.platform import SLACK
from adapters.slack.context import PLATFORM, SlackContext, usage
from adapters.slack.inbound import PayloadError, parse_flower, text_field
from adapters.slack.render import INTERRUPT_WARNING
from adapters.slack.routines_list import routines_list
from adapters.slack.text import mrkdwn_escape, plain
from adapters.state import RunRecord
from adapters.view import fmt as _fmt

__all__ = ["HELP", "register"]

log = logging.getLogger(__name__)

# Plain text with mrkdwn styling (*bold*, `code`); escaped like every text on its way out.
HELP = (
    "*flower* runs a long agent task in a thread of this channel.\n"
    "• `/flower <task>` (or `@flower <task>`) starts a run: its status card opens a thread, and everything the run "
    "says goes there. Options may come first: `/flower budget=5 timeout=600 asks=3 approve=bash,edits model=<name> "
    "effort=high <task>`.\n"
    "• `/flower plan <task>` starts a run that plans first: the agent looks around, changes nothing and presents "
    "its plan on a card — *Approve and go*, *Approve, ask before edits* (its edits and commands then ask first) or "
    "*Keep planning…* with your words (it presents a new plan). `plan` may stand among the options: "
    "`/flower plan model=<name> <task>`; a task that begins with the word plan: `/flower start plan …`.\n"
    "• `/flower model <name> [run id]` and `/flower effort <low|medium|high|xhigh|max> [run id]` change your run's "
    "model or effort from its next turn (without a run id: your one live run in this channel).\n"
    + "".join(f"• {line}\n" for line in THREAD_HELP)
    + "• `/stop [message]` interrupts your run here (it resumes with your words); the Stop button on the card can "
    "also end it. The message shortcut *Interrupt this run* works on any message of the run's thread.\n"
    "• `/flower follow <run id>` shows a run (from any channel, Discord or the web page) in a new thread here: "
    "answer its questions here too; `/flower unfollow <run id>` (or the shortcut *Stop following here* in that "
    "thread) ends it.\n"
    "• `/flower wake <run id>` brings back a run that could not come back by itself after a restart.\n"
    "• `/flower runs all` lists your ended runs too; `/flower resume <run id> [what next]` shows one in a new "
    "thread here and, with words, continues it there.\n"
    "• `/flower every weekday at 9:00 <task>` makes a routine: its runs start by themselves in this channel, "
    "each in a thread of its own. Also `every monday at 8:30`, `every 2 hours`, `cron 0 9 * * 1-5`, and once: "
    "`at 22:00`, `at 2026-12-24 09:00`, `in 30 minutes` (in your Slack time zone). `/flower routines` lists "
    "this channel's, with Pause/Resume, Run now and Delete buttons.\n"
    "• `/flower status` · `/flower runs` · `/flower help`"
)

Ack = Callable[..., Awaitable[Any]]


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def flower(ack: Ack, command: dict[str, Any], respond: Any) -> None:
        try:
            user, channel = text_field(command, "user_id"), text_field(command, "channel_id")
            text = text_field(command, "text", required=False)
            name = text_field(command, "user_name", required=False)
        except PayloadError as exc:
            log.warning("/flower payload not understood: %s", exc)
            await ack(text="That command arrived incomplete; please try again.")
            return
        cmd = parse_flower(text)
        if cmd.kind == "help":
            await ack(text=mrkdwn_escape(HELP))
        elif cmd.kind == "usage":
            await ack(text=mrkdwn_escape(usage(cmd.text)))
        elif cmd.kind == "status":
            await ack(text=_status(ctx, channel))
        elif cmd.kind == "runs":
            await ack(text=_runs(ctx, channel, user, ended=cmd.text == "all"))
        elif cmd.kind in ("follow", "unfollow"):
            await ack()
            await ctx.note(user, name)
            mirror = ctx.follow_run if cmd.kind == "follow" else ctx.unfollow_run
            result = await mirror(cmd.text, channel, user)
            if not ctx.surface.told_recently(user, result.message):
                await _reply(respond, ctx, channel, user, result.message)
        elif cmd.kind == "resume":
            await ack()
            await ctx.note(user, name)
            result = await ctx.resume_run(cmd.text, channel, user, cmd.words)
            if not ctx.surface.told_recently(user, result.message):
                await _reply(respond, ctx, channel, user, result.message)
        elif cmd.kind in ("model", "effort"):
            await ack()
            await ctx.note(user, name)
            result = await ctx.steer_run(cmd.kind, cmd.text, channel, user, run_id=cmd.words)
            if not ctx.surface.told_recently(user, result.message):
                await _reply(respond, ctx, channel, user, result.message)
        elif cmd.kind == "routines":
            text, blocks = routines_list(ctx, channel)
            await ack(text=text, blocks=blocks)
        elif cmd.kind == "routine":
            await ack()
            await ctx.note(user, name)
            zone = await ctx.zone(user)
            options = ctx.run_options(cmd.options, cmd.approve, model=cmd.model, effort=cmd.effort, plan=cmd.plan)
            result = await ctx.hub.submit(AddRoutine(cmd.text, cmd.words, zone_hint=zone, options=options), user,
                                          where=ctx.thread(channel))
            if not ctx.surface.told_recently(user, result.message):
                await _reply(respond, ctx, channel, user, result.message)
        elif cmd.kind == "wake":
            await ack()
            await ctx.note(user, name)
            result = await ctx.hub.submit(Wake(cmd.text), user)
            if not ctx.surface.told_recently(user, result.message):
                await _reply(respond, ctx, channel, user, result.message)
        else:
            await ack()
            await ctx.note(user, name)
            result = await ctx.start_run(cmd.text, channel, user, options=cmd.options, approve=cmd.approve,
                                         model=cmd.model, effort=cmd.effort, plan=cmd.plan)
            if not result.ok and not ctx.surface.told_recently(user, result.message):
                await _reply(respond, ctx, channel, user, result.message)

    async def stop(ack: Ack, command: dict[str, Any], respond: Any) -> None:
        try:
            user, channel = text_field(command, "user_id"), text_field(command, "channel_id")
            text = text_field(command, "text", required=False).strip()
            name = text_field(command, "user_name", required=False)
        except PayloadError as exc:
            log.warning("/stop payload not understood: %s", exc)
            await ack(text="That command arrived incomplete; please try again.")
            return
        hub = ctx.hub
        mine = hub.query.runs(user=user, platform=PLATFORM, channel=channel)
        if len(mine) == 1:
            await ack()
            await ctx.note(user, name)
            result = await hub.submit(Interrupt(mine[0].run_id, text), user)
            if result.ok:
                await _reply(respond, ctx, channel, user, result.message, note=INTERRUPT_WARNING)
            elif not ctx.surface.told_recently(user, result.message):
                await _reply(respond, ctx, channel, user, result.message)
            return
        candidates = mine or [r for r in hub.query.runs(platform=PLATFORM, channel=channel)
                              if hub.query.may(user, "send", run_id=r.run_id)]
        if not candidates:
            await ack(text="No live run of yours in this channel. `/flower runs` lists the runs you can see.")
            return
        head = ("You have several runs going here" if mine else "You have no run of your own here; these you may "
                "interrupt") + ": pick one. " + INTERRUPT_WARNING
        await ack(text=head, blocks=_stop_list(head, candidates[:SLACK.stop_list_max], text, ctx))

    app.command("/flower")(flower)
    app.command("/stop")(stop)


async def _reply(respond: Any, ctx: SlackContext, channel: str, user: str, text: str, *, note: str = "") -> None:
    """After the ack: through response_url when the payload had one, else an ephemeral message.
    `note` goes under the text in italics."""
    formatted = mrkdwn_escape(text) + (f"\n_{mrkdwn_escape(note)}_" if note else "")
    try:
        await respond(text=formatted, response_type="ephemeral", replace_original=False)
    except Exception as exc:  # no response_url, or it expired
        log.info("respond failed (%r); telling %s ephemerally", exc, user)
        await ctx.tell(channel, user, f"{text}\n{note}" if note else text)


def _line(ctx: SlackContext, r: RunRecord) -> str:
    state = ctx.hub.query.state(r.run_id)
    if r.round > 1:
        state += f", round {r.round}"
    link = f" ({t})" if r.thread.platform == PLATFORM and (t := ctx.thread_link(r.thread)) else ""
    return (f"• `{r.run_id}` in <#{r.thread.channel}>{link} — {state} — {mrkdwn_escape(_fmt.one_line(r.task, 80))} "
            f"(started by {mrkdwn_escape(ctx.hub.query.display(r.owner))})"
            + (f" · worker `{mrkdwn_escape(w)}`" if (w := ctx.hub.query.holder(r.run_id)) else ""))


def _status(ctx: SlackContext, channel: str) -> str:
    hub = ctx.hub
    live = hub.query.runs(platform=PLATFORM, channel=channel)
    if not live:
        last = hub.query.runs(platform=PLATFORM, channel=channel, live_only=False)[:1]
        tail = f" The last one: {mrkdwn_escape(hub.query.status(run_id=last[0].run_id).message)}" if last else ""
        return f"No run going in this channel.{tail}"
    return "\n".join(mrkdwn_escape(hub.query.status(run_id=r.run_id).message) for r in live)


ENDED_SHOWN = 10  # `/flower runs all`: the caller's newest ended runs


def _runs(ctx: SlackContext, channel: str, user: str, *, ended: bool = False) -> str:
    """Live runs of this channel and the caller's own elsewhere (others' runs in channels the caller
    may not be in are counted, not shown); `ended`: then the caller's own runs that have ended."""
    live = ctx.hub.query.runs(platform=PLATFORM)
    shown = [r for r in live if r.thread.channel == channel or r.owner == user]
    hidden = len(live) - len(shown)
    text = "\n".join(_line(ctx, r) for r in shown) + (f"\n_{hidden} more in other channels._" if hidden else "")
    if not shown:
        text = "No live runs you can see." + (f" ({len(live)} in other channels.)" if live else "")
    if not ended:
        return text
    query = ctx.hub.query
    over = [r for r in query.runs(user=user, platform=PLATFORM, live_only=False) if not query.is_live(r.run_id)]
    if not over:
        return text + "\nNo ended runs of yours."
    return (text + "\n*Your runs that have ended* (a reply in a run's thread continues it):\n"
            + "\n".join(_line(ctx, r) for r in over[:ENDED_SHOWN]))


def _stop_list(head: str, runs: list[RunRecord], message: str, ctx: SlackContext) -> list[Any]:
    blocks: list[Any] = [SectionBlock(text=mrkdwn_escape(head))]
    blocks += [SectionBlock(text=_line(ctx, r)) for r in runs]
    blocks.append(ActionsBlock(elements=[
        ButtonElement(text=plain(f"Stop {r.run_id}: {r.task}", 75), action_id=encode("stop", r.run_id),
                      value=message[:SLACK.button_value_max] or None, style="danger") for r in runs]))
    return blocks
