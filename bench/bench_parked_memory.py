"""Parked runs at scale (issue 23, "park cold"): what one parked run costs the bot process when N are parked.

Starting N real CLIs is far too slow for N = 10,000, so one real run asks its question on the model double
and parks (park_after_s 0.2 s, as bench_parking), and its hub closes. Its state - the run directory and
workspace (session store, manifest, lineage, park record, card ledger) and its rows in the SQLite state store -
is copied N times under new run ids, session ids, threads and message ids, every id and path rewritten. A
fresh Hub over that state (this process) brings the N back by itself (`Hub.recover`: restored parked, no CLI,
the question open on its old card). Checked first on three copies: each comes back exactly as the original
does after a restart, none starts a CLI, and answering one resumes it and reaches the model double.
Printed per N: how many came back parked and how long that took, and above a baseline hub over an empty state
(gc.collect() first): RSS per parked run (target <= 0.2 MB), open fds per run (target 0), asyncio tasks per run
and which they are; --trace adds the top tracemalloc sites and object types per run (tracing inflates RSS).
Several N run in one child process each, so one size's freed heap does not hide the next one's growth.
Run: .venv/bin/python -m bench.bench_parked_memory [N ...] [--trace]   (default: 1000)
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from claude_agent_sdk import project_key_for_directory

from adapters.hub import Hub, HubSettings
from adapters.memory_surface import MemorySurface
from adapters.state import RunRecord, SQLiteStateStore
from adapters.surface import ThreadRef
from adapters.transport import LocalTransport
from adapters.transport.engine import EngineKit
from adapters.view import ViewConfig
from bench.bench_parking import PARK_AFTER_S, SCENARIO, _factory, _fds, _tree_rss_kb
from bench.procfs import rss_kb
from flower_core.devmodel import ModelDouble

TARGET_MB = 0.2
CHANNELS = 50  # copied runs' threads spread over this many channels
VERIFY = 3  # copies checked against the original before measuring
SESSIONS = "sessions.db"
Swaps = list[tuple[str, str]]


def _hub(root: Path, store: SQLiteStateStore, md: ModelDouble, cli: Path) -> Hub:
    """A bot process's hub: a fresh surface each time (keep=False: edits of an old message id just pass)."""
    settings = HubSettings(root=root, max_runs=4, max_parked=1_000_000, park_after_s=PARK_AFTER_S,
                           view=ViewConfig(status_every_s=30.0, prose_linger_s=1.0))
    kit = EngineKit(factory=_factory, env=md.env(cli))
    return Hub(MemorySurface(record=False, keep=False), store, settings, kit=kit)


async def _until(done: Callable[[], bool], deadline_s: float, say: Callable[[float], str] | None = None) -> bool:
    """Poll `done` until it holds (True) or the deadline passes (False); `say` prints progress every 15 s."""
    t0 = time.monotonic()
    told = t0
    while not done():
        now = time.monotonic()
        if now - t0 >= deadline_s:
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


def _swap_db(path: Path, swaps: Swaps) -> None:
    """Rewrite every TEXT column of every table of an SQLite file (a session store: keys, cwd, session ids)."""
    con = sqlite3.connect(path)
    try:
        with con:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"
                                                " AND name NOT LIKE 'sqlite_%'")]
            for table in tables:
                cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})") if r[2].upper() == "TEXT"]
                for old, new in swaps:
                    sets = ", ".join(f"{c} = replace({c}, ?, ?)" for c in cols)
                    con.execute(f"UPDATE {table} SET {sets}", (old, new) * len(cols))
    finally:
        con.close()


