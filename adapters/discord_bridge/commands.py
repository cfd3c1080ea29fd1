"""`/flower` — run, plan, stop, end, status, runs, follow, unfollow, resume, wake, model, effort, help, and the
`routine` group (routines.py) — as a discord.py `app_commands.Group`.

Every command acknowledges at once (an ephemeral "thinking…" placeholder, well inside Discord's
3 seconds), does its work, then replaces the placeholder with its answer, which only the caller
sees. `/flower run` posts the run's starter message in the text channel — it becomes the status
card — and opens a public thread from it, where the run speaks. `/flower follow run:<id>` does the
same for a run going elsewhere (another channel, Slack, the web page): the new thread mirrors it, and
`/flower unfollow` inside that thread ends the mirror. `/flower resume run:<id> [text]` opens such a
thread for a run that is live or has ended and, with text, continues it there (its next round).
"""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands

from adapters.discord_bridge.context import PLATFORM, DiscordContext
from adapters.discord_bridge.render import NO_MENTIONS, SUBAGENT_WARNING, ActionButton
from adapters.discord_bridge.reply import Reply
from adapters.discord_bridge.routines import PLAN_OPTION, SCHEDULES, RoutineCommands
from adapters.hub import (
    EFFORTS,
    THREAD_HELP,
    Follow,
    IntentResult,
    Interrupt,
    Resume,
    RunOptions,
    Start,
    Steer,
    Stop,
    Unfollow,
    Wake,
)
from adapters.ids import encode
from adapters.platform import ThreadRef
from adapters.platform.limits import DISCORD
from adapters.state import RunRecord
from adapters.view import fmt

__all__ = ["HELP", "FlowerCommands"]

log = logging.getLogger(__name__)

# Plain ints: discord.py reads the Range bounds into the registered command (manifest/discord-commands.json).
TEXT_MAX, THREAD_TITLE_MAX = DISCORD.command_text_max, DISCORD.thread_title_max
ENDED_SHOWN = 10  # `/flower runs all:True`: the caller's newest ended runs
EFFORT_CHOICES = [app_commands.Choice(name=e, value=e) for e in EFFORTS]
# What `/flower run` and `/flower plan` say about their options (Discord shows it under each one).
RUN_OPTIONS = {"task": "What the agent should do", "timeout": "Seconds a question waits for an answer (0 = never wait)",
               "asks": "How many questions it may ask (0 = none)", "budget": "Cost cap in US dollars",
               "approve": "Tools to ask about first: bash, edits, write, web, all, or rules like Bash(git push:*)",
               "model": "The model, e.g. claude-opus-4-6 (default: the bot's)",
               "effort": "How hard the model thinks (default: the bot's)"}

HELP = "\n".join([
    "**flower** runs a long agent task and follows it in a thread.",
    "• `/flower run task:<what to do>` — starts a run; its status card is posted here and a thread opens under it. "
    "Options: `timeout` (seconds a question waits; 0 = never wait), `asks` (question quota), `budget` (USD cap), "
    "`model`, `effort`, `plan`.",
    "• `/flower plan task:<what to do>` (or `/flower run … plan:True`) starts a run that plans first: the agent looks "
    "around, changes nothing and presents its plan on a card — **Approve and go**, **Approve, ask before edits** (its "
    "edits and commands then ask first) or **Keep planning…** with your words (it presents a new plan).",
    "• `/flower model name:<model>` and `/flower effort level:<level>` in a run's thread change its model or effort "
    "from its next turn (elsewhere: add `run:<id>`, or it is your one live run in this channel).",
    *(f"• {line}" for line in THREAD_HELP),
    "• On Discord you may also **reply** to a question card to answer it in words.",
    "• `/flower stop [message]` in the thread interrupts the agent (it resumes the same session with your words; a "
    "subagent in flight loses its half-done work). Outside a thread it lists your runs with Stop buttons.",
    "• `/flower follow run:<id>` shows a run going elsewhere (another channel, Slack, the web page) in a new thread "
    "here, where you can answer it too; `/flower unfollow` in that thread ends the mirror.",
    "• `/flower runs all:True` lists your ended runs too; `/flower resume run:<id> text:<what next>` shows one in a "
    "new thread here and, with text, continues it there.",
    "• `/flower routine add schedule:<when> task:<what>` makes a routine: its runs start by themselves in this "
    f"channel, each in a thread of its own. Schedules: {SCHEDULES}. `/flower routine list` shows them with "
    "Pause/Resume, Run now and Delete buttons; also `routine pause|resume|run|delete id:<id>`.",
    "• `/flower end` ends the run for good · `/flower status` · `/flower runs` · `/flower help`",
])


