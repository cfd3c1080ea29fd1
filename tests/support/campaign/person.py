"""The person at the other end, through the documented HTTP API only (README "The web page and its HTTP API").

Every tick (TICK_S) the person reads `GET /api/runs`, keeps `target` runs going (a new task when
fewer are live), answers each open question (`GET …/asks`) after a moment's thought with a fresh
answer token, now and then drops a mail or an interrupt with fresh tokens into a live run, and
watches each run's WebSocket (seqwatch). What the bot says about a run only steers what the person
does next, as it would steer a real one; nothing it says is counted. While `draining`, only
questions are answered: no new runs, mail or interrupts.

A question the bot refused an answer for is tried again (a fresh token) after RETRY_S; a question of
a run that sleeps since a restart ("died") is answered like any other — that is how today's bot wakes
it — but its list is read less often (SLEEPER_POLL_S), as stuck runs pile up over a long campaign.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp

from tests.support.campaign.ledger import Ledger
from tests.support.campaign.progress import Progress
from tests.support.campaign.seqwatch import SeqStats, watch

TICK_S = 0.25
RETRY_S = 3.0
SLEEPER_POLL_S = 2.0
LIVE = ("starting", "running", "waiting", "parked")
ENDED = ("done", "failed", "stopped")
CALL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Habits:
    target: int = 3  # runs kept going
    think_s: tuple[float, float] = (0.0, 2.0)  # before answering a question
    mail_per_s: float = 0.12  # per live run
    interrupt_per_s: float = 0.03  # per live run (the killer adds targeted ones)


class Person:
    def __init__(self, session: aiohttp.ClientSession, base: str, ledger: Ledger, progress: Progress,
                 rng: random.Random, habits: Habits, seq: SeqStats) -> None:
        self.session, self.base, self.ledger, self.progress = session, base, ledger, progress
        self.rng, self.habits, self.seq = rng, habits, seq
        self.draining = False
        self.statuses: dict[str, str] = {}  # run id -> status, as the API last said (steering only)
        self.waiting: set[tuple[str, str]] = set()  # questions of live runs seen open, not answered yet
        self.changed = asyncio.Event()  # set on every tick that saw something
        self._handled: dict[tuple[str, str], float] = {}  # question -> when the person may try it again
        self._polled: dict[str, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # ---- the API ---------------------------------------------------------------------------------
    async def get(self, path: str) -> Any:
        """The JSON of a GET, or None when the bot is down or says no."""
        try:
            async with self.session.get(self.base + path, timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)) as r:
                return await r.json() if r.status == 200 else None
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return None

    async def post(self, kind: str, run_id: str, path: str, body: dict[str, Any], token: str,
                   detail: str = "") -> dict[str, Any] | None:
        """POST an input; it is booked as accepted only on a 2xx with "ok": true."""
        try:
            async with self.session.post(self.base + path, data=json.dumps(body),
                                         headers={"Content-Type": "application/json"},
                                         timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)) as r:
                answer = await r.json()
                status = r.status
        except (aiohttp.ClientError, TimeoutError, ValueError):
            self.ledger.not_taken(kind, run_id, token, kind)
            return None
        if 200 <= status < 300 and isinstance(answer, dict) and answer.get("ok") is True:
            self.ledger.accept(kind, run_id or str(answer.get("id", "")), token, detail)
            return answer
        self.ledger.not_taken(kind, run_id, token, f"{kind} {status}")
        return None

    # ---- what a person does ----------------------------------------------------------------------
    async def start_run(self) -> None:
        token = self.ledger.token("task")
        answer = await self.post("task", "", "/api/runs", {"task": f"Campaign run {token}: decide and finish."},
                                 token)
        if answer is not None:
            self.statuses[str(answer["id"])] = "starting"
            self.spawn(watch(self.session, self.base, str(answer["id"]), self.seq))

    async def answer(self, run_id: str, ask_id: str) -> None:
        await asyncio.sleep(self.rng.uniform(*self.habits.think_s))
        token = self.ledger.token("answer")
        got = await self.post("answer", run_id, f"/api/runs/{run_id}/answer", {"ask_id": ask_id, "text": token},
                              token, detail=ask_id)
        self.waiting.discard((run_id, ask_id))
        if got is None:
            self._handled[(run_id, ask_id)] = time.monotonic() + RETRY_S

    async def mail(self, run_id: str) -> None:
        token = self.ledger.token("mail")
        await self.post("mail", run_id, f"/api/runs/{run_id}/send", {"text": f"Also: {token}"}, token)

    async def interrupt(self, run_id: str) -> None:
        token = self.ledger.token("interrupt")
        await self.post("interrupt", run_id, f"/api/runs/{run_id}/interrupt", {"text": f"Hold on: {token}"}, token)

    def writable(self) -> list[str]:
        """Live runs whose model will still read what it is sent."""
        return sorted(r for r, s in self.statuses.items()
                      if s in ("running", "waiting") and not self.progress.in_stretch(r))

    def interrupt_now(self) -> bool:
        """For the killer: interrupt one live run at once (False when none can take it)."""
        runs = self.writable()
        if not runs:
            return False
        self.spawn(self.interrupt(self.rng.choice(runs)))
        return True

    # ---- the loop --------------------------------------------------------------------------------
    async def live(self) -> None:
        while True:
            await self.tick()
            await asyncio.sleep(TICK_S)

    async def tick(self) -> None:
        listed = await self.get("/api/runs")
        if listed is None:
            return
        self.progress.update()
        ours = {str(r["id"]): str(r["status"]) for r in listed["runs"] if str(r["id"]) in self.ledger.runs()}
        self.statuses.update(ours)
        now = time.monotonic()
        live = [r for r, s in ours.items() if s in LIVE]
        if not self.draining and len(live) < self.habits.target:
            await self.start_run()
        for run_id, status in ours.items():
            if status in ENDED or (status not in LIVE and now < self._polled.get(run_id, 0.0)):
                continue
            self._polled[run_id] = now + SLEEPER_POLL_S
            asks = await self.get(f"/api/runs/{run_id}/asks")
            for ask in asks or []:
                key = (run_id, str(ask["id"]))
                if now >= self._handled.get(key, 0.0):
                    self._handled[key] = float("inf")  # until this answer is in or refused
                    if status in LIVE:
                        self.waiting.add(key)
                    self.spawn(self.answer(*key))
        if not self.draining:
            for run_id in self.writable():
                if self.rng.random() < self.habits.mail_per_s * TICK_S:
                    self.spawn(self.mail(run_id))
                if self.rng.random() < self.habits.interrupt_per_s * TICK_S:
                    self.spawn(self.interrupt(run_id))
        self.changed.set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
