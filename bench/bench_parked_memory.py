"""Parked runs at scale (issue 23, "park cold"): what one parked run costs the bot process when N are parked.

N real CLIs would be far too slow, so one real run asks on the model double and parks (park_after_s 0.2 s) and
its hub closes; its state (run dir and workspace: session store, manifest, lineage, park record, card ledger;
its rows in the SQLite state store) is copied N times, every run id, session id, path, thread and message id
rewritten. A fresh Hub over that state (this process) brings the N back by itself (`Hub.recover`: restored
parked, no CLI, the question open on its old card). Checked first on three copies: each comes back like the
original after a restart, none asks the model, and answering one resumes it and reaches the model double.
Printed per N: runs back parked (and like the original), restore time, and above a baseline hub over an empty
state (gc.collect() first): RSS, open fds (also at the peak, while restoring) and asyncio tasks per parked run.
--trace: what the runs hold by the repo line that allocated it, and objects per run (tracing inflates RSS).
Several N run one child process each, so a size's freed heap does not hide the next one's growth.
Run: .venv/bin/python -m bench.bench_parked_memory [N ...] [--trace]   (default: 1000)
     .venv/bin/python -m bench.bench_parked_memory --idle-bot [ROUNDS]   (issue 37: what an idle
     `flower-bot web --demo` holds: its RSS once serving, and `-X importtime` of what it imported, by package;
     ROUNDS starts of each variant, alternating, the median printed; default 3. "before" imports
     claude_agent_sdk first, as the bot did at rest before issue 37; "after" is the bot as it is)

Measured on a 2-core machine (`... 1000 10000`), before and after runs came back 32 at a time and the chat side
dropped its per-run tasks (view timer on the loop, an idle outbox without a worker):
  before: 1000: 0.165 MB/run, 5 tasks/run, 2.99 fds/run at the restore peak; 10000: EMFILE, runs could not come back
  after:  1000: 0.048 MB/run, 3 tasks/run, 0.10 fds/run at the peak, back in 5.3 s;
          10000: 0.046 MB/run, 3 tasks/run, 0.01 fds/run at the peak, all 10000 back parked in 58 s; 0 fds once parked.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from claude_agent_sdk import project_key_for_directory

from adapters.hub import Hub, HubSettings
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import RunRecord, SQLiteStateStore
from adapters.transport import LocalTransport
from adapters.transport.engine import EngineKit
from adapters.view import ViewConfig
from bench.bench_parking import PARK_AFTER_S, SCENARIO, _factory, _fds, _tree_rss_kb
from bench.procfs import rss_kb
from flower_core.devmodel import ModelDouble
from tests.support.drive import drive

TARGET_MB = 0.2
CHANNELS = 50  # the copies' threads spread over this many channels
VERIFY = 3  # copies checked against the original before measuring
SESSIONS = "sessions.db"
TABLES = "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
Swaps = list[tuple[str, str]]
Rows = dict[str, tuple[list[str], list[tuple[object, ...]]]]  # table -> (columns, rows)


def _hub(root: Path, store: SQLiteStateStore, md: ModelDouble, cli: Path) -> Hub:
    """A bot process's hub, on a fresh surface each time (keep=False: an edit of an old message id passes)."""
    settings = HubSettings(root=root, max_runs=4, max_parked=1_000_000, park_after_s=PARK_AFTER_S,
                           view=ViewConfig(status_every_s=30.0, prose_linger_s=1.0))
    return Hub(MemorySurface(record=False, keep=False), store, settings,
               kit=EngineKit(factory=_factory, env=md.env(cli)))


async def _until(done: Callable[[], bool], deadline_s: float, say: Callable[[float], str] | None = None) -> bool:
    """Poll `done` until it holds (True) or the deadline passes (False); `say`: progress every 15 s."""
    t0 = told = time.monotonic()
    while not done():
        if (now := time.monotonic()) - t0 >= deadline_s:
            return False
        if say is not None and now - told >= 15:
            told = now
            print(f"  ... {say(now - t0)}", flush=True)
        await asyncio.sleep(0.2)
    return True


async def _close(hub: Hub, store: SQLiteStateStore) -> None:
    try:
        await asyncio.wait_for(hub.close(deadline_s=120), 300)
    finally:
        store.close()


def _swap(text: str, swaps: Swaps) -> str:
    for old, new in swaps:
        text = text.replace(old, new)
    return text


