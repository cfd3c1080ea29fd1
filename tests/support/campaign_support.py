"""A fleet campaign: an operator's bad week against real processes, and what reached the model.

    this process: redis-server (append-only, fsync always), the model double, the people (HTTP API)
    processes:    one `flower-bot web --redis` front, `flower-worker`s on the double (ANTHROPIC_BASE_URL)

A few runs at a time each ask a handful of questions. People answer them and now and then interrupt a
run, each with a token of their own; meanwhile random kills hit a worker (SIGKILL or SIGTERM, restarted
under its old name, sometimes at once), the front, or Redis (down for a while, at least once for longer
than dead-after). Then everything is brought back and every run is driven to its end.

What is counted, from outside:
- accepted: the API said ok; **reached the model**: in the last request the double received for the run,
  each accepted token must appear exactly once in what the user side said (0 = lost, >1 = duplicated);
- as a model turn's input (issue 32, tests/support/campaign/turns.py): once, only in history (in the kept
  history, never what a turn was given as new), twice, or lost; each input that was not once is listed with
  its shape and the requests around it (kills and its acceptance in their place);
- takeover: kill of a worker → the run's `gen` moves on (another process holds it), per run it held;
- two holders at once: the front had to drop a message from a replaced holder (the fence should make
  that impossible); stuck: a run that did not end once everything was up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import statistics
import time
import tomllib
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from adapters.chores import Chores
from adapters.transport import wire
from adapters.transport.redis_conn import DOWN, connect
from flower_core.devmodel import ModelDouble, RecordedRequest, parse_scenario
from flower_core.devmodel.server import cli_env
from tests.support.campaign.turns import HISTORY, LOST, ONCE, TWICE, RunView, shape
from tests.support.fleet_support import Api, Fleet, Proc
from tests.support.redis_support import RedisServer

QUESTIONS = 4
SCENARIO = 'name = "campaign"\n[[conversation]]\nname = "main"\nafter_end = "Done: {last_tool_result}."\n' + "".join(
    f'[[conversation.turn]]\nsay = "Got {{last_tool_result}}. Question {k}."\n'
    f'call = [{{ tool = "mcp__human__ask", input = {{ question = "Question {k}?", options = ["a", "b"] }} }}]\n'
    for k in range(1, QUESTIONS + 1))
ENDED = ("done", "failed", "stopped")


@dataclass
class Report:
    kills: Counter[str] = field(default_factory=Counter)
    answers: dict[str, str] = field(default_factory=dict)  # token -> run, accepted answers
    interrupts: dict[str, str] = field(default_factory=dict)  # token -> run, accepted interrupts
    reached: dict[str, int] = field(default_factory=dict)  # token -> times in the run's last request
    takeovers: list[float] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    stuck_why: dict[str, str] = field(default_factory=dict)  # stuck run -> what the API and Redis said of it
    two_holders: set[str] = field(default_factory=set)
    said: dict[str, str] = field(default_factory=dict)  # token -> what the API answered when it was accepted
    earlier: dict[str, int] = field(default_factory=dict)  # lost token -> requests of its run that had it
    fenced: int = 0  # holders stopped by the fence (a worker log line each)
    resumed: int = 0  # runs a worker restarted under its old name resumed
    as_input: dict[str, str] = field(default_factory=dict)  # token -> ONCE / HISTORY / TWICE / LOST (turns.py)
    shapes: dict[str, str] = field(default_factory=dict)  # token not ONCE -> its shape line
    explained: dict[str, list[str]] = field(default_factory=dict)  # token not ONCE -> the requests around it
    accepted_at: dict[str, float] = field(default_factory=dict)  # token -> time.perf_counter() of its "ok"
    kill_at: list[tuple[float, str]] = field(default_factory=list)  # (time.perf_counter(), what) of each kill

    def count(self, tokens: dict[str, str]) -> tuple[int, int, int, int]:
        once = sum(1 for t in tokens if self.reached.get(t, 0) == 1)
        lost = sum(1 for t in tokens if self.reached.get(t, 0) == 0)
        return len(tokens), once, lost, sum(1 for t in tokens if self.reached.get(t, 0) > 1)

    def turns(self, tokens: dict[str, str]) -> tuple[int, int, int, int, int]:
        """accepted / as a turn's input once / only in history / twice / lost."""
        kinds = [self.as_input.get(t, LOST) for t in tokens]
        return len(tokens), kinds.count(ONCE), kinds.count(HISTORY), kinds.count(TWICE), kinds.count(LOST)

    def turn_problems(self) -> list[str]:
        """Issue 32's criterion: every accepted input is one model turn's input (0 only in history, 0 twice)."""
        tokens = {**self.answers, **self.interrupts}
        _n, _once, history, twice, _lost = self.turns(tokens)
        return ([f"{history} accepted input(s) only in history (never a model turn's input)"] if history else []) \
            + ([f"{twice} accepted input(s) twice (the input of two turns, or twice in history)"] if twice else [])

    def not_as_input(self, explained: int | None = 12) -> list[str]:
        """Each accepted input that was not one turn's input (twice and lost first), with its shape; the shapes
        counted; then the requests around the first `explained` of them (None: all)."""
        order = (TWICE, LOST, HISTORY)
        rows = sorted(((self.as_input.get(t, LOST), kind, run, t) for kind, tokens in (("answer", self.answers),
                       ("interrupt", self.interrupts)) for t, run in tokens.items()
                       if self.as_input.get(t, LOST) != ONCE), key=lambda row: order.index(row[0]))
        if not rows:
            return ["every accepted input was the input of exactly one model turn"]
        explained = len(rows) if explained is None else explained
        out, shapes = ["inputs that were not exactly one model turn's input:"], Counter[str]()
        for where, kind, run, token in rows:
            line = self.shapes.get(token, "")
            shapes[f"{where}: {line}"] += 1
            out.append(f"  {where:<15} {kind:<9} {run}:{token}  {line}")
        out += ["shapes (how many inputs went each way):", *(f"  {n:>3} × {key}" for key, n in shapes.most_common())]
        out.append(f"requests around the first {min(explained, len(rows))} (T = a turn, - = not a turn; the reply "
                   "served; the request's last messages):")
        for where, kind, run, token in rows[:explained]:
            out += [f"  {where} {kind} {run}:{token}", *(f"    {x}" for x in self.explained.get(token, []))]
        return out

    def lost(self) -> list[str]:
        """One line per accepted input that did not reach the model once: what the person was told, and
        whether an earlier request of the run had it (then the session the run resumed had lost it)."""
        out = []
        for token, run_id in [*self.answers.items(), *self.interrupts.items()]:
            n = self.reached.get(token, 0)
            if n != 1:
                seen = f", in {self.earlier.get(token, 0)} earlier request(s)" if n == 0 else ""
                out.append(f"{token} (run {run_id}): {n}x in the last request{seen}; told {self.said.get(token)!r}")
        out.extend(f"stuck {run_id}: {why}" for run_id, why in self.stuck_why.items())
        return out

    def table(self) -> str:
        a_acc, a_once, a_lost, a_dup = self.count(self.answers)
        i_acc, _i_once, i_lost, i_dup = self.count(self.interrupts)
        take = (f"{statistics.median(self.takeovers):.2f} / {_pct(self.takeovers, 0.95):.2f} s"
                if self.takeovers else "- (no run was held by a killed worker)")
        rows = [("kills worker / front / Redis", f"{self.kills['worker']} / {self.kills['front']} / "
                                                 f"{self.kills['redis']}"),
                ("answers accepted / delivered once / lost / duplicated", f"{a_acc} / {a_once} / {a_lost} / {a_dup}"),
                ("interrupts accepted / lost (/ duplicated)", f"{i_acc} / {i_lost} ({i_dup})"),
                ("answers as a model turn's input: accepted / **once** / only in history / twice / lost",
                 " / ".join(map(str, self.turns(self.answers)))),
                ("interrupts as a model turn's input: accepted / **once** / only in history / twice / lost",
                 " / ".join(map(str, self.turns(self.interrupts)))),
                ("runs / stuck / with two holders at once", f"{len(self.runs)} / {len(self.stuck)} / "
                                                           f"{len(self.two_holders)}"),
                ("kill -> another worker holds the run, p50 / p95", take),
                ("holders stopped by the fence / runs resumed after a same-name restart",
                 f"{self.fenced} / {self.resumed}")]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"| {k:<{width}} | {v} |" for k, v in rows)


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