@dataclass
class Template:
    """The one real parked run: where it lives, its session id, its state-store rows (table -> cols, rows)."""

    root: Path
    run: RunRecord
    sid: str
    rows: dict[str, tuple[list[str], list[tuple[object, ...]]]]

    @property
    def base(self) -> Path:
        return self.root / self.run.run_id

    def copy(self, root: Path, db: Path, n: int) -> list[str]:
        """N copies under `root`, their rows in the state store at `db`; returns their run ids."""
        files = [(p.relative_to(self.base), p.read_text(encoding="utf-8")) for p in sorted(self.base.rglob("*"))
                 if p.is_file() and not p.name.startswith(SESSIONS)]
        dirs = [p.relative_to(self.base) for p in self.base.rglob("*") if p.is_dir()]
        old_pk, seq = project_key_for_directory(self.run.workspace), itertools.count(1)
        SQLiteStateStore(db).close()  # the schema
        con, ids = sqlite3.connect(db), list[str]()
        try:
            with con:
                for i in range(n):
                    rid = f"r{i:08x}"
                    base = root / rid
                    for d in dirs:
                        (base / d).mkdir(parents=True, exist_ok=True)
                    workspace = Path(self.run.workspace.replace(str(self.base), str(base)))
                    swaps = [(old_pk, project_key_for_directory(str(workspace))), (str(self.base), str(base)),
                             (self.sid, str(uuid.uuid4()))]
                    for rel, text in files:
                        (base / _swap(str(rel), swaps)).write_text(_swap(text, swaps), encoding="utf-8")
                    sessions = Path(_swap(self.run.run_dir, swaps)) / SESSIONS
                    shutil.copyfile(Path(self.run.run_dir) / SESSIONS, sessions)
                    _swap_db(sessions, swaps)
                    thread = str(ThreadRef("memory", f"C{i % CHANNELS}", f"t{i}"))
                    for table, (cols, rows) in self.rows.items():
                        for row in rows:
                            pairs = zip(cols, row, strict=True)
                            values = [rid if c == "run_id" else thread if c == "thread" else f"{v}.{i}" if c in
                                      ("message_id", "iid") else next(seq) if c == "seq" else
                                      _swap(v, swaps) if isinstance(v, str) else v for c, v in pairs]
                            con.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                        values)
                    ids.append(rid)
        finally:
            con.close()
        return ids


def _rows(db: Path, run: RunRecord) -> dict[str, tuple[list[str], list[tuple[object, ...]]]]:
    """The run's rows in every table of the state store that names a run id or a thread."""
    con = sqlite3.connect(db)
    try:
        out: dict[str, tuple[list[str], list[tuple[object, ...]]]] = {}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"):
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
        started = await hub.start("pick a colour", ThreadRef("memory", "C0", "template"), "bench")
        run_id = started.run_id
        if not started.ok or run_id is None:
            raise RuntimeError(started.message)
        if not await _until(lambda: run_id in hub.parked(), 120):
            raise RuntimeError("the template run did not park within 120 s")
    finally:
        await _close(hub, store)
    run = SQLiteStateStore(tmp / "state.db")
    record = run.get_run(run_id)
    run.close()
    if record is None:
        raise RuntimeError("the template run has no record")
    (sid,) = [p.stem for p in (Path(record.run_dir) / "parked").glob("*.json")]
    con = sqlite3.connect(Path(record.run_dir) / SESSIONS)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("VACUUM")
    con.close()
    return Template(tmp / "runs", record, sid, _rows(tmp / "state.db", record))


def _text_of(path: Path) -> str:
    """A file as text; an SQLite file as its SQL dump (its free pages may still hold rewritten bytes)."""
    if path.suffix != ".db":
        return path.read_text(encoding="utf-8")
    con = sqlite3.connect(path)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def _signature(hub: Hub, run_id: str) -> tuple[object, ...]:
    """How a restored run stands: its status, card, ledger, the channel's open question, its park record."""
    live, record = hub.live.get(run_id), hub.store.get_run(run_id)
    if live is None or record is None:
        return ("not live", None if record is None else str(record.status))
    engine = hub.transport.engines.get(run_id) if isinstance(hub.transport, LocalTransport) else None
    channel = engine.channel if engine is not None else None
    asks = [(a.question, list(a.options), a.state) for a in channel.pending()] if channel is not None else []
    cards = [(c.card_id, c.question, list(c.options), c.state, c.note) for c in live.view.open_cards()]
    return (str(record.status), live.parked, live.view.status_card.state, cards, asks,
            [c.card_id for c in live.ledger.open_cards()], len(list((Path(record.run_dir) / "parked").glob("*.json"))))