def _sql(path: Path, swaps: Swaps | None = None) -> str:
    """Rewrite every TEXT column of every table of an SQLite file; without swaps, its SQL dump."""
    con = sqlite3.connect(path)
    try:
        if swaps is None:
            return "\n".join(con.iterdump())  # (its free pages may still hold the bytes rewritten)
        con.execute("PRAGMA synchronous=OFF")  # a scratch copy: no fsync each
        with con:
            for (table,) in con.execute(TABLES).fetchall():
                cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})") if r[2].upper() == "TEXT"]
                for old, new in swaps:
                    sets = ", ".join(f"{c} = replace({c}, ?, ?)" for c in cols)
                    con.execute(f"UPDATE {table} SET {sets}", (old, new) * len(cols))
        return ""
    finally:
        con.close()


@dataclass
class Template:
    """The one real parked run: where it lives, its session id, its rows in the state store."""

    root: Path
    run: RunRecord
    sid: str
    rows: Rows

    def copy(self, root: Path, db: Path, n: int) -> list[str]:
        """N copies under `root`, their rows in the state store at `db`; returns their run ids."""
        base0 = self.root / self.run.run_id
        files = [(p.relative_to(base0), p.read_text(encoding="utf-8")) for p in sorted(base0.rglob("*"))
                 if p.is_file() and not p.name.startswith(SESSIONS)]
        dirs = [p.relative_to(base0) for p in base0.rglob("*") if p.is_dir()]
        pk0, seq, ids = project_key_for_directory(self.run.workspace), itertools.count(1), list[str]()
        SQLiteStateStore(db).close()  # the schema
        con = sqlite3.connect(db)
        try:
            with con:
                for i in range(n):
                    rid, thread = f"r{i:08x}", str(ThreadRef("memory", f"C{i % CHANNELS}", f"t{i}"))
                    base = root / rid
                    for d in dirs:
                        (base / d).mkdir(parents=True, exist_ok=True)
                    workspace = self.run.workspace.replace(str(base0), str(base))
                    swaps = [(pk0, project_key_for_directory(workspace)), (str(base0), str(base)),
                             (self.sid, str(uuid.uuid4()))]
                    for rel, text in files:
                        (base / _swap(str(rel), swaps)).write_text(_swap(text, swaps), encoding="utf-8")
                    sessions = Path(_swap(self.run.run_dir, swaps)) / SESSIONS
                    shutil.copyfile(Path(self.run.run_dir) / SESSIONS, sessions)
                    _sql(sessions, swaps)
                    for table, (cols, rows) in self.rows.items():
                        for row in rows:
                            values = [rid if c == "run_id" else thread if c == "thread" else f"{v}.{i}" if c in
                                      ("message_id", "iid") else next(seq) if c == "seq" else
                                      _swap(v, swaps) if isinstance(v, str) else v
                                      for c, v in zip(cols, row, strict=True)]
                            con.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                        values)
                    ids.append(rid)
        finally:
            con.close()
        return ids


def _rows(db: Path, run: RunRecord) -> Rows:
    """The run's rows in every table of the state store that names a run id or a thread."""
    con, out = sqlite3.connect(db), Rows()
    try:
        for (table,) in con.execute(TABLES).fetchall():
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            key, value = ("run_id", run.run_id) if "run_id" in cols else ("thread", str(run.thread))
            if key in cols:
                out[table] = (cols, con.execute(f"SELECT * FROM {table} WHERE {key} = ?", (value,)).fetchall())
        return out
    finally:
        con.close()


async def make_template(tmp: Path, md: ModelDouble, cli: Path) -> Template:
    store = SQLiteStateStore(tmp / "state.db")
    hub = _hub(tmp / "runs", store, md, cli)
    try:
        started = await drive(hub).start("pick a colour", ThreadRef("memory", "C0", "template"), "bench")
        run_id = started.run_id or ""
        if not started.ok or not await _until(lambda: run_id in hub.parked(), 120):
            raise RuntimeError(f"the template run did not park within 120 s: {started.message}")
        record = store.get_run(run_id)
    finally:
        await _close(hub, store)
    assert record is not None
    (sid,) = [p.stem for p in (Path(record.run_dir) / "parked").glob("*.json")]
    con = sqlite3.connect(Path(record.run_dir) / SESSIONS)
    con.execute("VACUUM")
    con.close()
    return Template(tmp / "runs", record, sid, _rows(tmp / "state.db", record))


