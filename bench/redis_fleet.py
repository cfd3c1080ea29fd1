"""What the Redis benchmarks share: a one-question scenario, worker processes, a front hub, and the
process figures (RSS, CPU) they read from /proc and getrusage.

Workers are `python -m bots.worker` processes, each in a session of its own (a SIGKILL of the group
takes its CLIs along, as when a machine goes). Their output goes to a log file, not to a pipe this
process reads: the front is what the benchmarks measure, and reading worker logs would be its work.
Everything listens on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from adapters.hub import Hub, HubSettings
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import SQLiteStateStore
from adapters.transport.redis_front import RedisTransport
from adapters.view import ViewConfig
from flower_core import Event
from tests.support.drive import drive
from tests.support.fleet_support import ROOT, fleet_env

QUESTION = "Tabs or spaces?"
# The first turn asks one question; once answered the run says one line and ends.
ONE_QUESTION = f"""
name = "bench-one-question"
[[conversation]]
name = "main"
after_end = "Going with {{last_tool_result}}."
[[conversation.turn]]
say = "One question first."
call = [{{ tool = "mcp__human__ask", input = {{ question = "{QUESTION}", options = ["tabs", "spaces"] }} }}]
"""
USER = "bench"


# ---- figures ------------------------------------------------------------------------------------
def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def cpu_s() -> float:
    """CPU seconds (user + system) this process has used."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def pct(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of unsorted values."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def parser() -> str:
    """Which reply parser redis-py uses here: the C one (hiredis) or its own pure-Python one."""
    from redis.utils import HIREDIS_AVAILABLE

    return "hiredis" if HIREDIS_AVAILABLE else "pure Python (hiredis not installed)"


def load() -> str:
    """The machine's load averages: these figures move with whatever else runs on the cores."""
    one, five, _fifteen = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


# ---- workers ------------------------------------------------------------------------------------
class WorkerProc:
    """One `flower-worker` process, its output in `log`."""

    def __init__(self, name: str, popen: subprocess.Popen[bytes], log: Path) -> None:
        self.name, self.popen, self.log = name, popen, log

    @property
    def pid(self) -> int:
        return self.popen.pid

    async def until_ready(self, timeout: float = 90.0) -> None:
        marker = f"flower-worker {self.name} ready"
        deadline = time.monotonic() + timeout
        while marker not in self.log.read_text(errors="replace"):
            if self.popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.name} did not get ready:\n{self.tail()}")
            await asyncio.sleep(0.05)  # polling a log file, bounded by the deadline: no event to wait on

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (its CLIs too). Reaped later by `stop`."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    async def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM (the worker hands its runs back), SIGKILL after `timeout`; always reaped."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            await asyncio.to_thread(self.popen.wait, timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            await asyncio.to_thread(self.popen.wait)


class Workers:
    """Worker processes on one Redis, one scenario file and one root."""

    def __init__(self, tmp: Path, url: str, *, prefix: str = "flower", scenario: str = ONE_QUESTION,
                 heartbeat_s: float = 0.3, dead_after_s: float = 2.0) -> None:
        self.tmp, self.url, self.prefix = tmp, url, prefix
        self.heartbeat_s, self.dead_after_s = heartbeat_s, dead_after_s
        self.scenario = tmp / "scenario.toml"
        self.scenario.write_text(scenario, encoding="utf-8")
        self.procs: dict[str, WorkerProc] = {}

    def args(self, name: str, *extra: str) -> list[str]:
        return ["--redis", self.url, "--name", name, "--root", str(self.tmp / f".{name}"), "--flow", "single",
                "--demo", "--scenario", str(self.scenario), "--heartbeat", str(self.heartbeat_s),
                "--dead-after", str(self.dead_after_s), "--prefix", self.prefix, *extra]

    async def start(self, name: str, *extra: str) -> WorkerProc:
        log = self.tmp / f"{name}.log"
        with open(log, "wb") as out:
            popen = subprocess.Popen([sys.executable, "-m", "bots.worker", *self.args(name, *extra)], cwd=ROOT,
                                     env=fleet_env(), stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        proc = self.procs[name] = WorkerProc(name, popen, log)
        await proc.until_ready()
        return proc

    def command(self, name: str, *extra: str) -> str:
        return "python -m bots.worker " + " ".join(self.args(name, *extra))

    async def stop(self) -> None:
        await asyncio.gather(*(p.stop() for p in self.procs.values()), return_exceptions=True)


# ---- the front ----------------------------------------------------------------------------------
class Front:
    """The chat front as a bot runs it: a Hub on a memory surface that keeps no contents, a SQLite
    state store, and (transport given) runs handed to workers. `changed` is set on every event."""

    def __init__(self, tmp: Path, *, transport: RedisTransport | None = None, **hub_kw: Any) -> None:
        self.surface = MemorySurface(record=False, keep=False)
        self.state = SQLiteStateStore(tmp / "front-state.db")
        self.hub = Hub(self.surface, self.state, HubSettings(root=tmp / "runs", view=ViewConfig(), **hub_kw),
                       transport=transport)
        self.changed = asyncio.Event()
        self.hub.taps.append(self._tap)  # before any run starts: taps are bound when a run is shown
        self.started = 0

    def _tap(self, run_id: str, ev: Event) -> None:
        self.changed.set()

    async def start(self, task: str) -> str:
        self.started += 1
        thread = ThreadRef("memory", f"C{self.started % 50}", f"t{self.started}")
        result = await drive(self.hub).start(task, thread, USER)
        if not result.ok:
            raise RuntimeError(result.message)
        return result.run_id

    async def until(self, what: str, pred: Callable[[], Any], timeout: float = 120.0) -> Any:
        """Re-checked after every event of any run (the check runs once the event is fully handled)."""
        async def loop() -> Any:
            while True:
                self.changed.clear()
                got = pred()
                if got:
                    return got
                await self.changed.wait()
        try:
            return await asyncio.wait_for(loop(), timeout)
        except TimeoutError:
            raise RuntimeError(f"timed out ({timeout:g}s) waiting for {what}") from None

    def waiting(self, run_id: str) -> str:
        """The run's open card id once it shows one and is parked, else ""."""
        live = self.hub.live.get(run_id)
        if live is None or not live.parked:
            return ""
        cards = live.view.open_cards()
        return cards[0].card_id if cards else ""

    def open_card(self, run_id: str) -> str:
        live = self.hub.live.get(run_id)
        cards = live.view.open_cards() if live is not None else []
        return cards[0].card_id if cards else ""

    async def answer_and_end(self, run_id: str, card_id: str, text: str = "tabs", timeout: float = 120.0) -> None:
        result = await drive(self.hub).answer(run_id, card_id, text, USER)
        if not result.ok:
            raise RuntimeError(f"answer refused: {result.message}")
        await asyncio.wait_for(self.hub.query.wait(run_id), timeout)

    async def close(self) -> None:
        await self.hub.close()
        self.state.close()


def result_line(data: dict[str, Any]) -> str:
    """How a child bench process hands its figures back to its parent."""
    return "RESULT " + json.dumps(data)


def parse_result(out: str) -> dict[str, Any]:
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    raise RuntimeError(f"no result in the child's output:\n{out[-3000:]}")
