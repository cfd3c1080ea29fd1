"""`/flower routine add|list|pause|resume|delete|run` — runs that start themselves, in this channel.

A routine belongs to the text channel it was made in (from a thread: that thread's channel). When it
fires, the hub asks this bridge for a thread (`open_thread`, given to `hub.hooks.open_threads`): a
starter message in the channel, which the status card then edits, and a public thread under it where
the run speaks — as `/flower run` does. `list` shows the channel's routines, the first five with
Pause/Resume, Run now and Delete buttons (ids: the codec's rt* verbs, routed by the hub's door). Discord
tells the bot no time zone of a person: a routine is read in `timezone:` or else the bot's zone.
"""

from __future__ import annotations

from typing import Any

import discord
from discord import app_commands

from adapters.discord_bridge.context import PLATFORM, DiscordContext
from adapters.discord_bridge.render import ActionButton, render
from adapters.discord_bridge.reply import Reply
from adapters.hub import AddRoutine, RoutineAction, RoutineInfo, RoutineVerb, RunOptions
from adapters.ids import encode
from adapters.platform import OutMessage, ThreadRef
from adapters.platform.limits import DISCORD
from adapters.view import fmt

__all__ = ["RoutineCommands", "open_thread"]

TEXT_MAX, THREAD_TITLE_MAX = DISCORD.command_text_max, DISCORD.thread_title_max
LISTED = 15  # routines a list names; the first five get a row of buttons (Discord: 5 rows)
# What `/flower run`, `/flower plan` and `/flower routine add` say about `plan`.
PLAN_OPTION = "Plan first: the agent changes nothing until you approve its plan"
SCHEDULES = ("`every weekday at 9:00`, `every monday at 8:30`, `every 2 hours`, `0 9 * * 1-5`, once: `at 22:00`, "
             "`at 2026-12-24 09:00`, `in 30 minutes`")


