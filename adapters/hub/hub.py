"""Hub: the chat-agnostic owner of runs. Platforms forward intents; the hub checks who may act,
routes to the live run and answers with an IntentResult (refusals also go to the actor alone
through `Surface.notify`, and change nothing).

Intents: start, answer, decline, send (inbox), interrupt, oracle, stop, status, wake; and
`handle_action` for button ids from `adapters.ids` (deduplicated on the platform's delivery id,
and per question: the first click answers, later ones are told it is settled). Restart handling
(`recover`, waking runs, answers to cards of runs that died with the process) is in wake.py;
what a message or a button means, in routing.py. Runs themselves go through a transport
(adapters/transport): in this process by default, to `flower-worker`s over Redis.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from adapters.access import Access
from adapters.chores import Chores
from adapters.hub import routing as _routing
from adapters.hub import wake as _wake
from adapters.hub.cards import Cards
from adapters.hub.fanout import Fanout, Target
from adapters.hub.mirrors import Mirrors
from adapters.hub.pipe import RunPipe
from adapters.hub.report import status_report
from adapters.hub.results import IntentResult
from adapters.hub.runs import LiveRun, RunOptions
from adapters.outbox import Outbox
from adapters.people import People
from adapters.ratelimit import RateBudget
from adapters.state import RunRecord, StateStore
from adapters.surface import OutMessage, Surface, SurfaceError, ThreadRef
from adapters.transport import LocalTransport, RunFactory, RunPlan, Transport, default_factory
from adapters.transport.engine import EngineKit
from adapters.view import RunView, ViewConfig
from adapters.view import fmt as _fmt
from flower_core import Event

log = logging.getLogger(__name__)


class Hub:
    def __init__(self, surfaces: Surface | Iterable[Surface] | Mapping[str, Surface], store: StateStore, *,
                 root: str | Path = "flower-runs", workspaces: Mapping[str, str | Path] | None = None,
                 factory: RunFactory | None = None, env: Mapping[str, str] | None = None, max_runs: int = 3,
                 timeout_s: float | None = 1800.0, max_asks: int | None = None, view: ViewConfig | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleeper: Callable[[float], Awaitable[object]] = asyncio.sleep,
                 runtime_options: Mapping[str, Any] | None = None, oracle: bool = True,
                 budget_usd: float | None = None, dm_after_s: float | None = 60.0,
                 park_after_s: float | None = 120.0, max_parked: int = 1000,
                 budget_ceilings: Mapping[str, float] | None = None, transport: Transport | None = None,
                 wake_on_start: bool = True) -> None:
        if isinstance(surfaces, Mapping):
            self.surfaces = dict(surfaces)
        else:
            items = [surfaces] if isinstance(surfaces, Surface) else list(surfaces)
            self.surfaces = {s.name: s for s in items}
        self.people = People()
        self.store, self.access = store, Access(store, self.people)
        self.root = Path(root).expanduser().resolve()
        self.workspaces = {k: Path(v).expanduser().resolve() for k, v in (workspaces or {}).items()}
        self.max_runs, self.timeout_s, self.max_asks = max_runs, timeout_s, max_asks
        # A question waiting longer than park_after_s closes its run's CLI (None = never); max_runs counts
        # runs with a CLI, max_parked the parked ones (beyond it, runs keep their CLI while they wait).
        self.park_after_s, self.max_parked = park_after_s, max_parked
        self.budget_usd = budget_usd
        self.wake_on_start = wake_on_start  # at start, live runs of the last process resume by themselves
        # "platform:channel" -> the most a run started there may spend (a starter cannot ask for more)
        self.budget_ceilings = dict(budget_ceilings or {})
        # Cards name people through the registry platforms fill (display names), unless told otherwise.
        view = view or ViewConfig()
        self.view_config = replace(view, who=self.people.display) if view.who is _fmt.plain_who else view
        # Taps see every event of every run as (run id, event), beside the view: e.g. the web's event log.
        self.taps: list[Callable[[str, Event], object]] = []
        self.clock, self.sleeper = clock, sleeper
        self.use_oracle = oracle
        # Where runs go: this process by default; `transport=` hands them to workers (RedisTransport).
        self.transport: Transport = transport or LocalTransport(EngineKit(
            factory=factory or default_factory, env=env, runtime_options=dict(runtime_options or {}),
            park_after_s=park_after_s, may_park=self._may_park, oracle=oracle))
        self.live: dict[str, LiveRun] = {}
        self.mirrors = Mirrors(self, dm_after_s=dm_after_s)
        self.cards = Cards(store, self.live)
        self._budgets: dict[tuple[str, str], RateBudget] = {}
        self._chores = Chores()

    # ---- intents --------------------------------------------------------------------------------
    async def start(self, task: str, thread: ThreadRef, user: str, *,
                    options: RunOptions | None = None) -> IntentResult:
        channel = f"{thread.platform}:{thread.channel}"
        if thread.platform not in self.surfaces:
            return IntentResult(False, f"No surface for platform {thread.platform!r}.")
        decision = self.access.can_start(channel, user)
        if not decision:
            return await self.refuse(thread, user, decision.reason)
        if not task.strip():
            return await self.refuse(thread, user, "Say what the run should do, e.g. `start build me a CLI`.")
        bound = self.store.run_for_thread(thread)
        if bound in self.live:
            return await self.refuse(thread, user, f"Run {bound} is already going in this thread; send it a "
                                     "message or interrupt it instead.", bound)
        if (full := self._over_limit()) is not None:
            return await self.refuse(thread, user, full)
        run_id = "r" + uuid.uuid4().hex[:8]
        workspace, run_dir = self._places(run_id, channel)
        if (busy := self._busy(workspace)) is not None:
            return await self.refuse(thread, user, f"This channel's workspace is busy with run {busy}.", busy)
        options = options or RunOptions()
        if (bad := options.problem()) is not None:
            return await self.refuse(thread, user, bad)
        options, over = options.within(self.budget_ceilings.get(channel), default=self.budget_usd)
        if over is not None:
            return await self.refuse(thread, user, over)
        record = self.store.save_run(RunRecord(run_id, thread, user, task.strip(), "starting", str(workspace),
                                               str(run_dir)))
        self.store.bind_thread(thread, run_id)
        try:
            options.save(run_dir)
            self.launch(record, waking=False)
        except Exception as exc:  # the factory refused (bad task, unreadable workspace...)
            self.store.set_run_status(run_id, "failed")
            return await self.refuse(thread, user, f"Could not start the run: {exc}", run_id)
        if self.transport.remote:
            self._chores.spawn(self._say_if_queued(run_id))
        return IntentResult(True, f"Started run {run_id}.", run_id)

    async def answer(self, run_id: str, card_id: str, text: str, user: str, *,
                     where: ThreadRef | None = None) -> IntentResult:
        """`where`: the thread the answer came from (cards of a mirrored run say where)."""
        return await self._answer(run_id, card_id, text, user, decline=False, where=where)

    async def decline(self, run_id: str, card_id: str, user: str, reason: str = "", *,
                      where: ThreadRef | None = None) -> IntentResult:
        return await self._answer(run_id, card_id, reason, user, decline=True, where=where)

    async def _answer(self, run_id: str, card_id: str, text: str, user: str, *, decline: bool,
                      where: ThreadRef | None) -> IntentResult:
        record, refusal = await self._checked(run_id, user, "answer")
        if record is None:
            return refusal
        live = self.live.get(run_id)
        if live is not None:
            place = self.mirrors.place(where) if where is not None and self.mirrors.spread(live) else ""
            result = await live.answer(card_id, text, user, decline=decline, where=place)
        else:
            result = await _wake.answer_sleeping(self, record, card_id, text, user, decline=decline)
        if not result.ok and not result.duplicate:
            await self.refuse(record.thread, user, result.message, run_id)
        return result

    async def send(self, run_id: str, text: str, user: str, *, origin: str = "",
                   where: ThreadRef | None = None) -> IntentResult:
        """Inbox mail. `origin`: the platform id of the person's own message, so its receipt can be
        shown on it (a reaction) where the platform can; `where`: the thread it was written in (its
        receipt shows there only)."""
        live, refusal = await self._live(run_id, user, "send")
        if live is None:
            return refusal
        return await live.send(text, user, origin=origin, only_in=str(where) if where is not None else "")

    async def interrupt(self, run_id: str, text: str, user: str) -> IntentResult:
        live, refusal = await self._live(run_id, user, "send")
        return await live.interrupt(text, user) if live is not None else refusal

    async def oracle(self, run_id: str, question: str, user: str) -> IntentResult:
        live, refusal = await self._live(run_id, user, "answer")
        if live is None:
            return refusal
        if not question.strip():
            return await self.refuse(live.record.thread, user, "Ask the oracle something.", run_id)
        return live.ask_oracle(question, user)

    async def said(self, thread: ThreadRef, user: str, text: str, *, origin: str = "",
                   reply_to: str = "") -> IntentResult | None:
        """A person's plain message in a thread (see routing.said); None when the thread holds no run."""
        return await _routing.said(self, thread, user, text, origin=origin, reply_to=reply_to)

    def run_in(self, thread: ThreadRef) -> str | None:
        """The run a thread shows: its own, or the one it follows (a live one first)."""
        found = [r for r in (self.store.run_for_thread(thread), self.store.mirrored_run(thread)) if r is not None]
        return next((r for r in found if r in self.live), found[0] if found else None)

    async def follow(self, run_id: str, thread: ThreadRef, user: str) -> IntentResult:
        """Show a live run in one more thread (see mirrors.py)."""
        return await self.mirrors.follow(run_id, thread, user)

    async def unfollow(self, thread: ThreadRef, user: str) -> IntentResult:
        return await self.mirrors.unfollow(thread, user)

    def runs(self, *, user: str | None = None, platform: str | None = None, channel: str | None = None,
             live_only: bool = True) -> list[RunRecord]:
        """Runs by owner and place, newest first; `live_only`: only those running in this process."""
        found = [r for r in self.store.list_runs()
                 if (not live_only or r.run_id in self.live) and (user is None or r.owner == user)
                 and (platform is None or r.thread.platform == platform)
                 and (channel is None or r.thread.channel == channel)]
        return sorted(found, key=lambda r: r.created_at, reverse=True)

    def holder(self, run_id: str) -> str:
        """The worker a live run is on ("" in this process, or not live)."""
        live = self.live.get(run_id)
        return live.holder if live is not None else ""

    async def _live(self, run_id: str, user: str, verb: str) -> tuple[LiveRun | None, IntentResult]:
        """The live run the user may act on, or None and the refusal already shown to them."""
        record, refusal = await self._checked(run_id, user, verb)
        if record is None:
            return None, refusal
        live = self.live.get(run_id)
        if live is None:
            return None, await self.refuse(record.thread, user, self._not_running(record), run_id)
        return live, refusal

    async def stop(self, run_id: str, user: str) -> IntentResult:
        record, refusal = await self._checked(run_id, user, "stop")
        if record is None:
            return refusal
        live = self.live.get(run_id)
        if live is not None and live.cancel("stopped", user):
            return IntentResult(True, f"Stopping run {run_id}.", run_id)
        if record.status in ("died", "parked"):  # asleep since a restart: stopping means "do not wake it"
            self.store.set_run_status(run_id, "stopped")
            return IntentResult(True, f"Run {run_id} will not be woken.", run_id)
        return await self.refuse(record.thread, user, self._not_running(record), run_id)

    async def wake(self, run_id: str, user: str, remark: str = "") -> IntentResult:
        return await _wake.wake(self, run_id, user, remark)

    async def recover(self) -> list[str]:
        """After a restart: report the runs that died with the old process; returns their ids. Parked
        runs did not die: they are brought back, still waiting on their question (see wake.py)."""
        return await _wake.recover(self)

    def status(self, *, thread: ThreadRef | None = None, run_id: str | None = None) -> IntentResult:
        """One run's state (by id, or the run a thread shows), or every live run, parked ones apart."""
        if run_id is None and thread is not None:
            run_id = self.run_in(thread)
        return status_report(self.live, self.store, run_id, running=self.running(), parked=self.parked(),
                             max_runs=None if self.transport.remote else self.max_runs, max_parked=self.max_parked)

    async def handle_action(self, action_id: str, user: str, *, delivery_id: str | None = None,
                            text: str | None = None, where: ThreadRef | None = None) -> IntentResult:
        """A button (or a form submitted after one): see routing.handle_action."""
        return await _routing.handle_action(self, action_id, user, delivery_id=delivery_id, text=text, where=where)

    # ---- lifecycle -------------------------------------------------------------------------------
    async def wait(self, run_id: str) -> LiveRun | None:
        """Wait until a live run has ended and its thread is flushed; the LiveRun (None if not live)."""
        live = self.live.get(run_id)
        if live is not None:
            await live.finished.wait()
        return live

    async def close(self) -> None:
        """The bot is going away: live runs stop quietly, their cards stay open and their status
        stays live in the store, so the next process reports them exactly as after a crash."""
        self.mirrors.close()
        runs = list(self.live.values())
        for live in runs:
            live.cancel("shutdown")
        for live in runs:
            await live.finished.wait()
        await self.transport.close()

    async def open(self) -> None:
        """Connect the transport (a no-op in process); before `recover`."""
        await self.transport.start()

    def launch(self, record: RunRecord, *, waking: bool, remark: str = "", attach: bool = False,
               after: LiveRun | None = None, restoring: bool = False) -> LiveRun:
        """Show a run in its threads and start its run side through the transport (used by start and
        wake); `attach`: the run side is already going on a worker (a takeover, or this front restarted);
        `after`: the LiveRun that showed it until a takeover; `restoring`: its steps so far pass quietly."""
        opts = RunOptions.load(Path(record.run_dir))
        plan = RunPlan(record.task, Path(record.workspace), Path(record.run_dir), waking=waking, remark=remark,
                       timeout_s=self.timeout_s if opts.timeout_s is None else opts.timeout_s,
                       max_asks=self.max_asks if opts.max_asks is None else opts.max_asks,
                       budget_usd=self.budget_usd if opts.budget_usd is None else opts.budget_usd)
        view = RunView(record.run_id, record.task, clock=self.clock, config=self.view_config,
                       epoch=uuid.uuid4().hex[:6])
        home = Target(record.thread, self.outbox(record.thread, on_sent=self.sent_recorder(record.run_id,
                                                                                         record.thread)))
        fanout = Fanout(home)
        for mirror in self.mirrors.targets_for(record):
            fanout.add(Target(mirror.thread, self.outbox(mirror.thread, on_sent=self.sent_recorder(
                record.run_id, mirror.thread)), mirror.scope))
        observers: list[Callable[[Event], object]] = [partial(tap, record.run_id) for tap in self.taps]
        live = LiveRun(record, RunPipe(view, fanout, observers=observers), store=self.store, waking=waking,
                       has_oracle=self.use_oracle, clock=self.clock, on_end=self._ended, on_ask=self._on_ask,
                       on_handover=self._handed_over, ledger=after.ledger if after is not None else None,
                       restoring=restoring)
        side = self.transport.launch(record.run_id, plan, live, attach=attach)  # raises: nothing was shown
        self.live[record.run_id] = live
        live.start(side)
        return live

    def _handed_over(self, old: LiveRun, holder: str, previous: str) -> None:
        """A worker took over a run whose worker went silent: show it afresh, with one notice line."""
        record = self.store.get_run(old.run_id) or old.record
        live = old.successor = self.launch(record, waking=True, attach=True, after=old)
        was = f" (worker {previous} stopped answering)" if previous else ""
        live.pipe.put(live.view.notice(f"🔁 Worker {holder} took the run over{was} and resumes it where it was."))

    def outbox(self, thread: ThreadRef, *, on_sent: Callable[[OutMessage, str], object] | None = None) -> Outbox:
        surface = self.surfaces[thread.platform]
        budget = self._budgets.setdefault((thread.platform, thread.channel), RateBudget(surface.limits, self.clock))
        return Outbox(surface, thread, clock=self.clock, sleeper=self.sleeper, store=self.store, budget=budget,
                      on_sent=on_sent)

    async def refuse(self, thread: ThreadRef, user: str, reason: str, run_id: str = "") -> IntentResult:
        """Tell the actor alone why not; nothing else changes."""
        surface = self.surfaces.get(thread.platform)
        if surface is not None:
            try:
                await surface.notify(thread, user, reason)
            except SurfaceError as exc:
                log.warning("could not notify %s in %s: %r", user, thread, exc)
        return IntentResult(False, reason, run_id)

    async def _say_if_queued(self, run_id: str) -> None:
        """With workers: tell the thread when none has room, so a run that waits is not a mystery."""
        waits = await self.transport.waits(run_id)
        live = self.live.get(run_id)
        if waits and live is not None and not live.holder:
            live.pipe.put(live.view.notice("⏳ Every worker is busy (or none is running): the run starts as soon "
                                           "as one has room."))

    # ---- internals -------------------------------------------------------------------------------
    async def _checked(self, run_id: str, user: str, what: str) -> tuple[RunRecord | None, IntentResult]:
        record = self.store.get_run(run_id)
        if record is None:
            return None, IntentResult(False, f"No run {run_id}.", run_id)
        check = {"answer": self.access.can_answer, "send": self.access.can_send, "stop": self.access.can_stop}[what]
        decision = check(record, user)
        if not decision:
            return None, await self.refuse(record.thread, user, decision.reason, run_id)
        return record, IntentResult(True, "", run_id)

    def running(self) -> list[str]:
        """Live runs with a CLI process (or about to have one): what max_runs counts."""
        return [rid for rid, lr in self.live.items() if not lr.parked]

    def parked(self) -> list[str]:
        """Live runs parked on a question, with no CLI process: what max_parked counts."""
        return [rid for rid, lr in self.live.items() if lr.parked]

    def _may_park(self) -> bool:
        return len(self.parked()) < self.max_parked

    def _over_limit(self) -> str | None:
        running = self.running()
        if self.transport.remote or len(running) < self.max_runs:  # workers have limits of their own
            return None
        return (f"{len(running)} runs are already going (the limit is {self.max_runs}). Try again when one "
                f"finishes, or stop one: {', '.join(running)}.")

    def _busy(self, workspace: Path) -> str | None:
        return next((rid for rid, lr in self.live.items() if Path(lr.record.workspace) == workspace), None)

    def _places(self, run_id: str, channel: str) -> tuple[Path, Path]:
        """A workspace of its own per run, or the channel's configured one (its runs then share one
        run_dir, so a new run there continues the project the way a second `flower` does)."""
        configured = self.workspaces.get(channel)
        if configured is not None:
            return configured, self.root / "channels" / channel.replace(":", "_") / "runs"
        return self.root / run_id / "workspace", self.root / run_id / "runs"

    @staticmethod
    def _not_running(record: RunRecord) -> str:
        if record.status == "died":
            return f"Run {record.run_id} stopped when the bot restarted; wake it first."
        return f"Run {record.run_id} is not running ({record.status})."

    def sent_recorder(self, run_id: str, thread: ThreadRef) -> Callable[[OutMessage, str], None]:
        """An outbox's on_sent for one thread of a run: the home thread's card and receipt ids are
        kept for restarts (every thread's key -> message ids are kept by its outbox)."""
        def sent(msg: OutMessage, message_id: str) -> None:
            live = self.live.get(run_id)
            if live is not None and thread == live.record.thread:
                self._sent(live, msg, message_id)
        return sent

    def _on_ask(self, live: LiveRun, card_id: str, state: str) -> None:
        if state == "asked":
            self.mirrors.asked(live, card_id)
        else:
            self.mirrors.settled(live.run_id, card_id)

    def _sent(self, live: LiveRun, msg: OutMessage, message_id: str) -> None:
        if msg.kind == "ask":
            card_id = msg.key.removeprefix("ask:")
            rec = live.ledger.get(card_id)
            if rec is not None:
                self.store.save_ask_message(live.run_id, card_id, message_id, rec.question, rec.options)
        elif msg.kind == "receipt":
            mail_id = msg.key.rsplit(":", 1)[-1]
            self.store.save_receipt(live.run_id, mail_id, message_id,
                                    "delivered" if msg.text.startswith("📬") else "queued")

    def _ended(self, live: LiveRun) -> None:
        if self.live.get(live.run_id) is live:
            del self.live[live.run_id]