async def verify(tmp: Path, md: ModelDouble, t: Template, cli: Path) -> None:
    """The original restarted, then VERIFY copies: the same; no CLI; answering one reaches the model."""
    store = SQLiteStateStore(t.root.parent / "state.db")
    hub = _hub(t.root, store, md, cli)
    try:
        await asyncio.wait_for(hub.recover(), 60)
        if not await _until(lambda: t.run.run_id in hub.parked(), 60):
            raise RuntimeError(f"the original did not come back parked: {_signature(hub, t.run.run_id)}")
        want = _signature(hub, t.run.run_id)
    finally:
        await _close(hub, store)
    ids = t.copy(tmp / "runs", tmp / "state.db", VERIFY)
    stale = [p for p in (tmp / "runs").rglob("*") if p.is_file() and any(
        old in _text_of(p) for old in (t.run.run_id, t.sid, str(t.root)))]
    if stale:
        raise AssertionError(f"copies still name the original: {stale}")
    md.requests.clear()
    store = SQLiteStateStore(tmp / "state.db")
    hub = _hub(tmp / "runs", store, md, cli)
    try:
        died = await asyncio.wait_for(hub.recover(), 60)
        await _until(lambda: len(hub.parked()) >= VERIFY, 60)
        got = {rid: _signature(hub, rid) for rid in ids}
        if died or md.requests or any(sig != want for sig in got.values()):
            raise AssertionError(f"copies not restored like the original {want}: {got}, died {died}, "
                                 f"{len(md.requests)} model requests")
        token = "copy-answer"
        done = await hub.answer(ids[0], "1-q1", token, "bench")
        if not done.ok:
            raise AssertionError(f"answering a copy: {done.message}")
        await md.wait_for(lambda reqs: any(r.last_tool_result == token for r in reqs), 120)
        await asyncio.wait_for(hub.wait(ids[0]), 120)
        status = [str(r.status) for r in store.list_runs()]
    finally:
        await _close(hub, store)
    print(f"verified on {VERIFY} copies: each restored like the original after a restart {want}; no model request "
          f"before an answer; the answered copy resumed, the model got its answer, runs now {sorted(status)}")


@dataclass
class Row:
    n: int
    back: int = 0
    took_s: float = 0.0
    mb: float = 0.0
    fds: float = 0.0
    tasks: float = 0.0
    copy_s: float = 0.0
    died: int = 0
    requests: int = 0
    clis: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, float] = field(default_factory=dict)
    note: str = ""


def _task_kinds() -> Counter[str]:
    return Counter(getattr(t.get_coro(), "__qualname__", t.get_name()) for t in asyncio.all_tasks())


def _types() -> Counter[str]:
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


async def measure(tmp: Path, md: ModelDouble, t: Template, cli: Path, n: int, trace: bool) -> Row:
    row, t0 = Row(n), time.perf_counter()
    t.copy(tmp / "runs", tmp / "state.db", n)
    row.copy_s = time.perf_counter() - t0
    print(f"N={n}: copied the parked run {n} times in {row.copy_s:.0f} s", flush=True)
    empty = SQLiteStateStore(tmp / "empty" / "state.db")
    hub = _hub(tmp / "empty" / "runs", empty, md, cli)
    await asyncio.wait_for(hub.recover(), 60)
    gc.collect()
    base_kb, base_fds, base_kinds, base_types = rss_kb(), _fds(), _task_kinds(), _types() if trace else Counter()
    await _close(hub, empty)
    if trace:
        tracemalloc.start()
    store = SQLiteStateStore(tmp / "state.db")
    hub = _hub(tmp / "runs", store, md, cli)
    md.requests.clear()
    deadline = max(120.0, n * 0.12)
    try:
        t0 = time.perf_counter()
        row.died = len(await asyncio.wait_for(hub.recover(), deadline))
        if not await _until(lambda: len(hub.parked()) >= n - row.died, deadline - (time.perf_counter() - t0),
                            lambda s: f"{len(hub.parked())}/{n} back parked after {s:.0f} s"):
            row.note = f"deadline {deadline:.0f} s passed"
        row.took_s, row.back = time.perf_counter() - t0, len(hub.parked())
        gc.collect()
        kinds = _task_kinds() - base_kinds
        row.mb, row.fds = (rss_kb() - base_kb) / n / 1024, (_fds() - base_fds) / n
        row.tasks, row.kinds = kinds.total() / n, {k: v / n for k, v in kinds.most_common(8)}
        row.requests, row.clis = len(md.requests), _tree_rss_kb()[1]
        row.statuses = dict(Counter(str(r.status) for r in store.list_runs()))
        if trace:
            _print_trace(n, tracemalloc.take_snapshot(), _types() - base_types)
            tracemalloc.stop()
    finally:
        await _close(hub, store)
    return row


