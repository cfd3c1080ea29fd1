"""The original flower's runtime defaults and knobs, on flower_core (issue 24, second pass).

    Resilience       6 attempts, 4 s doubling to 120 s, "fatal", and the network probe: a connection
                     error waits for the endpoint (DNS + TCP) before the next attempt
    FLOWER_WINDOW    the window from the environment, over the model-name guess, under an explicit one
    Runtime          portable / trim / ephemeral / keep_denials / spill_threshold, run(resume_at=)
    starter_flow     isolate= (a git work tree, the worker in a worktree, the desk outside), judge_can_run=

The probe is driven for real: a 127.0.0.1 port where nothing listens, then a forwarder to the model
double opened on that port once the runtime says it is waiting; the real CLI's next attempt gets through.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flower_core import HandoffPolicy, Resilience, Runtime, classify, default_window, starter_flow, wants_isolation
from tests.conftest import scenario_of
from tests.support.runtime_support import Recorder, make_runtime, spec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def forward_to(port: int, target: tuple[str, int]) -> asyncio.Server:
    """A TCP forwarder on 127.0.0.1:``port`` to ``target``: the network "coming back"."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*target)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    return await asyncio.start_server(handle, "127.0.0.1", port)


def test_resilience_has_the_originals_defaults_and_says_fatal() -> None:
    r = Resilience()
    assert (r.max_attempts, r.base_delay, r.max_delay, r.jitter) == (6, 4.0, 120.0, 0.25)
    assert (r.probe_timeout, r.probe_interval, r.max_offline_wait) == (5.0, 15.0, 3600.0)
    assert all(3.0 <= r.delay_for(1) <= 5.0 for _ in range(20))
    assert all(90.0 <= r.delay_for(9) <= 150.0 for _ in range(20))
    assert classify("API Error: 401 authentication failed (connection closed)") == "fatal"
    assert classify("Connection error. ECONNRESET") == "transient"
    assert classify("something odd") == "unknown" and classify(None) == "unknown"
    assert not r.should_retry("fatal") and not r.should_retry("permanent")


async def test_wait_online_gives_up_after_max_offline_wait() -> None:
    port = free_port()
    policy = Resilience(probe_interval=0.05, probe_timeout=1.0, max_offline_wait=0.3)
    heard: list[str] = []
    loop = asyncio.get_running_loop()
    started = loop.time()
    online = await asyncio.wait_for(
        policy.wait_online(heard.append, env={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}), 30)
    assert online is False and loop.time() - started >= 0.3
    assert len(heard) == 1 and "unreachable" in heard[0] and str(port) in heard[0]


async def test_wait_online_returns_as_soon_as_the_endpoint_answers() -> None:
    port = free_port()
    policy = Resilience(probe_interval=0.05, probe_timeout=1.0, max_offline_wait=60.0)
    heard: list[str] = []
    down = asyncio.Event()

    def notify(line: str) -> None:
        heard.append(line)
        down.set()

    waiting = asyncio.create_task(policy.wait_online(notify, env={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}))
    await asyncio.wait_for(down.wait(), 30)
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", port)
    try:
        assert await asyncio.wait_for(waiting, 30) is True
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), 10)
    assert [("unreachable" in h, "again" in h) for h in heard] == [(True, False), (False, True)]


