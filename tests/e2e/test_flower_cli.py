"""`flower` in a pseudo-terminal: the real command, the real CLI, the model double, typed keys.

Each test spawns ``python -m bots.flower_cli`` through pexpect, so stdin is a TTY exactly as for a
person, with HOME and the CLI's config in a temp dir. The demo runs its own model double in-process
(``--scenario`` picks a test scenario from tests/support/scenarios/).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from bots.flower_cli import build_parser, has_credentials, with_default_command
from tests.conftest import scenario_of

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "support" / "scenarios"
TIMEOUT = 30  # per expect(); a whole demo run takes a few seconds


def clean_env(home: Path) -> dict[str, str]:
    """The host environment minus anything that could reach a real model or the real home."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k not in ("XDG_CONFIG_HOME", "FLOWER_ENV")}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), TERM="dumb", PYTHONUNBUFFERED="1")
    return env


def spawn(tmp_path: Path, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(sys.executable, ["-m", "bots.flower_cli", *args], cwd=str(ROOT), env=clean_env(tmp_path),
                          encoding="utf-8", timeout=TIMEOUT, dimensions=(50, 200))
    return child


def demo(tmp_path: Path, scenario: str) -> tuple[pexpect.spawn, Path]:
    ws = tmp_path / "ws"
    return spawn(tmp_path, "demo", "--scenario", str(SCENARIOS / scenario), "-w", str(ws)), ws


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus if child.exitstatus is not None else 128 + (child.signalstatus or 0)


def manifest(ws: Path) -> list[dict[str, object]]:
    return json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))


def test_demo_answer_by_number_inbox_line_and_oracle(tmp_path: Path) -> None:
    child, ws = demo(tmp_path, "terminal_demo.toml")
    child.logfile_read = log = io.StringIO()
    try:
        child.expect("offline demo — model double, no API key")
        child.expect("=== clarify \\(1/3\\) ===")
        child.expect("  \\? Which greeting should the note use\\?")
        child.expect("     2\\) Olá")
        child.expect("Enter alone skips")
        child.sendline("2")
        child.expect("  \\+ answered: Olá")
        child.expect("=== goal \\(2/3\\) ===")  # the brief is on disk now, so the line is appended to it
        child.sendline("please sign it")  # nothing is waiting now: this goes to the inbox
        child.expect("  \\+ queued: please sign it")
        child.sendline("? where are we")
        child.expect("\\+ finished · cost \\$")
        assert finish(child) == 0
    finally:
        child.close(force=True)
    out = log.getvalue()
    assert "The oracle says: the run is past the question" in out  # answered while the run went on
    work, delivered, agent = (out.index(s) for s in ("=== work (3/3) ===", "  + delivered: please sign it",
                                                       "  [Agent] count words"))
    assert work < delivered < agent  # the work step's inbox check took the line
    brief = (ws / ".flower" / "notes" / "brief.md").read_text(encoding="utf-8")
    assert "A note that greets with Olá." in brief  # the model read the option the digit picked
    assert "please sign it" in brief  # the inbox line was appended to the brief
    assert [row["step"] for row in manifest(ws)][:3] == ["clarify", "goal", "work"]
    assert not (ws / "runs" / "manifest.json").read_text().count("oracle")  # the aside has its own books


def test_ctrl_c_warns_then_resumes_with_the_typed_words(tmp_path: Path) -> None:
    child, ws = demo(tmp_path, "terminal_interrupt.toml")
    try:
        child.expect("=== work \\(3/3\\) ===")
        child.expect("Looking around\\.")  # the next model turn is slow: the interrupt lands mid-request
        child.sendcontrol("c")
        child.expect("! Interrupt: a subagent in flight loses its half-done work\\.")
        child.expect("What should it hear\\?")
        child.sendline("use tabs, not spaces")
        child.expect("! interrupting with: use tabs, not spaces")
        # The model hears the words: alone, or (when the Ctrl-C landed after the tool's result reached the
        # session, before the next request) after the hand-over note that says what it had not acted on yet.
        child.expect("Heard you: ")
        child.expect("use tabs, not spaces")
        child.expect("\\+ finished")
        assert finish(child) == 0
    finally:
        child.close(force=True)
    work = [row for row in manifest(ws) if row["step"] == "work"]
    assert work and work[-1]["ok"] is True and work[-1]["attempts"] == 1  # an interrupt is not a failed attempt


