"""The cost cap in a pseudo-terminal: `flower demo --budget 1` asks at its prompt, like any question.

The demo plays tests/support/scenarios/terminal_budget.toml on its own model double; the model is pinned to
Sonnet through ANTHROPIC_MODEL so the CLI's figures are fixed (see the scenario's header).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pexpect

from tests.e2e.test_flower_cli import ROOT, SCENARIOS, TIMEOUT, clean_env, finish


def spawn_budget(tmp_path: Path, *args: str) -> tuple[pexpect.spawn, Path]:
    ws = tmp_path / "ws"
    env = {**clean_env(tmp_path), "ANTHROPIC_MODEL": "claude-sonnet-4-5"}
    child = pexpect.spawn(sys.executable, ["-m", "bots.flower_cli", "demo", "--scenario",
                                           str(SCENARIOS / "terminal_budget.toml"), "-w", str(ws), *args],
                          cwd=str(ROOT), env=env, encoding="utf-8", timeout=TIMEOUT, dimensions=(50, 200))
    return child, ws


def test_the_budget_question_is_answered_at_the_prompt_and_the_run_goes_on(tmp_path: Path) -> None:
    child, ws = spawn_budget(tmp_path, "--budget", "1", "--timeout", "60")
    child.logfile_read = log = io.StringIO()
    try:
        child.expect("- cost cap \\$1.00: when the run reaches it, it pauses and asks you here")
        child.expect("=== work \\(3/3\\) ===")
        child.expect("  \\$ Budget reached: spent \\$1.21 of the \\$1.00 cost cap — paused")
        child.expect("     1\\) \\+\\$5   \\(cap \\$6.00\\)")
        child.expect("     3\\) Stop")
        child.expect("Enter alone stops the run")
        child.sendline("1")
        child.expect("  \\+ answered: \\+\\$5")
        child.expect("  \\$ cap raised to \\$6.00 — going on in the same session")
        child.expect("Carrying on: The run paused at its cost cap; the human raised the cap to \\$6.00")
        child.expect("\\+ finished · cost \\$1.2\\d+ \\(cap \\$6.00\\)")
        assert finish(child) == 0
    finally:
        child.close(force=True)
    out = log.getvalue()
    assert "Looking closer." in out and out.index("Looking closer.") < out.index("Budget reached")
    rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    work = [r for r in rows if r["step"] == "work"]
    assert work and work[-1]["ok"] is True and work[-1]["attempts"] == 1  # one session, paused and resumed


def test_enter_alone_stops_the_run_at_its_cap(tmp_path: Path) -> None:
    child, ws = spawn_budget(tmp_path, "--budget", "1", "--timeout", "60")
    try:
        child.expect("Enter alone stops the run")
        child.sendline("")
        child.expect("  ! budget question skipped — the run stops at its cost cap")
        child.expect("  x stopped at the cost cap: \\$1.21 spent of a \\$1.00 cap — the question was declined")
        child.expect("x failed at step 'work'")
        assert finish(child) == 1
    finally:
        child.close(force=True)
    rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert [r["step"] for r in rows] == ["clarify", "goal", "work"]  # no judge ran after the stop


def test_a_budget_of_zero_refuses_to_start(tmp_path: Path) -> None:
    env = {**clean_env(tmp_path), "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}  # credentials present, never used
    child = pexpect.spawn(sys.executable, ["-m", "bots.flower_cli", "build it", "--budget", "0", "-w",
                                           str(tmp_path / "ws")], cwd=str(ROOT), env=env, encoding="utf-8",
                          timeout=TIMEOUT)
    try:
        child.expect("flower: --budget 0 lets nothing run, so the run is not started")
        assert finish(child) == 2
    finally:
        child.close(force=True)
    assert not (tmp_path / "ws").exists()