def _signature(hub: Hub, run_id: str) -> tuple[object, ...]:
    """How a restored run stands: status, its card, ledger, the channel's open question, its park records."""
    live, record = hub.live.get(run_id), hub.store.get_run(run_id)
    if live is None or record is None:
        return ("not live", None if record is None else str(record.status))
    engine = hub.transport.engines.get(run_id) if isinstance(hub.transport, LocalTransport) else None
    channel = engine.channel if engine is not None else None
    asks = [(a.question, list(a.options), a.state) for a in channel.pending()] if channel is not None else []
    cards = [(c.card_id, c.question, list(c.options), c.state, c.note) for c in live.view.open_cards()]
    return (str(record.status), live.parked, live.view.status_card.state, cards, asks,
            [c.card_id for c in live.ledger.open_cards()], len(list((Path(record.run_dir) / "parked").glob("*.json"))))


async def verify(tmp: Path, md: ModelDouble, t: Template, cli: Path) -> tuple[object, ...]:
    """The original restarted, then VERIFY copies: the same, no model request; answering one reaches the model."""
    store = SQLiteStateStore(t.root.parent / "state.db")
    hub = _hub(t.root, store, md, cli)
    try:
        await asyncio.wait_for(hub.recover(), 60)
        await _until(lambda: t.run.run_id in hub.parked(), 60)
        want = _signature(hub, t.run.run_id)
    finally:
        await _close(hub, store)
    ids = t.copy(tmp / "runs", tmp / "state.db", VERIFY)
    texts = [(p, _sql(p) if p.name == SESSIONS else p.read_text(encoding="utf-8"))
             for p in (tmp / "runs").rglob("*") if p.is_file()]
    stale = [p for p, text in texts if any(old in text for old in (t.run.run_id, t.sid, str(t.root)))]
    md.requests.clear()
    store = SQLiteStateStore(tmp / "state.db")
    hub = _hub(tmp / "runs", store, md, cli)
    try:
        died = await asyncio.wait_for(hub.recover(), 60)
        await _until(lambda: len(hub.parked()) >= VERIFY, 60)
        got = {rid: _signature(hub, rid) for rid in ids}
        if stale or died or md.requests or want[:2] != ("parked", True) or any(g != want for g in got.values()):
            raise AssertionError(f"copies not restored like the original {want}: {got}; died {died}; "
                                 f"{len(md.requests)} model requests; files naming the original {stale}")
        done = await drive(hub).answer(ids[0], "1-q1", "copy-answer", "bench")
        assert done.ok, done.message
        await md.wait_for(lambda reqs: any(r.last_tool_result == "copy-answer" for r in reqs), 120)
        await asyncio.wait_for(hub.query.wait(ids[0]), 120)
        status = sorted(str(r.status) for r in store.list_runs())
    finally:
        await _close(hub, store)
    print(f"verified on {VERIFY} copies: each restored like the original after a restart {want}; no model request "
          f"before an answer; answered one ({done.message}): the model got it, runs now {status}", flush=True)
    return want


@dataclass
class Row:
    n: int
    back: int = 0  # hub.parked() at the end
    unlike: int = 0  # live runs not restored like the original (_signature)
    took_s: float = 0.0
    cpu_s: float = 0.0
    mb: float = 0.0
    fds: float = 0.0
    peak_fds: float = 0.0  # while restoring: a launched run holds its session store open until it has run
    tasks: float = 0.0
    copy_s: float = 0.0
    died: int = 0
    requests: int = 0
    clis: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, float] = field(default_factory=dict)
    note: str = ""


