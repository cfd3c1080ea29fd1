"""SlackContext: what every Slack listener shares — the hub, the surface, the app's client, who the
bot is, people's names — and the one flow they share, starting a run.

Starting in a channel: check who may start (so a refused person leaves no trace in the channel),
post the status card as the channel's root message, record it as the thread's "status" message,
and start the run in the thread that root opens. If the hub refuses after all (run limit, busy
workspace), the root is deleted again and the refusal reaches the person alone.

Following a run (`/flower follow <run id>`) is the same dance: a root message opens a new thread
of the channel, saved as that thread's status message, and the hub mirrors the run there (its
status card takes the root over). Slack delivers no slash command typed in a thread, so
`/flower unfollow <run id>` in the channel ends that run's mirror threads in the channel.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.hub import Follow, Hub, IntentResult, Resume, RunOptions, Start, Steer, Unfollow
from adapters.lru import LRU
from adapters.platform import SLACK, OutMessage, SurfaceError, ThreadRef
from adapters.slack.errors import is_code
from adapters.slack.files import SlackFiles
from adapters.slack.surface import SlackSurface
from adapters.state import RunRecord
from adapters.view import fmt as _fmt
from adapters.view.status import STATUS_KEY

__all__ = ["NOT_IN_CHANNEL", "PLATFORM", "SlackContext", "usage"]

log = logging.getLogger(__name__)

PLATFORM = "slack"
DIED = "died"  # the stored status of a run the bot's restart left asleep
NOT_IN_CHANNEL = "I am not in this channel yet: invite me first (`/invite @flower`), then try again."
NAME_LOOKUP_S = 3.0  # users.info is waited for this long at most; the card then shows the user id


def usage(unknown: str = "") -> str:
    head = f"I don't know `{unknown}`. " if unknown else ""
    return (f"{head}Usage: `/flower <task>` starts a run in this channel · `/flower status` · `/flower runs` · "
            "`/flower follow <run id>` · `/flower unfollow <run id>` · `/flower resume <run id> [words]` · "
            "`/flower plan <task>` plans first · "
            "`/flower model <name> [run id]` · `/flower effort <level> [run id]` · "
            "`/flower every weekday at 9:00 <task>` · `/flower routines` · `/flower help` · "
            "`/stop [message]` interrupts your run here.")


class SlackContext:
    def __init__(self, surface: SlackSurface, client: AsyncWebClient) -> None:
        self.surface, self.client = surface, client
        self._hub: Hub | None = None
        self.bot_user_id = ""
        self.team_url = ""  # the workspace's address (auth.test), for links to threads ("" until connected)
        self.options: RunOptions | None = None  # per-run options every Slack start gets (None: the bot's)
        self.files: SlackFiles | None = None  # downloads files people share (set by the front end)
        self._looked_up: LRU[str, bool] = LRU(10_000)
        self._zones: LRU[str, str] = LRU(10_000)
        self._lookups: set[asyncio.Task[None]] = set()  # users.info in the background (held until done)

    # ---- wiring -------------------------------------------------------------------------------------
    def attach(self, hub: Hub) -> None:
        self._hub = hub
        hub.hooks.open_threads(PLATFORM, self.open_thread)
        self.surface.footer = self.footer
        if self.surface.sessions is not None:
            self.surface.sessions.describe = self.describe

    @property
    def hub(self) -> Hub:
        if self._hub is None:
            raise RuntimeError("the Slack context is not attached to a hub yet")
        return self._hub

    def seen(self, key: str) -> bool:
        """Dedupe an inbound delivery (True: handled before, within the store's TTL)."""
        return self._hub is not None and self._hub.hooks.seen(key)

    # ---- threads and runs -----------------------------------------------------------------------------
    @staticmethod
    def thread(channel: str, thread_ts: str = "") -> ThreadRef:
        return ThreadRef(PLATFORM, channel, thread_ts)

    def run_in(self, thread: ThreadRef) -> RunRecord | None:
        """The run this thread shows (its own, or one it follows)."""
        run_id = self.hub.query.run_in(thread)
        return self.hub.query.run(run_id) if run_id else None

    def answers_here(self, thread: ThreadRef) -> bool:
        """A person's message in this thread is for a run: one going, one asleep since a restart (its cards
        still answer), or one that has ended (the words start its next round). Only a run that died with the
        bot leaves its thread to people: its Wake button brings it back."""
        record = self.run_in(thread)
        return record is not None and (self.hub.query.is_live(record.run_id) or record.status != DIED)

    def footer(self, thread: ThreadRef) -> str:
        record = self.run_in(thread)
        if record is None:
            return ""
        return f"Started by {self.hub.query.display(record.owner)} · run {record.run_id}"

    def card_kind(self, run_id: str, card_id: str) -> str:
        """The kind of an open card ("" a question, "approval", "plan"…; "" when it is not open)."""
        return next((c.kind for c in self.hub.query.open_cards(run_id) if c.card_id == card_id), "")

    def describe(self, thread: ThreadRef) -> tuple[str, str] | None:
        record = self.run_in(thread)
        return (_fmt.one_line(record.task, SLACK.session_title_max), record.owner) if record is not None else None

    # ---- people ---------------------------------------------------------------------------------------
    async def note(self, user: str, name: str = "", *, wait: bool = True) -> None:
        """Note who `user` is: the display name Slack shows (users.info, once per person), with the handle a
        payload carried standing in until then and when the lookup fails. `wait=False`: look it up in the
        background (a click that opens a form must not spend its trigger's 3 seconds on it)."""
        if not user or self._looked_up.get(user):  # known: a payload's handle must not undo the display name
            return
        if name:
            self.hub.hooks.note(user, name)
        self._looked_up.put(user, True)
        if wait:
            await self._look_up(user)
        else:
            task = asyncio.create_task(self._look_up(user), name=f"users.info {user}")
            self._lookups.add(task)
            task.add_done_callback(self._lookups.discard)

    async def _look_up(self, user: str) -> None:
        try:
            resp = await asyncio.wait_for(self.client.users_info(user=user), NAME_LOOKUP_S)
        except Exception as exc:  # no scope, no network: the handle (or the id) stands in for the name
            log.info("users.info for %s: %r", user, exc)
            return
        info: Any = resp.get("user") or {}
        profile = info.get("profile") or {}
        display = profile.get("display_name") or profile.get("real_name") or info.get("real_name") or info.get("name")
        if display:
            self.hub.hooks.note(user, str(display))

    async def zone(self, user: str) -> str:
        """The person's time zone as Slack knows it (users.info `tz`), "" when it cannot say."""
        known = self._zones.get(user)
        if known is not None:
            return known
        try:
            resp = await asyncio.wait_for(self.client.users_info(user=user), NAME_LOOKUP_S)
        except Exception as exc:  # no scope, no network: the bot's zone stands in
            log.info("users.info (tz) for %s: %r", user, exc)
            return ""
        info: Any = resp.get("user") or {}
        tz = info.get("tz")
        found = tz if isinstance(tz, str) else ""
        self._zones.put(user, found)
        return found

    # ---- routines ----------------------------------------------------------------------------------------
    async def open_thread(self, channel: str, card: OutMessage) -> ThreadRef:
        """A routine's run (hub.hooks.open_threads): its first status card as a new root of `channel`, the
        thread that root opens, and the root remembered as the run's status message (later edits edit it)."""
        root = await self.surface.post_root(channel, card)
        thread = self.thread(channel, root)
        self.hub.hooks.remember_message(thread, card.key, root)
        return thread

    # ---- telling people ---------------------------------------------------------------------------------
    async def tell(self, channel: str, user: str, text: str, thread_ts: str = "") -> None:
        """An ephemeral line to one person; never raises."""
        if not channel or not user:
            log.warning("nowhere to tell %r: %s", user, text)
            return
        try:
            await self.surface.notify(self.thread(channel, thread_ts), user, text)
        except SurfaceError as exc:
            log.warning("could not tell %s in %s: %s", user, channel, exc)

    async def show(self, result: IntentResult, channel: str, user: str, thread_ts: str = "", *,
                   quiet_when_ok: bool = True) -> None:
        """Show an intent's outcome to the actor, as the hub's result says (`IntentResult.to_show`): a refusal
        the hub did not tell itself, a late click ("already settled (answered by …)", "this run has ended"),
        every time, and a success unless the thread itself shows it (`quiet_when_ok`)."""
        text = result.to_show(quiet_when_ok=quiet_when_ok)
        if text is not None:
            await self.tell(channel, user, text, thread_ts)

    def run_options(self, options: dict[str, float] | None, approve: str = "", *, model: str = "",
                    effort: str = "", plan: bool = False) -> RunOptions | None:
        """What the person asked for on the command line (budget_usd, timeout_s, max_asks; `approve`: the tools
        to ask about, "bash,edits"; `model`, `effort`; `plan`: plan first) over the context's own defaults
        (None: the bot's)."""
        if not options and not approve and not model and not effort and not plan:
            return self.options
        base = self.options or RunOptions()
        options = options or {}
        asks = options.get("max_asks")
        return replace(base, budget_usd=options.get("budget_usd", base.budget_usd),
                       timeout_s=options.get("timeout_s", base.timeout_s),
                       max_asks=int(asks) if asks is not None else base.max_asks,
                       approve=RunOptions.approve_from(approve) if approve else base.approve,
                       model=model or base.model, effort=effort.lower() or base.effort,
                       plan=True if plan else base.plan)

    # ---- starting a run -----------------------------------------------------------------------------------
    async def start_run(self, task: str, channel: str, user: str, *, thread_ts: str = "",
                        options: dict[str, float] | None = None, approve: str = "", model: str = "",
                        effort: str = "", plan: bool = False) -> IntentResult:
        """`options`: what the person asked for on the command line (budget_usd, timeout_s, max_asks),
        over the context's own defaults; `approve`: the tools to ask about ("bash,edits"); `model`, `effort`;
        `plan`: plan first."""
        hub = self.hub
        run_options = self.run_options(options, approve, model=model, effort=effort, plan=plan)
        task = task.strip()
        if not task:
            return IntentResult(False, usage())
        decision = hub.query.may(user, "start", channel=f"{PLATFORM}:{channel}")  # before a root is posted
        if not decision:
            await self.tell(channel, user, decision.reason, thread_ts)
            return IntentResult(False, decision.reason)
        start = Start(task, run_options)
        if thread_ts:
            return await hub.submit(start, user, where=self.thread(channel, thread_ts))
        card = OutMessage(STATUS_KEY, "status", f"Task: {_fmt.one_line(task, 200)}", title="⏳ Starting",
                          fields=[("Started by", hub.query.display(user))])
        return await self._under_new_root(channel, card, lambda thread: hub.submit(start, user, where=thread))

    async def _under_new_root(self, channel: str, card: OutMessage,
                              act: Callable[[ThreadRef], Awaitable[IntentResult]], run_id: str = "") -> IntentResult:
        """Post `card` as a new root in `channel`, let `act` bind its thread (a start, a follow) while
        the root is still provisional, and remove the root again when the hub refuses."""
        try:
            root = await self.surface.post_root(channel, card)
        except SurfaceError as exc:
            if is_code(exc, "not_in_channel", "channel_not_found"):
                return IntentResult(False, NOT_IN_CHANNEL, run_id)
            log.warning("could not post a new root in %s: %s", channel, exc)
            return IntentResult(False, f"Could not post in this channel ({exc}); try again in a moment.", run_id)
        thread = self.thread(channel, root)
        self.hub.hooks.remember_message(thread, STATUS_KEY, root)
        self.surface.provisional(thread, True)
        try:
            result = await act(thread)
        finally:
            self.surface.provisional(thread, False)
        if not result.ok:
            try:
                await self.surface.delete(channel, root)
            except SurfaceError as exc:
                log.warning("could not remove the root of a refused %s in %s: %s", card.title, channel, exc)
        return result

    def thread_link(self, thread: ThreadRef) -> str:
        """A mrkdwn link to a thread's root message (Slack opens the thread), or "" before auth.test said where
        the workspace is."""
        if not self.team_url or not thread.thread:
            return ""
        return f"<{self.team_url.rstrip('/')}/archives/{thread.channel}/p{thread.thread.replace('.', '')}|thread>"

    # ---- following a run elsewhere ------------------------------------------------------------------------
    async def steer_run(self, what: str, value: str, channel: str, user: str, *, run_id: str = "") -> IntentResult:
        """`/flower model <name> [run id]` / `/flower effort <level> [run id]` (`what`: "model" or "effort")."""
        meant = self.hub.query.run_meant(user, platform=PLATFORM, channel=channel, run_id=run_id)
        if isinstance(meant, str):
            return IntentResult(False, meant)
        steer = Steer(meant.run_id, model=value) if what == "model" else Steer(meant.run_id, effort=value)
        return await self.hub.submit(steer, user)

    async def follow_run(self, run_id: str, channel: str, user: str) -> IntentResult:
        """Mirror a live run into a new thread of `channel`. Checked first, so a refused person
        leaves no root behind; a refusal the hub still makes removes the root again."""
        hub = self.hub
        record = hub.query.run(run_id)
        if record is None:
            return IntentResult(False, f"No run {run_id}. `/flower runs` lists the runs you can see.")
        may = hub.query.followable(run_id, user)
        if not may.ok:
            return may
        card = OutMessage(STATUS_KEY, "status", f"Task: {_fmt.one_line(record.task, 200)}",
                          title=f"👀 Following run {run_id}", fields=[("Started by", hub.query.display(record.owner))])
        return await self._under_new_root(channel, card, lambda thread: hub.submit(Follow(run_id), user, where=thread),
                                          run_id)

    async def resume_run(self, run_id: str, channel: str, user: str, words: str) -> IntentResult:
        """`/flower resume`: show the run in a new thread of `channel` and, with words, continue it there
        (a `Resume`). Checked first, as a follow is, so a refusal leaves no root behind."""
        hub = self.hub
        record = hub.query.run(run_id)
        if record is None:
            return IntentResult(False, f"No run {run_id}. `/flower runs all` lists the runs you can resume.")
        may = hub.query.resumable(run_id, user)
        if not may.ok:
            return may
        card = OutMessage(STATUS_KEY, "status", f"Task: {_fmt.one_line(record.task, 200)}",
                          title=f"↩️ Resuming run {run_id}", fields=[("Started by", hub.query.display(record.owner))])
        return await self._under_new_root(channel, card, lambda thread: hub.submit(Resume(run_id, words), user,
                                                                                 where=thread),
                                          run_id)

    async def unfollow_run(self, run_id: str, channel: str, user: str) -> IntentResult:
        """End every thread of `channel` that follows `run_id` (its own thread is not a mirror)."""
        hub = self.hub
        threads = [t for t in hub.query.followers(run_id) if t.platform == PLATFORM and t.channel == channel]
        if not threads:
            return IntentResult(False, f"No thread of this channel follows run {run_id}.", run_id)
        result = IntentResult(False, "", run_id)
        for thread in threads:
            result = await hub.submit(Unfollow(), user, where=thread)
            if not result.ok:
                return result
        return result