@app_commands.guild_only()
class FlowerCommands(app_commands.Group):
    def __init__(self, ctx: DiscordContext) -> None:
        super().__init__(name="flower", description="Long-horizon agent runs, each followed in a thread")
        self.ctx = ctx
        RoutineCommands(ctx, parent=self)  # `/flower routine …` (routines.py)

    @app_commands.command(name="run", description="Start a run; it speaks in a new thread under its status card")
    @app_commands.describe(**RUN_OPTIONS, plan=PLAN_OPTION)
    @app_commands.choices(effort=EFFORT_CHOICES)
    async def run(self, interaction: discord.Interaction[Any], task: app_commands.Range[str, 1, TEXT_MAX],
                  timeout: app_commands.Range[float, 0, 604800] | None = None,
                  asks: app_commands.Range[int, 0, 1000] | None = None,
                  budget: app_commands.Range[float, 0, 10000] | None = None,
                  approve: app_commands.Range[str, 1, 500] | None = None,
                  model: app_commands.Range[str, 1, 100] | None = None,
                  effort: app_commands.Choice[str] | None = None, plan: bool | None = None) -> None:
        await self._begin(interaction, task, _options(timeout, asks, budget, approve, model, effort, plan=bool(plan)))

    # `/flower plan task:…` is `/flower run task:… plan:True` (the word people look for), with run's other options.
    @app_commands.command(name="plan", description="Start a run that plans first: nothing changes before you "
                          "approve its plan")
    @app_commands.describe(**RUN_OPTIONS)
    @app_commands.choices(effort=EFFORT_CHOICES)
    async def plan(self, interaction: discord.Interaction[Any], task: app_commands.Range[str, 1, TEXT_MAX],
                   timeout: app_commands.Range[float, 0, 604800] | None = None,
                   asks: app_commands.Range[int, 0, 1000] | None = None,
                   budget: app_commands.Range[float, 0, 10000] | None = None,
                   approve: app_commands.Range[str, 1, 500] | None = None,
                   model: app_commands.Range[str, 1, 100] | None = None,
                   effort: app_commands.Choice[str] | None = None) -> None:
        await self._begin(interaction, task, _options(timeout, asks, budget, approve, model, effort, plan=True))

    async def _begin(self, interaction: discord.Interaction[Any], task: str, options: RunOptions) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            await self._start(reply, interaction, task, options)

    async def _start(self, reply: Reply, interaction: discord.Interaction[Any], task: str,
                     options: RunOptions) -> None:
        hub, channel = self.ctx.hub, interaction.channel
        user = self.ctx.note(interaction.user)
        if not isinstance(channel, discord.TextChannel):
            await reply.say("Start runs from a text channel: each run gets a thread of its own there.")
            return
        if not task.strip():
            await reply.say("Say what the run should do, e.g. `/flower run task:add a --json flag to the CLI`.")
            return
        allowed = hub.query.may(user, "start", channel=f"{PLATFORM}:{channel.id}")
        if not allowed:
            await reply.say(f"Not started: {allowed.reason}.")
            return
        if (bad := options.problem()) is not None:  # before a thread is opened for nothing
            await reply.say(f"Not started: {bad}")
            return
        try:
            starter = await channel.send(embed=_starting(task, interaction.user), allowed_mentions=NO_MENTIONS)
            thread = await starter.create_thread(name=fmt.one_line(task, THREAD_TITLE_MAX), auto_archive_duration=1440)
        except discord.HTTPException as exc:
            await reply.say(f"I could not open the run's thread here (Discord said {exc.status}: {exc.text}). "
                            "I need Send Messages, Create Public Threads and Embed Links in this channel.")
            return
        here = ThreadRef(PLATFORM, str(channel.id), str(thread.id))
        result = await hub.submit(Start(task, options), user, where=here)
        await _settle_starter(reply, result, starter, thread,
                              done=f"Started run `{result.run_id}` in {thread.mention}.", refused="✖️ Not started")

    @app_commands.command(name="stop", description="Interrupt this thread's run with a message (or list your runs)")
    @app_commands.describe(message="What the agent should hear next (empty: it just stops and goes on)")
    async def stop(self, interaction: discord.Interaction[Any],
                   message: app_commands.Range[str, 1, TEXT_MAX] | None = None) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            _, run_id = self.ctx.run_here(interaction.channel)
            if run_id is not None and self.ctx.hub.query.is_live(run_id):
                result = await self.ctx.hub.submit(Interrupt(run_id, message or ""), user)
                await self.ctx.show(reply, result, suffix=SUBAGENT_WARNING)
            else:
                await self._list_to_stop(reply, user, in_thread=run_id is not None)

    async def _list_to_stop(self, reply: Reply, user: str, *, in_thread: bool) -> None:
        runs = self.ctx.hub.query.runs(user=user, platform=PLATFORM, live_only=True)[:DISCORD.buttons_max]
        head = "This thread's run is not going. " if in_thread else ""
        if not runs:
            await reply.say(head + "You have no runs going. Start one with `/flower run`.")
            return
        view = discord.ui.View(timeout=None)
        for r in runs:
            view.add_item(ActionButton(encode("stop", r.run_id), f"Stop {r.run_id}", discord.ButtonStyle.danger))
        lines = [f"{head}Your runs going — a Stop button opens the stop form:"]
        lines += [f"• `{r.run_id}` <#{r.thread.thread}> — {fmt.one_line(r.task, 80)}" for r in runs]
        await reply.say("\n".join(lines), view=view)

    @app_commands.command(name="end", description="End this thread's run for good")
    async def end(self, interaction: discord.Interaction[Any]) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            _, run_id = self.ctx.run_here(interaction.channel)
            if run_id is None:
                await reply.say("Use `/flower end` inside a run's thread (or the Stop button on its status card).")
            else:
                await self.ctx.show(reply, await self.ctx.hub.submit(Stop(run_id), user))

    @app_commands.command(name="model", description="Change a run's model from its next turn")
    @app_commands.describe(name="The model, e.g. claude-sonnet-4-6",
                           run="The run's id (default: this thread's run, or your one live run in this channel)")
    async def model(self, interaction: discord.Interaction[Any], name: app_commands.Range[str, 1, 100],
                    run: app_commands.Range[str, 1, 64] | None = None) -> None:
        await self._steer(interaction, run, model=name.strip())

    @app_commands.command(name="effort", description="Change how hard a run's model thinks, from its next turn")
    @app_commands.describe(level="low … max",
                           run="The run's id (default: this thread's run, or your one live run in this channel)")
    @app_commands.choices(level=EFFORT_CHOICES)
    async def effort(self, interaction: discord.Interaction[Any], level: app_commands.Choice[str],
                     run: app_commands.Range[str, 1, 64] | None = None) -> None:
        await self._steer(interaction, run, effort=level.value)

    async def _steer(self, interaction: discord.Interaction[Any], run: str | None, *, model: str = "",
                     effort: str = "") -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            thread, here = self.ctx.run_here(interaction.channel)
            run_id = (run or "").strip() or here
            channel = thread.channel if thread is not None else str(getattr(interaction.channel, "id", ""))
            meant = self.ctx.hub.query.run_meant(user, platform=PLATFORM, channel=channel, run_id=run_id or "")
            if isinstance(meant, str):
                await reply.say(meant)
                return
            await self.ctx.show(reply, await self.ctx.hub.submit(Steer(meant.run_id, model, effort), user),
                                quiet_when_ok=False)

    @app_commands.command(name="status", description="This thread's run, or every run going")
    async def status(self, interaction: discord.Interaction[Any]) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            _, run_id = self.ctx.run_here(interaction.channel)
            result = self.ctx.hub.query.status(run_id=run_id) if run_id is not None else self.ctx.hub.query.status()
            await reply.say(result.message)

    @app_commands.command(name="runs", description="The runs of this channel, newest first")
    @app_commands.rename(ended="all")
    @app_commands.describe(ended="Also your runs that have ended, in any channel (a message in one's thread "
                           "continues it)")
    async def runs(self, interaction: discord.Interaction[Any], ended: bool = False) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            thread = self.ctx.thread_of(interaction.channel)
            channel = thread.channel if thread is not None else str(getattr(interaction.channel, "id", ""))
            hub = self.ctx.hub
            runs = hub.query.runs(platform=PLATFORM, channel=channel, live_only=False)[:15]
            text = ("Runs in this channel, newest first:\n" + "\n".join(self._line(r) for r in runs) if runs
                    else "No runs in this channel yet. Start one with `/flower run`.")
            if ended:
                user = self.ctx.note(interaction.user)
                mine = hub.query.runs(user=user, platform=PLATFORM, live_only=False)
                over = [r for r in mine if not hub.query.is_live(r.run_id)]
                text += ("\n**Your runs that have ended** (a message in a run's thread continues it):\n"
                         + "\n".join(self._line(r) for r in over[:ENDED_SHOWN]) if over
                         else "\nNo ended runs of yours.")
            await reply.say(text)

    def _line(self, r: RunRecord) -> str:
        """One run: id, state and round, a link to its thread, the task, its worker."""
        return (f"• `{r.run_id}` {r.status}{f' (round {r.round})' if r.round > 1 else ''} <#{r.thread.thread}> — "
                f"{fmt.one_line(r.task, 70)}"
                + (f" (worker {w})" if (w := self.ctx.hub.query.holder(r.run_id)) else ""))

    @app_commands.command(name="follow", description="Show a run going elsewhere in a new thread here")
    @app_commands.describe(run="The run's id, e.g. r1a2b3c4d (`/flower runs`, or the run's status card)")
    async def follow(self, interaction: discord.Interaction[Any], run: app_commands.Range[str, 1, 64]) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            await self._follow(reply, interaction, run.strip())

    async def _follow(self, reply: Reply, interaction: discord.Interaction[Any], run_id: str) -> None:
        hub, channel = self.ctx.hub, interaction.channel
        user = self.ctx.note(interaction.user)
        if not isinstance(channel, discord.TextChannel):
            await reply.say("Follow runs from a text channel: the mirror gets a thread of its own there.")
            return
        record, may = hub.query.run(run_id), hub.query.followable(run_id, user)  # checked before anything is posted
        if record is None or not may.ok:
            await reply.say(may.message)
            return
        opened = await _open_thread(reply, channel, _following(run_id, record.task), f"{run_id}: {record.task}")
        if opened is None:
            return
        starter, thread = opened
        here = ThreadRef(PLATFORM, str(channel.id), str(thread.id))
        result = await hub.submit(Follow(run_id), user, where=here)
        await _settle_starter(reply, result, starter, thread,
                              done=f"Following run `{run_id}` in {thread.mention}.", refused="✖️ Not following")

    @app_commands.command(name="resume", description="Show a run in a new thread here and, with text, continue it")
    @app_commands.describe(run="The run's id (`/flower runs all:True` lists yours)",
                           text="What the run should do next (empty: only show it here)")
    async def resume(self, interaction: discord.Interaction[Any], run: app_commands.Range[str, 1, 64],
                     text: app_commands.Range[str, 1, TEXT_MAX] | None = None) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            await self._resume(reply, interaction, run.strip(), (text or "").strip())

    async def _resume(self, reply: Reply, interaction: discord.Interaction[Any], run_id: str, text: str) -> None:
        hub, channel = self.ctx.hub, interaction.channel
        user = self.ctx.note(interaction.user)
        if not isinstance(channel, discord.TextChannel):
            await reply.say("Resume runs from a text channel: the run gets a thread of its own there.")
            return
        record, may = hub.query.run(run_id), hub.query.resumable(run_id, user)  # checked before anything is posted
        if record is None or not may.ok:
            await reply.say(may.message)
            return
        opened = await _open_thread(reply, channel, _following(run_id, record.task, title="↩️ Resuming run"),
                                    f"{run_id}: {record.task}")
        if opened is None:
            return
        starter, thread = opened
        here = ThreadRef(PLATFORM, str(channel.id), str(thread.id))
        result = await hub.submit(Resume(run_id, text), user, where=here)
        await _settle_starter(reply, result, starter, thread,
                              done=f"{result.message} {thread.mention}".strip(), refused="✖️ Not resumed")

    @app_commands.command(name="unfollow", description="Stop showing a run in this thread (the run goes on)")
    async def unfollow(self, interaction: discord.Interaction[Any]) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            thread = self.ctx.thread_of(interaction.channel)
            if thread is None:
                await reply.say("Use `/flower unfollow` inside the thread that follows a run.")
                return
            await self.ctx.show(reply, await self.ctx.hub.submit(Unfollow(), user, where=thread))

    @app_commands.command(name="wake", description="Bring back a run that did not come back after a restart")
    @app_commands.describe(run="The run's id (default: this thread's run)")
    async def wake(self, interaction: discord.Interaction[Any],
                   run: app_commands.Range[str, 1, 64] | None = None) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            run_id = run.strip() if run else self.ctx.run_here(interaction.channel)[1]
            if run_id is None:
                await reply.say("Use `/flower wake` inside a run's thread, or name the run: `/flower wake run:<id>`.")
            else:
                await self.ctx.show(reply, await self.ctx.hub.submit(Wake(run_id), user))

    @app_commands.command(name="help", description="How to use flower here")
    async def help(self, interaction: discord.Interaction[Any]) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            await reply.say(HELP)