class PeakFds(threading.Thread):
    """The most fds this process held while it ran (sampled every 50 ms from a thread)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.done = _fds(), threading.Event()
        self.start()

    def run(self) -> None:
        while not self.done.wait(0.05):
            self.peak = max(self.peak, _fds())


def _task_kinds() -> Counter[str]:
    return Counter(getattr(t.get_coro(), "__qualname__", t.get_name()) for t in asyncio.all_tasks())


def _types() -> Counter[str]:
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


async def measure(tmp: Path, md: ModelDouble, t: Template, cli: Path, n: int, want: tuple[object, ...],
                  trace: bool) -> Row:
    row, t0 = Row(n), time.perf_counter()
    ids = t.copy(tmp / "runs", tmp / "state.db", n)
    row.copy_s = time.perf_counter() - t0
    print(f"N={n}: copied the parked run {n} times in {row.copy_s:.0f} s", flush=True)
    empty = SQLiteStateStore(tmp / "empty" / "state.db")
    hub = _hub(tmp / "empty" / "runs", empty, md, cli)
    await asyncio.wait_for(hub.recover(), 60)
    gc.collect()
    base_kb, base_fds, base_kinds, base_types = rss_kb(), _fds(), _task_kinds(), _types() if trace else Counter()
    await _close(hub, empty)
    if trace:
        tracemalloc.start(30)
    store = SQLiteStateStore(tmp / "state.db")
    hub = _hub(tmp / "runs", store, md, cli)
    md.requests.clear()
    deadline = max(120.0, n * 0.12)
    try:
        t0, c0, peak = time.perf_counter(), time.process_time(), PeakFds()
        row.died = len(await asyncio.wait_for(hub.recover(), deadline))
        if not await _until(lambda: len(hub.parked()) >= n - row.died, deadline - (time.perf_counter() - t0),
                            lambda s: f"{len(hub.parked())}/{n} back parked after {s:.0f} s"):
            row.note = f"deadline {deadline:.0f} s passed"
        peak.done.set()
        row.peak_fds = (peak.peak - base_fds) / n
        row.took_s, row.cpu_s, row.back = time.perf_counter() - t0, time.process_time() - c0, len(hub.parked())
        gc.collect()
        kinds = _task_kinds() - base_kinds
        row.mb, row.fds = (rss_kb() - base_kb) / n / 1024, (_fds() - base_fds) / n
        row.tasks, row.kinds = kinds.total() / n, {k: v / n for k, v in kinds.most_common(8)}
        if trace:
            _print_trace(n, tracemalloc.take_snapshot(), _types() - base_types)
            tracemalloc.stop()
        row.requests, row.clis = len(md.requests), _tree_rss_kb()[1]
        row.statuses = dict(Counter(str(r.status) for r in store.list_runs()))
        row.unlike = sum(rid in hub.live and _signature(hub, rid) != want for rid in ids)
    finally:
        await _close(hub, store)
    return row


def _print_trace(n: int, snap: tracemalloc.Snapshot, types: Counter[str]) -> None:
    """What the parked runs hold, by the innermost line of this repository on the allocation's stack."""
    root, sites, files = str(Path(__file__).resolve().parents[1]) + "/", Counter[str](), Counter[str]()
    for trace in snap.traces:
        frame = next((f for f in reversed(trace.traceback) if f.filename.startswith(root)
                      and "/.venv/" not in f.filename and "/bench/" not in f.filename), None)
        sites[f"{frame.filename.removeprefix(root)}:{frame.lineno}" if frame else "(no repo frame)"] += trace.size
    for site, size in sites.items():
        files[site.rsplit(":", 1)[0]] += size
    print(f"tracemalloc (N={n}): {sites.total() / n / 1024:.1f} kB per parked run still allocated; by repo file:")
    print("  " + ", ".join(f"{name} {size / n / 1024:.1f} kB" for name, size in files.most_common(12)))
    print("kB/run by the repo line that allocated it:")
    for site, size in sites.most_common(15):
        print(f"  {size / n / 1024:6.2f}  {site}")
    print("objects (gc-tracked) per run: " + ", ".join(f"{name} {c / n:.1f}" for name, c in types.most_common(16)))


async def run_one(n: int, trace: bool) -> Row:
    with tempfile.TemporaryDirectory(prefix="parked-") as name:
        tmp = Path(name)
        async with ModelDouble(SCENARIO) as md:
            template = await make_template(tmp / "template", md, tmp / "cli")
            want = await verify(tmp / "verify", md, template, tmp / "cli")
            return await measure(tmp / "measure", md, template, tmp / "cli", n, want, trace)


def _table(rows: list[Row], argv: list[str]) -> None:
    print(f"\n{'N':>6} | came back parked | restore s (CPU s) | MB per parked run | fds per run | tasks per run | "
          f"MB/run / {TARGET_MB} MB target")
    for r in rows:
        print(f"{r.n:>6} | {r.back:>7} of {r.n:<6} | {r.took_s:8.1f} ({r.cpu_s:6.1f}) | {r.mb:17.4f} | {r.fds:11.3f} | "
              f"{r.tasks:13.2f} | {r.mb / TARGET_MB:6.2f}x {r.note}")
    for r in rows:
        print(f"N={r.n}: store statuses {r.statuses}, died {r.died}, not restored like the original {r.unlike}, model "
              f"requests while restoring {r.requests}, CLI children {r.clis}; fds per run at the peak while restoring "
              f"{r.peak_fds:.2f}; copies made in {r.copy_s:.0f} s; tasks per run: "
              + ", ".join(f"{k} {v:.2f}" for k, v in r.kinds.items()))
    print("command: .venv/bin/python -m bench.bench_parked_memory " + " ".join(argv))