class Campaign:
    def __init__(self, tmp: Path, *, kills: int, seed: int = 25, workers: int = 3, runs_at_once: int = 3,
                 dead_after_s: float = 2.0, pause_s: tuple[float, float] = (1.5, 4.0)) -> None:
        self.tmp, self.kills, self.rng = tmp, kills, random.Random(seed)
        self.names = [f"w{i + 1}" for i in range(workers)]
        self.runs_at_once, self.dead_after_s, self.pause_s = runs_at_once, dead_after_s, pause_s
        self.server = RedisServer(tmp / "redis")
        self.double = ModelDouble(parse_scenario(tomllib.loads(SCENARIO), name="campaign"))
        self.fleet = Fleet(tmp, self.server.url)
        self.report = Report()
        self.tasks: dict[str, str] = {}  # run id -> its task token
        self.history: list[Proc] = []  # every process incarnation, for the logs
        self.r: Any = None
        self._incarnation = 0
        self._done = asyncio.Event()
        self._ended_seen: set[str] = set()
        self._watches = Chores()

    # ---- processes --------------------------------------------------------------------------------
    async def worker(self, name: str) -> None:
        self._incarnation += 1
        home = self.tmp / f"cli-{name}-{self._incarnation}"
        home.mkdir(parents=True)
        env = {**cli_env(self.double.base_url, home), "ANTHROPIC_API_KEY": "campaign-dummy"}
        proc = await self.fleet.start_worker(name, "--park-after", "4", "--dead-after", str(self.dead_after_s),
                                             model_env=env)
        self.history.append(proc)

    async def front(self) -> None:
        self.history.append(await self.fleet.start_front())

    async def run(self) -> Report:
        self.server.start()
        await self.double.start()
        self.r = connect(self.server.url)
        try:
            await self.front()
            for name in self.names:
                await self.worker(name)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
                api = Api(http, self.fleet.base)
                people = [asyncio.create_task(self._keep_runs(api)), asyncio.create_task(self._answer(api)),
                          asyncio.create_task(self._interrupt(api))]
                await self._kill_loop()
                await self._all_up()
                people[0].cancel()
                people[2].cancel()
                await self._drain(api)
                self._done.set()
                await asyncio.wait_for(self._watches.wait(), 70)
                await asyncio.gather(*people, return_exceptions=True)
            self._tally()
            return self.report
        finally:
            await self.fleet.stop()
            await self.double.stop()
            with contextlib.suppress(Exception):
                await self.r.aclose()
            self.server.cleanup()

    # ---- the people -------------------------------------------------------------------------------
    async def _call(self, api: Api, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        try:
            return await api.post(path, body)
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return 0, {}  # the front is down (or restarting): not accepted

    async def _keep_runs(self, api: Api) -> None:
        while True:
            live = [r for r in self.report.runs if r not in self._ended_seen]
            if len(live) < self.runs_at_once:
                token = f"R{len(self.report.runs)}x{uuid.uuid4().hex[:6]}"
                status, body = await self._call(api, "/api/runs", {"task": f"campaign run {token}"})
                if status == 201:
                    self.report.runs.append(str(body["id"]))
                    self.tasks[str(body["id"])] = token
            await asyncio.sleep(0.5)  # the people's pace

    async def _state(self, api: Api, run_id: str) -> tuple[str, list[dict[str, Any]]]:
        try:
            run = await api.run(run_id)
            asks = await api.get(f"/api/runs/{run_id}/asks")
            return str(run.get("status", "")), list(asks)
        except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, TypeError):
            return "", []

    async def _answer(self, api: Api) -> None:
        while not self._done.is_set():
            for run_id in list(self.report.runs):
                if run_id in self._ended_seen:
                    continue
                status, asks = await self._state(api, run_id)
                if status in ENDED:
                    self._ended_seen.add(run_id)
                    continue
                for ask in asks[:1]:
                    if self.rng.random() < 0.5:
                        continue  # people take their time
                    token = f"A{uuid.uuid4().hex[:8]}"
                    code, body = await self._call(api, f"/api/runs/{run_id}/answer",
                                                  {"ask_id": ask["id"], "text": token})
                    if code == 200 and body.get("ok"):
                        self.report.accepted_at[token] = time.perf_counter()
                        self.report.answers[token] = run_id
                        self.report.said[token] = str(body.get("message", ""))
            await asyncio.sleep(0.3)

    async def _interrupt(self, api: Api) -> None:
        while True:
            await asyncio.sleep(self.rng.uniform(2.0, 5.0))
            live = [r for r in self.report.runs if r not in self._ended_seen]
            if live:
                run_id, token = self.rng.choice(live), f"I{uuid.uuid4().hex[:8]}"
                code, body = await self._call(api, f"/api/runs/{run_id}/interrupt", {"text": f"please {token}"})
                if code == 200 and body.get("ok"):
                    self.report.accepted_at[token] = time.perf_counter()
                    self.report.interrupts[token] = run_id
                    self.report.said[token] = str(body.get("message", ""))

    async def _drain(self, api: Api, timeout: float = 120.0) -> None:
        """Everything is up: answer until every run ended; those that do not are stuck."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(r not in self._ended_seen for r in self.report.runs):
            await asyncio.sleep(0.5)
        self.report.stuck = [r for r in self.report.runs if r not in self._ended_seen]
        for run_id in self.report.stuck:
            self.report.stuck_why[run_id] = await self._describe(api, run_id)

    async def _describe(self, api: Api, run_id: str) -> str:
        """A stuck run as the API and Redis see it, so a red campaign says where to look."""
        status, asks = await self._state(api, run_id)
        held: dict[str, Any] = {}
        with contextlib.suppress(*DOWN):
            held = await self.r.hgetall(wire.Keys().run(run_id))
        fields = {k: v for k, v in held.items() if len(str(v)) < 80}
        return f"status {status!r}, asks {[a.get('question') for a in asks]}, run hash {fields}"

    # ---- the kills --------------------------------------------------------------------------------
    async def _kill_loop(self) -> None:
        long_outage_done = False
        for k in range(self.kills):
            await asyncio.sleep(self.rng.uniform(*self.pause_s))
            roll = self.rng.random()
            if roll < 0.15 or (not long_outage_done and k == self.kills // 2):
                long_outage = not long_outage_done
                long_outage_done = True
                await self._kill_redis(long_outage)
            elif roll < 0.35:
                await self._kill_front()
            else:
                await self._kill_worker()

    async def _kill_worker(self) -> None:
        name = self.rng.choice(self.names)
        proc = self.fleet.workers[name]
        held = await self._held_by(name)
        began = time.monotonic()
        sigkill = self.rng.random() < 0.7
        how = "SIGKILL" if sigkill else "SIGTERM"
        self.report.kill_at.append((time.perf_counter(), f"killed: worker {name} ({how}), it held "
                                    + (", ".join(r for r, _gen in held) or "no run")))
        if sigkill:
            proc.kill()
        else:
            await asyncio.wait_for(proc.stop(), 60)
        self.report.kills["worker"] += 1
        for run_id, gen in held:
            self._watches.spawn(self._watch_takeover(run_id, gen, began))
        await proc.proc.wait()
        # restarted under its old name: at once now and then, else after a while
        await asyncio.sleep(0.0 if self.rng.random() < 0.3 else self.rng.uniform(0.5, 2 * self.dead_after_s))
        await self.worker(name)

    async def _held_by(self, name: str) -> list[tuple[str, int]]:
        out = []
        for run_id in self.report.runs:
            with contextlib.suppress(*DOWN):
                run = await self.r.hgetall(wire.Keys().run(run_id))
                if run.get("holder") == name:
                    out.append((run_id, int(run.get("gen", 0))))
        return out

    async def _watch_takeover(self, run_id: str, gen: int, began: float) -> None:
        deadline = began + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(*DOWN):
                run = await self.r.hgetall(wire.Keys().run(run_id))
                if int(run.get("gen", 0)) > gen:
                    self.report.takeovers.append(time.monotonic() - began)
                    return
                if run.get("holder", "") == "" and run_id in self._ended_seen:
                    return  # it ended first
            await asyncio.sleep(0.05)

    async def _kill_front(self) -> None:
        front = self.fleet.front
        assert front is not None
        sigkill = self.rng.random() < 0.7
        self.report.kill_at.append((time.perf_counter(), f"killed: front ({'SIGKILL' if sigkill else 'SIGTERM'})"))
        if sigkill:
            front.kill()
        else:
            await asyncio.wait_for(front.stop(), 60)
        await front.proc.wait()
        self.report.kills["front"] += 1
        await asyncio.sleep(self.rng.uniform(0.0, 1.0))
        await self.front()

    async def _kill_redis(self, long_outage: bool) -> None:
        sigkill = self.rng.random() < 0.5
        self.report.kill_at.append((time.perf_counter(), f"killed: Redis ({'SIGKILL' if sigkill else 'SIGTERM'})"))
        (self.server.kill if sigkill else self.server.stop)()
        self.report.kills["redis"] += 1
        down = self.dead_after_s + 1.5 if long_outage else self.rng.uniform(0.3, self.dead_after_s + 1.0)
        await asyncio.sleep(down)  # the outage
        self.server.start()

    async def _all_up(self) -> None:
        if self.server.proc is None:
            self.server.start()
        front = self.fleet.front
        if front is None or front.proc.returncode is not None:
            await self.front()
        for name in self.names:
            if self.fleet.workers[name].proc.returncode is not None:
                await self.worker(name)

    # ---- what reached the model -------------------------------------------------------------------
    def _tally_turns(self) -> None:
        """Issue 32's count: was each accepted input one model turn's input (turns.py)?"""
        by_run: dict[str, list[RecordedRequest]] = {}
        for rec in self.double.model_requests():
            run = next((r for r, token in self.tasks.items() if token in rec.first_user_text), None)
            if run is not None:
                by_run.setdefault(run, []).append(rec)
        views = {run: RunView.of(recs) for run, recs in by_run.items()}
        for token, run_id in [*self.report.answers.items(), *self.report.interrupts.items()]:
            view = views.get(run_id)
            where = view.reach(token).kind if view is not None else LOST
            self.report.as_input[token] = where
            if where == ONCE:
                continue
            self.report.shapes[token] = shape(view, token) if view is not None else "the run sent no request"
            marks = [*self.report.kill_at, (self.report.accepted_at.get(token, 0.0), f"accepted: {token}")]
            self.report.explained[token] = view.explain(token, marks) if view is not None else []

    def _tally(self) -> None:
        last: dict[str, Any] = {}
        every: dict[str, list[str]] = {}
        for rec in self.double.model_requests():
            for run_id, token in self.tasks.items():
                if token in rec.first_user_text:
                    last[run_id] = rec.body
                    every.setdefault(run_id, []).append(json.dumps(rec.body.get("messages", []), ensure_ascii=False))
        self._tally_turns()
        for tokens in (self.report.answers, self.report.interrupts):
            for token, run_id in tokens.items():
                body = last.get(run_id)
                said = [json.dumps(m.get("content"), ensure_ascii=False) for m in (body or {}).get("messages", [])
                        if m.get("role") == "user"]
                self.report.reached[token] = sum(s.count(token) for s in said)
                if not self.report.reached[token]:
                    self.report.earlier[token] = sum(1 for m in every.get(run_id, []) if token in m)
        for proc in self.history:
            for line in proc.lines:
                if "a message from replaced holder" in line:
                    self.report.two_holders.update(r for r in self.report.runs if f"run {r}:" in line)
                elif "lets go of run" in line:
                    self.report.fenced += 1
                elif "resumed after a restart" in line:
                    self.report.resumed += 1