def _options(timeout: float | None, asks: int | None, budget: float | None, approve: str | None, model: str | None,
             effort: app_commands.Choice[str] | None, *, plan: bool) -> RunOptions:
    """A start's options as `/flower run` and `/flower plan` take them (None: the bot's default)."""
    tools = RunOptions.approve_from(approve) if approve else None
    return RunOptions(timeout, asks, budget, tools, model=model or None, effort=effort.value if effort else None,
                      plan=True if plan else None)


def _following(run_id: str, task: str, *, title: str = "👀 Following run") -> discord.Embed:
    return discord.Embed(title=f"{title} {run_id}", description=f"Task: {fmt.one_line(task, 200)}",
                         colour=0x3498DB)


def _starting(task: str, who: discord.abc.User) -> discord.Embed:
    embed = discord.Embed(title="⏳ Starting", description=f"Task: {fmt.one_line(task, 200)}", colour=0x3498DB)
    embed.set_footer(text=f"started by {who.display_name}")
    return embed


async def _open_thread(reply: Reply, channel: discord.TextChannel, embed: discord.Embed,
                       name: str) -> tuple[discord.Message, discord.Thread] | None:
    """Post the starter embed and open its thread; None (the person told why) when Discord refuses."""
    try:
        starter = await channel.send(embed=embed, allowed_mentions=NO_MENTIONS)
        thread = await starter.create_thread(name=fmt.one_line(name, THREAD_TITLE_MAX), auto_archive_duration=1440)
    except discord.HTTPException as exc:
        await reply.say(f"I could not open a thread here (Discord said {exc.status}: {exc.text}). I need Send "
                        "Messages, Create Public Threads and Embed Links in this channel.")
        return None
    return starter, thread


async def _settle_starter(reply: Reply, result: IntentResult, starter: discord.Message, thread: discord.Thread, *,
                          done: str, refused: str) -> None:
    """After a start or a follow: say so, or, when the hub refused (run limit, busy workspace...), leave
    no starter and thread that look like a run."""
    if result.ok:
        await reply.say(done)
        return
    await reply.say(result.message)
    try:
        await starter.edit(embed=discord.Embed(title=refused, description=result.message),
                           allowed_mentions=NO_MENTIONS)
        await thread.edit(archived=True)
    except discord.HTTPException as exc:
        log.info("could not close the thread of a refused %s: %s", refused, exc)