def _print_trace(n: int, snap: tracemalloc.Snapshot, types: Counter[str]) -> None:
    snap = snap.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__),
                               tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")])
    stats = snap.statistics("lineno")
    total = sum(s.size for s in stats)
    print(f"tracemalloc (N={n}): {total / n / 1024:.1f} kB per parked run alive since the hub began; top sites:")
    for s in stats[:15]:
        f = s.traceback[0]
        where = f.filename.split("/site-packages/")[-1].replace(str(Path(__file__).resolve().parents[1]) + "/", "")
        print(f"  {s.size / n / 1024:7.2f} kB/run {s.count / n:6.1f} blocks/run  {where}:{f.lineno}")
    print("object types (gc-tracked) added per parked run:")
    for name, count in types.most_common(15):
        print(f"  {count / n:6.1f}  {name}")


async def run_one(n: int, trace: bool) -> Row:
    with tempfile.TemporaryDirectory(prefix="parked-") as name:
        tmp = Path(name)
        async with ModelDouble(SCENARIO) as md:
            template = await make_template(tmp / "template", md, tmp / "cli")
            await verify(tmp / "verify", md, template, tmp / "cli")
            return await measure(tmp / "measure", md, template, tmp / "cli", n, trace)


def _table(rows: list[Row], argv: list[str]) -> None:
    print(f"\n{'N':>6} | came back parked | restore s | MB per parked run | fds per run | tasks per run | "
          f"MB/run / {TARGET_MB} MB target")
    for r in rows:
        print(f"{r.n:>6} | {r.back:>7} of {r.n:<6} | {r.took_s:9.1f} | {r.mb:17.4f} | {r.fds:11.3f} | "
              f"{r.tasks:13.2f} | {r.mb / TARGET_MB:6.2f}x {r.note}")
    for r in rows:
        print(f"N={r.n}: store statuses {r.statuses}, died {r.died}, model requests while restoring {r.requests}, "
              f"CLI children {r.clis}, copies made in {r.copy_s:.0f} s; tasks per run: "
              + ", ".join(f"{k} {v:.2f}" for k, v in r.kinds.items()))
    print("command: .venv/bin/python -m bench.bench_parked_memory " + " ".join(argv))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    trace, out = "--trace" in args, args[args.index("--row") + 1] if "--row" in args else ""
    sizes = [int(a) for a in args if a.isdigit() and a != out] or [1000]
    shown = [a for a in args if a not in ("--row", out)]
    if len(sizes) == 1:
        row = asyncio.run(run_one(sizes[0], trace))
        if out:
            Path(out).write_text(json.dumps(asdict(row)), encoding="utf-8")
        else:
            _table([row], shown)
        return
    rows = []
    for n in sizes:  # one child process per size: a clean heap each
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            cmd = [sys.executable, "-m", "bench.bench_parked_memory", str(n), *(["--trace"] if trace else []),
                   "--row", f.name]
            try:
                subprocess.run(cmd, cwd=Path(__file__).resolve().parents[1], timeout=max(1800, n * 0.2), check=True)
                rows.append(Row(**json.loads(Path(f.name).read_text(encoding="utf-8"))))
            except (subprocess.SubprocessError, ValueError) as exc:
                rows.append(Row(n, note=f"child failed: {exc}"))
    _table(rows, shown)


if __name__ == "__main__":
    main()