class RoutineCommands(app_commands.Group):
    def __init__(self, ctx: DiscordContext, *, parent: app_commands.Group) -> None:
        super().__init__(name="routine", description="Runs that start themselves in this channel", parent=parent)
        self.ctx = ctx

    def _channel(self, interaction: discord.Interaction[Any]) -> str | None:
        """The text channel a routine command is about (a thread's parent), None elsewhere."""
        channel = interaction.channel
        if isinstance(channel, discord.Thread) and channel.parent_id:
            return str(channel.parent_id)
        if isinstance(channel, discord.TextChannel):
            return str(channel.id)
        return None

    @app_commands.command(name="add", description="A run that starts by itself on a schedule, here")
    @app_commands.describe(schedule="every weekday at 9:00 · every 2 hours · 0 9 * * 1-5 · at 22:00 · in 30 minutes",
                           task="What the agent should do each time", name="A short name (cards say it)",
                           timezone="An IANA zone such as Europe/Berlin (default: the bot's)",
                           overlap="While its previous run is live: skip (default) or queue",
                           catch_up="Fire once at start for what the bot missed while down (default: yes)",
                           plan=PLAN_OPTION)
    @app_commands.choices(overlap=[app_commands.Choice(name="skip", value="skip"),
                                   app_commands.Choice(name="queue", value="queue")])
    async def add(self, interaction: discord.Interaction[Any], schedule: app_commands.Range[str, 1, 200],
                  task: app_commands.Range[str, 1, TEXT_MAX], name: app_commands.Range[str, 1, 80] | None = None,
                  timezone: app_commands.Range[str, 1, 64] | None = None, overlap: str = "skip",
                  catch_up: bool = True, plan: bool = False) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            channel = self._channel(interaction)
            if channel is None:
                await reply.say("Make routines in a text channel: each of its runs gets a thread there.")
                return
            options = RunOptions(plan=True) if plan else None  # each firing plans first, its card to the owner
            intent = AddRoutine(task, schedule, timezone or "", name or "", options, overlap, catch_up)
            result = await self.ctx.hub.submit(intent, user, where=ThreadRef(PLATFORM, channel))
            await self.ctx.show(reply, result)

    @app_commands.command(name="list", description="This channel's routines, with their buttons")
    async def list_(self, interaction: discord.Interaction[Any]) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            channel = self._channel(interaction)
            found = self.ctx.hub.query.routines(platform=PLATFORM, channel=channel) if channel else []
            if not found:
                await reply.say(f"No routines in this channel. `/flower routine add` makes one: {SCHEDULES}.")
                return
            view = discord.ui.View(timeout=None)
            for row, info in enumerate(found[:DISCORD.buttons_max]):
                r = info.routine
                toggle = ("rtr", "Resume") if r.paused else ("rtp", "Pause")
                for verb, label, style in ((*toggle, discord.ButtonStyle.secondary),
                                           ("rtn", "Run now", discord.ButtonStyle.primary),
                                           ("rtd", "Delete", discord.ButtonStyle.danger)):
                    button = ActionButton(encode(verb, r.routine_id), f"{label} {r.routine_id}", style)
                    button.item.row = row  # one row per routine
                    view.add_item(button)
            more = len(found) - LISTED
            lines = [_line(self.ctx, i) for i in found[:LISTED]] + ([f"…and {more} more."] if more > 0 else [])
            await reply.say("\n".join(lines), view=view)

    async def _act(self, interaction: discord.Interaction[Any], routine_id: str, verb: RoutineVerb) -> None:
        reply = Reply(interaction)
        reply.ack(thinking=True)
        async with reply.active():
            user = self.ctx.note(interaction.user)
            await self.ctx.show(reply, await self.ctx.hub.submit(RoutineAction(routine_id.strip(), verb), user))

    @app_commands.command(name="pause", description="Stop a routine firing until it is resumed")
    @app_commands.rename(routine_id="id")
    @app_commands.describe(routine_id="The routine's id (`/flower routine list`)")
    async def pause(self, interaction: discord.Interaction[Any], routine_id: app_commands.Range[str, 1, 64]) -> None:
        await self._act(interaction, routine_id, "pause")

    @app_commands.command(name="resume", description="Let a paused routine fire again (from now on)")
    @app_commands.rename(routine_id="id")
    @app_commands.describe(routine_id="The routine's id (`/flower routine list`)")
    async def resume(self, interaction: discord.Interaction[Any], routine_id: app_commands.Range[str, 1, 64]) -> None:
        await self._act(interaction, routine_id, "resume")

    @app_commands.command(name="delete", description="Delete a routine (its runs stay)")
    @app_commands.rename(routine_id="id")
    @app_commands.describe(routine_id="The routine's id (`/flower routine list`)")
    async def delete(self, interaction: discord.Interaction[Any], routine_id: app_commands.Range[str, 1, 64]) -> None:
        await self._act(interaction, routine_id, "delete")

    @app_commands.command(name="run", description="Run a routine now (its schedule stays)")
    @app_commands.rename(routine_id="id")
    @app_commands.describe(routine_id="The routine's id (`/flower routine list`)")
    async def run(self, interaction: discord.Interaction[Any], routine_id: app_commands.Range[str, 1, 64]) -> None:
        await self._act(interaction, routine_id, "run")


def _line(ctx: DiscordContext, info: RoutineInfo) -> str:
    r = info.routine
    return (f"⏰ **{r.name}** `{r.routine_id}` — {info.said} — {info.state}{info.last_run} — "
            f"{fmt.one_line(r.task, 80)} (by {ctx.hub.query.display(r.owner)})")


async def open_thread(client: discord.Client, channel: str, card: OutMessage) -> ThreadRef:
    """A routine's run gets its thread (hub.hooks.open_threads): the card as a starter message in the text
    channel (the status card edits it later) and a public thread under it."""
    found = client.get_channel(int(channel)) or await client.fetch_channel(int(channel))
    if not isinstance(found, discord.TextChannel):
        raise ValueError(f"channel {channel} is not a text channel")
    kw = render(card).send_kwargs()
    kw.pop("view", None)  # the status card's buttons come with its first edit
    starter = await found.send(**kw)
    name = fmt.one_line(card.title or card.text, THREAD_TITLE_MAX)
    thread = await starter.create_thread(name=name, auto_archive_duration=1440)
    return ThreadRef(PLATFORM, channel, str(thread.id))