def test_second_ctrl_c_leaves_with_130_and_records_the_step(tmp_path: Path) -> None:
    child, ws = demo(tmp_path, "terminal_interrupt.toml")
    try:
        child.expect("Looking around\\.")
        child.sendcontrol("c")
        child.expect("Ctrl-C again = quit")
        child.sendcontrol("c")
        child.expect("! leaving: the step in flight is recorded as killed-by-signal")
        child.expect("! stopped by you")
        assert finish(child) == 130
    finally:
        child.close(force=True)
    assert [(r["step"], r["ok"], r["error"]) for r in manifest(ws)][-1] == ("work", False, "killed-by-signal")


def test_sigterm_rescues_the_step_then_exits(tmp_path: Path) -> None:
    child, ws = demo(tmp_path, "terminal_interrupt.toml")
    try:
        child.expect("Looking around\\.")
        child.kill(signal.SIGTERM)
        child.expect("! leaving")
        assert finish(child) == 128 + signal.SIGTERM
    finally:
        child.close(force=True)
    assert [(r["step"], r["error"]) for r in manifest(ws)][-1] == ("work", "killed-by-signal")


@pytest.mark.parametrize("argv", [["build me a thing"], ["once", "read the repo"]], ids=["go", "once"])
def test_a_real_run_without_a_key_says_how_to_get_one(tmp_path: Path, argv: list[str]) -> None:
    child = spawn(tmp_path, *argv)
    try:
        child.expect("no credentials")
        child.expect("console\\.anthropic\\.com")
        child.expect("flower demo` \\(or `make demo`\\) runs")
        assert finish(child) == 2
    finally:
        child.close(force=True)
    assert not (tmp_path / "runs").exists()