IDLE_SETTLE_S = 2.0  # after the page answers: let start-up work (wake, the demo double) finish


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def idle_bot_once(tmp: Path, *, eager_sdk: bool = False) -> tuple[float, dict[str, float], int]:
    """Start `flower-bot web --demo` (loopback), wait until its page answers, settle; (RSS MB of the bot and its
    children, import seconds per top-level package, modules imported)."""
    import os
    import signal
    import urllib.request

    from bench.procfs import rss_kb

    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "XDG_CONFIG_HOME": str(tmp / "xdg")}
    env.pop("ANTHROPIC_API_KEY", None)
    err = tmp / "importtime.txt"
    with err.open("w") as sink:
        run = (["-c", "import claude_agent_sdk, runpy; runpy.run_module('bots.bot', run_name='__main__')"]
               if eager_sdk else ["-m", "bots.bot"])
        proc = subprocess.Popen([sys.executable, "-X", "importtime", *run, "web", "--demo", "--root",
                                 str(tmp / "root"), "--port", str(port)], env=env, stderr=sink,
                                stdout=subprocess.DEVNULL, cwd=tmp)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("the bot did not serve its page") from None
                    time.sleep(0.1)
            time.sleep(IDLE_SETTLE_S)
            kb = rss_kb(proc.pid) + sum(rss_kb(c) for c in _children(proc.pid))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    by_package: Counter[str] = Counter()
    modules = 0
    for line in err.read_text(errors="replace").splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line.split("|")
        try:
            self_us = int(parts[0].split(":")[1])
        except ValueError:
            continue
        name = parts[2].strip()
        modules += 1
        by_package[name.split(".")[0]] += self_us / 1e6
    return kb / 1024, dict(by_package), modules


def _children(pid: int) -> list[int]:
    import os

    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def idle_bot(rounds: int) -> None:
    import statistics

    rows: dict[str, list[tuple[float, dict[str, float], int]]] = {"before": [], "after": []}
    for i in range(rounds):
        for variant in (("before", "after") if i % 2 == 0 else ("after", "before")):
            with tempfile.TemporaryDirectory(prefix="idle-bot-") as name:
                got = idle_bot_once(Path(name), eager_sdk=variant == "before")
            rows[variant].append(got)
            print(f"round {i + 1} {variant}: idle bot RSS {got[0]:.1f} MB, {got[2]} modules imported", flush=True)
    mb = {v: statistics.median(r[0] for r in rs) for v, rs in rows.items()}
    for variant, rs in rows.items():
        modules = statistics.median(r[2] for r in rs)
        packages: Counter[str] = Counter()
        for _, by, _ in rs:
            packages.update({k: v / rounds for k, v in by.items()})
        print(f"{variant}: idle `flower-bot web --demo` RSS p50 {mb[variant]:.1f} MB over {rounds} starts, "
              f"{modules:.0f} modules; import seconds by package (mean, self time): "
              + ", ".join(f"{k} {v:.3f}" for k, v in packages.most_common(10)))
    print(f"after/before: {mb['after'] / mb['before']:.2f}x")
    print(f"command: .venv/bin/python -m bench.bench_parked_memory --idle-bot {rounds}")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if "--idle-bot" in args:
        idle_bot(next((int(a) for a in args if a.isdigit()), 3))
        return
    sizes = [int(a) for a in args if a.isdigit()] or [1000]
    if len(sizes) == 1:
        _table([asyncio.run(run_one(sizes[0], "--trace" in args))], args)
        return
    for n in sizes:  # one child process per size: a clean heap each (each prints its own table)
        cmd = [sys.executable, "-m", "bench.bench_parked_memory", str(n), *(a for a in args if not a.isdigit())]
        try:
            subprocess.run(cmd, cwd=Path(__file__).resolve().parents[1], timeout=max(1800, n * 0.2), check=False)
        except subprocess.TimeoutExpired:
            print(f"N={n}: the child process did not finish in time")


if __name__ == "__main__":
    main()