async def test_a_connection_error_waits_for_the_network_then_resumes(double_factory: Any, cli_home: Path,
                                                                     tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Back online."}]}))
    port = free_port()
    env = {**md.env(cli_home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}
    policy = Resilience(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=0.0, probe_interval=0.1,
                        max_offline_wait=120.0, idle_timeout=120.0)
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", env=env, resilience=policy)
    rec = Recorder()
    offline = asyncio.Event()
    server: asyncio.Server | None = None

    def on_event(ev: Any) -> None:
        rec(ev)
        if ev.kind == "retry" and ev.payload.get("offline"):
            offline.set()

    try:
        run = asyncio.create_task(rt.run(spec(), "go", on_event=on_event))
        await asyncio.wait_for(offline.wait(), 120)
        assert not run.done() and md.model_requests() == []
        host, md_port = md.base_url.split("//", 1)[1].split(":")
        server = await forward_to(port, (host, int(md_port.rstrip("/"))))
        r = await asyncio.wait_for(run, 180)
    finally:
        rt.close()
        if server is not None:
            server.close()
    assert r.ok and r.text == "Back online.", r.error
    lines = [e.text for e in rec.kinds("retry") if e.payload.get("offline")]
    assert len(lines) == 2 and "unreachable" in lines[0] and "again" in lines[1]


async def test_a_connection_error_fails_when_the_network_stays_down(double_factory: Any, cli_home: Path,
                                                                    tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "never"}]}))
    env = {**md.env(cli_home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{free_port()}"}
    policy = Resilience(base_delay=0.01, max_delay=0.05, jitter=0.0, probe_interval=0.05, max_offline_wait=0.3,
                        idle_timeout=120.0)
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", env=env, resilience=policy)
    try:
        r = await asyncio.wait_for(rt.run(spec(), "go"), 180)
    finally:
        rt.close()
    assert not r.ok and r.attempts == len(r.errors) == 1 and "stayed unreachable" in (r.error or "")


def test_flower_window_in_the_environment_sets_the_window(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no calibration from a real home
    monkeypatch.delenv("FLOWER_WINDOW", raising=False)
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-opus-4-5[1m]")
    assert default_window() == 1_000_000
    monkeypatch.setenv("FLOWER_WINDOW", "300000")
    assert default_window() == 300_000 and default_window("claude-haiku-4-5") == 300_000
    assert default_window(env={"FLOWER_WINDOW": "150000"}) == 150_000  # the runtime's env comes first
    assert HandoffPolicy().window_for(None) == 300_000
    assert HandoffPolicy(window=50_000).window_for(None) == 50_000  # an explicit window (--window) wins
    for bad in ("0", "-5", "lots", "1.5"):
        monkeypatch.setenv("FLOWER_WINDOW", bad)
        assert default_window() == 1_000_000, bad


async def test_resume_at_goes_on_from_an_earlier_message_of_the_session(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "reply one"}, {"say": "reply two"}, {"say": "reply three"}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        first = await rt.run(spec(), "prompt one")
        second = await rt.run(spec(), "prompt two", resume=first.session_id)
        assert first.ok and second.ok and second.session_id == first.session_id
        entries = await rt.store.load({"project_key": rt.project_key, "session_id": first.session_id})
        ones = [e for e in entries or [] if e.get("type") == "assistant" and "reply one" in json.dumps(e)]
        assert ones, "the first reply is in the stored session"
        third = await rt.run(spec(), "prompt three", resume=first.session_id, fork=True,
                             resume_at=str(ones[-1]["uuid"]))
    finally:
        rt.close()
    assert third.ok, third.error
    history = json.dumps(md.model_requests()[-1].body["messages"], ensure_ascii=False)
    assert "prompt one" in history and "reply one" in history and "prompt three" in history
    assert "prompt two" not in history and "reply two" not in history


def test_runtime_takes_the_originals_store_and_spill_knobs(tmp_path: Path) -> None:
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", portable=False, trim=True, ephemeral=False,
                 keep_denials=0, spill_threshold=None)
    try:
        assert (rt.portable, rt.trim, rt.ephemeral, rt.keep_denials, rt.spill_threshold) == (False, True, False, 0,
                                                                                              None)
    finally:
        rt.close()
    plain = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs2")
    try:
        assert (plain.portable, plain.trim, plain.ephemeral, plain.keep_denials, plain.spill_threshold) == (
            True, False, True, 1, 4000)
    finally:
        plain.close()
    for bad in ({"keep_denials": -1}, {"keep_denials": 1.5}, {"spill_threshold": -1}, {"spill_threshold": "big"}):
        with pytest.raises(ValueError):
            Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs3", **bad)
    assert not (tmp_path / "runs3").exists()  # bad input changes nothing


def test_starter_flow_isolate_needs_git_and_gives_the_worker_a_worktree(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ValueError, match="git work tree"):
        starter_flow("build X", workspace=plain, run_dir=tmp_path / "runs", isolate=True)
    assert list(plain.iterdir()) == [] and not (tmp_path / ".flower-plain").exists()  # nothing touched

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    wf = starter_flow("build X", workspace=repo, run_dir=tmp_path / "runs", isolate=True, judge_can_run=True)
    assert wf.workbench.root.is_relative_to(tmp_path / ".flower-repo") and not wf.workbench.root.is_relative_to(repo)
    work = wf.steps[-1].spec
    assert wants_isolation(work.agents["worker"]) and str(wf.workbench.root) in work.add_dirs
    guard = work.hooks["PreToolUse"][-1].hooks[0]
    out = asyncio.run(guard({"tool_name": "Agent", "tool_input": {"subagent_type": "worker", "prompt": "go"}},
                            None, None))
    assert out["hookSpecificOutput"]["updatedInput"]["isolation"] == "worktree"
    judge = wf.steps[-1].gate.spec
    assert "Bash" in judge.allowed_tools and "Bash" in (judge.tools or [])
    assert not {"Write", "Edit"} & set(judge.tools or [])

    default = starter_flow("build X", workspace=repo, run_dir=tmp_path / "runs2")
    assert not wants_isolation(default.steps[-1].spec.agents["worker"])
    assert "Bash" not in default.steps[-1].gate.spec.allowed_tools