async def test_once_runs_one_step_without_interaction(tmp_path: Path, double_factory: Any) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "One look: {first_user_text}"}]}))
    env = clean_env(tmp_path)
    env.update(md.env(tmp_path / ".claude"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.flower_cli", "once", "how big is it?", "-w", str(tmp_path / "ws"),
        "-r", str(tmp_path / "runs"), cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await proc.communicate()
    text = out.decode()
    assert proc.returncode == 0, err.decode()
    assert "One look: " in text and "how big is it?" in text  # the prompt reached the model and came back
    assert "+ finished" in text and "type any time" not in text  # no input thread on `once`
    rows = json.loads((tmp_path / "runs" / "manifest.json").read_text())
    assert [r["step"] for r in rows] == ["ad-hoc"]


async def test_go_unattended_against_an_endpoint_from_the_environment(tmp_path: Path, double_factory: Any) -> None:
    # The path a real user takes: `flower "task" --timeout 0`, credentials and endpoint from the env.
    md = await double_factory("demo")
    env = clean_env(tmp_path)
    env.update(md.env(tmp_path / ".claude"))
    ws = tmp_path / "ws"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.flower_cli", "write a greeting note", "--timeout", "0", "-w", str(ws),
        "-r", str(ws / "runs"),
        cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await proc.communicate()
    text = out.decode()
    assert proc.returncode == 0, (text[-2000:], err.decode()[-2000:])
    for heading in ("=== clarify (1/3) ===", "=== goal (2/3) ===", "=== work (3/3) ==="):
        assert heading in text
    assert "+ finished" in text and "offline demo" not in text
    assert (ws / ".flower" / "notes" / "brief.md").is_file() and (ws / "notes.md").is_file()
    assert [r["step"] for r in manifest(ws)][:3] == ["clarify", "goal", "work"]


def test_the_default_command_is_go_and_flags_may_come_first() -> None:
    p = build_parser()
    assert with_default_command(["do x"], p) == ["go", "do x"]
    assert with_default_command(["--timeout", "0", "do x"], p) == ["go", "--timeout", "0", "do x"]
    assert with_default_command(["-w", "/tmp", "once", "hi"], p) == ["once", "-w", "/tmp", "hi"]
    assert with_default_command(["--workspace=/tmp", "demo"], p) == ["demo", "--workspace=/tmp"]
    assert with_default_command([], p) == ["go"]
    assert with_default_command(["--help"], p) == ["--help"]
    args = p.parse_args(with_default_command(["fix it", "--timeout", "0", "--asks", "2", "--window", "200000",
                                              "--no-handoff", "-r", "r"], p))
    assert (args.cmd, args.task, args.timeout, args.asks, args.window, args.no_handoff, args.workspace,
            args.run_dir) == ("go", "fix it", 0.0, 2, 200000, True, ".", "r")
    demo_args = p.parse_args(["demo"])
    assert (demo_args.timeout, demo_args.workspace, demo_args.scenario) == (None, None, "demo")


def test_what_counts_as_credentials() -> None:
    assert not has_credentials({})
    assert has_credentials({"ANTHROPIC_API_KEY": "k"})
    assert has_credentials({"ANTHROPIC_AUTH_TOKEN": "t"})
    assert has_credentials({"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"})  # a gateway may need no key
    assert not has_credentials({"ANTHROPIC_API_KEY": ""})


def test_approve_takes_short_names_and_rules_and_refuses_a_bad_one() -> None:
    from bots.terminal_run import UsageError, approvals_of

    args = build_parser().parse_args(["go", "fix it", "--approve", "bash,edits,Bash(git push:*)"])
    assert approvals_of(args.approve) == {"ask_tools": ["Bash", "Edit", "Bash(git push:*)"]}
    assert approvals_of("") is None and build_parser().parse_args(["go", "x"]).approve == ""
    with pytest.raises(UsageError, match="--approve: not a tool rule"):
        approvals_of("bash,rm -rf")


async def flower(tmp_path: Path, md: Any, *args: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    """`python -m bots.flower_cli ARGS` against the model double, stdin closed; (code, stdout, stderr)."""
    env = clean_env(tmp_path)
    env.update(md.env(tmp_path / ".claude"))
    env["PYTHONPATH"] = str(ROOT)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.flower_cli", *args, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return int(proc.returncode or 0), out.decode(), err.decode()


FLOWS = '''
from flower_core import AgentSpec, Step, Workflow

terse = AgentSpec("terse", "answer in one line", max_turns=3)


def main():
    return Workflow([Step("pick", terse, "pick a word"),
                     Step("use", terse, lambda ctx: f"make a sentence with {ctx['pick']}")])
'''


async def test_run_loads_a_workflow_from_a_file_or_a_module_and_runs_it(tmp_path: Path, double_factory: Any) -> None:
    md = await double_factory(scenario_of({"name": "pick", "match": "pick a word", "turn": [{"say": "tulip"}]},
                                          {"name": "use", "match": "make a sentence", "turn": [{"say": "A tulip."}]}))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "flows.py").write_text(FLOWS, encoding="utf-8")
    ws = tmp_path / "ws"
    code, out, err = await flower(tmp_path, md, "run", "flows.py:main", "-w", str(ws), "-r", str(ws / "runs"),
                                  cwd=project)
    assert code == 0, (out[-2000:], err[-2000:])
    assert "=== pick (1/2) ===" in out and "=== use (2/2) ===" in out and "+ finished" in out
    assert "make a sentence with tulip" in md.model_requests("use")[0].first_user_text
    assert [r["step"] for r in manifest(ws)] == ["pick", "use"]
    # The module form, and a target that names nothing: a usage error naming what was looked for.
    code, out, err = await flower(tmp_path, md, "run", "flows:main", "-w", str(ws), "-r", str(ws / "runs2"),
                                  cwd=project)
    assert code == 0, err[-2000:]
    for bad, says in (("flows.py:nothing", "has no attribute 'nothing'"), ("nowhere:main", "no module 'nowhere'"),
                      ("flows.py", "not MODULE:ATTRIBUTE")):
        code, out, err = await flower(tmp_path, md, "run", bad, "-w", str(ws), cwd=project)
        assert code == 2 and says in err, (bad, err)


async def test_once_resumes_and_forks_a_stored_session(tmp_path: Path, double_factory: Any) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "first reply"}, {"say": "second reply"}, {"say": "third reply"}]}))
    ws, runs = tmp_path / "ws", tmp_path / "runs"
    where = ("-w", str(ws), "-r", str(runs))
    assert (await flower(tmp_path, md, "once", "first prompt", *where))[0] == 0
    first = manifest_rows(runs)[-1]["session_id"]
    code, _out, err = await flower(tmp_path, md, "once", "second prompt", "--resume", str(first), *where)
    assert code == 0, err[-2000:]
    history = json.dumps(md.model_requests()[-1].body["messages"], ensure_ascii=False)
    assert "first prompt" in history and "first reply" in history and "second prompt" in history
    assert manifest_rows(runs)[-1]["session_id"] == first
    code, _out, err = await flower(tmp_path, md, "once", "third prompt", "--resume", str(first), "--fork", *where)
    assert code == 0, err[-2000:]
    forked = manifest_rows(runs)[-1]["session_id"]
    assert forked and forked != first and "second reply" in json.dumps(md.model_requests()[-1].body["messages"])
    code, _out, err = await flower(tmp_path, md, "once", "x", "--fork", *where)
    assert code == 2 and "--resume" in err
    code, _out, err = await flower(tmp_path, md, "once", "x", "--resume", "no-such-session", *where)
    assert code == 2 and "no session no-such-session" in err


async def test_go_clarify_only_and_isolate_outside_git(tmp_path: Path, double_factory: Any) -> None:
    md = await double_factory("demo")
    ws = tmp_path / "ws"
    code, out, err = await flower(tmp_path, md, "write a greeting note", "--timeout", "0", "--clarify-only",
                                  "-w", str(ws), "-r", str(ws / "runs"))
    assert code == 0, (out[-2000:], err[-2000:])
    assert [r["step"] for r in manifest(ws)] == ["clarify"] and "=== clarify (1/1) ===" in out
    plain = tmp_path / "not-git"
    code, out, err = await flower(tmp_path, md, "do it", "--timeout", "0", "--isolate", "-w", str(plain),
                                  "-r", str(plain / "runs"))
    assert code == 2 and "git" in err
    assert not (plain / "runs").exists() and not (plain / ".flower").exists()


def manifest_rows(runs: Path) -> list[dict[str, Any]]:
    return json.loads((runs / "manifest.json").read_text(encoding="utf-8"))


def test_go_takes_the_originals_flags() -> None:
    p = build_parser()
    args = p.parse_args(with_default_command(["fix it", "--rounds", "5", "--no-goal", "--judge-can-run", "--isolate",
                                              "--new", "--clarify-only", "--no-trim"], p))
    assert (args.rounds, args.no_goal, args.judge_can_run, args.isolate, args.new, args.clarify_only,
            args.no_trim) == (5, True, True, True, True, True, True)
    plain = p.parse_args(["go", "x"])
    assert (plain.rounds, plain.no_goal, plain.isolate, plain.new, plain.clarify_only, plain.no_trim) == (
        3, False, False, False, False, False)
    assert with_default_command(["run", "flows.py:main"], p) == ["run", "flows.py:main"]
    assert with_default_command(["go", "run"], p) == ["go", "run"]
    once = p.parse_args(["once", "hi", "--resume", "abc", "--fork"])
    assert (once.resume, once.fork) == ("abc", True)


def test_an_unknown_language_is_one_usage_line_before_anything_runs(tmp_path: Path) -> None:
    env = {**clean_env(tmp_path), "ANTHROPIC_API_KEY": "sk-test"}
    for argv, extra in ((["--lang", "fr", "x"], {}), (["demo"], {"FLOWER_LANG": "tlh"})):
        done = subprocess.run([sys.executable, "-m", "bots.flower_cli", *argv, "-w", str(tmp_path / "ws")],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, env={**env, **extra})
        assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
        assert "--lang (or FLOWER_LANG) must be one of en, zh" in done.stderr
        assert not (tmp_path / "ws").exists()


async def test_model_and_effort_reach_every_request(tmp_path: Path, double_factory: Any) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Done."}]}))
    code, _out, err = await flower(tmp_path, md, "once", "hi", "--model", "claude-opus-4-6", "--effort", "low",
                                  "-w", str(tmp_path / "ws"), "-r", str(tmp_path / "runs"))
    assert code == 0, err[-2000:]
    sent = [r.body for r in md.model_requests() if r.body.get("tools")]
    assert sent and all(b["model"] == "claude-opus-4-6" and b["output_config"]["effort"] == "low" for b in sent)
    args = build_parser().parse_args(["go", "x", "--model", "m", "--effort", "max"])
    assert (args.model, args.effort) == ("m", "max")
    with pytest.raises(SystemExit):  # argparse's usage line: an effort it does not know
        build_parser().parse_args(["go", "x", "--effort", "extreme"])
