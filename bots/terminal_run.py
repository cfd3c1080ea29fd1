"""A workflow driven through the terminal front end: `flower go`, `flower run` and `flower demo` end here.

    flower go / demo ─▶ run_starter(task, workspace, run_dir, flow=StarterChoices, drive=DriveChoices)
                          │ starter_flow(task, …what StarterChoices says)
    flower run ───────────┴▶ drive_workflow(wf, workspace, run_dir, drive=DriveChoices)
                                 Runtime + Oracle (as DriveChoices says) ─▶ adapters.terminal.Controller
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.terminal import Controller, Render


class UsageError(Exception):
    """A problem with what was asked for: printed to stderr, exit code 2."""


def check_budget(budget_usd: float | None) -> None:
    """--budget before anything is created: a negative or non-number cap, or 0, is a usage error."""
    if budget_usd is None:
        return
    if not budget_usd >= 0 or budget_usd == float("inf"):
        raise UsageError(f"flower: --budget must be a number of dollars, 0 or more (got {budget_usd:g}).")
    if budget_usd == 0:
        raise UsageError("flower: --budget 0 lets nothing run, so the run is not started. Give a positive cap "
                         "(e.g. --budget 5), or leave --budget out for no cap.")


def check_plan(plan: bool, *, interactive: bool | None = None) -> None:
    """--plan before anything is created: the plan waits for a person at the prompt (it never times out), and
    piped input cannot answer it (lines read before it shows go to the inbox; at the pipe's end nobody is left),
    so a plan-first run without a terminal would wait forever."""
    if interactive is None:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    if plan and not interactive:
        raise UsageError("flower: --plan waits for you to approve the agent's plan at the prompt, but stdin is not "
                         "a terminal. Run it in a terminal, or leave --plan out.")


def language_of(flag: str | None, env: Mapping[str, str] | None = None) -> str:
    """--lang, else FLOWER_LANG, else English; UsageError naming the flag for a language with no catalogue."""
    from flower_core.lang import available

    value = (flag or (os.environ if env is None else env).get("FLOWER_LANG") or "en").strip().lower()
    if value not in available():
        raise UsageError(f"flower: --lang (or FLOWER_LANG) must be one of {', '.join(available())}, got {value!r}.")
    return value


def approvals_of(approve: str) -> dict[str, Any] | None:
    """--approve's tools as the run's approval settings; UsageError naming a bad rule."""
    from adapters.hub import RunOptions
    from flower_core.permissions import parse_rules

    tools = RunOptions.approve_from(approve)
    if not tools:
        return None
    try:
        parse_rules(list(tools), key="--approve")
    except ValueError as exc:
        raise UsageError(f"flower: {exc}") from exc
    return {"ask_tools": list(tools)}


@dataclass(frozen=True)
class StarterChoices:
    """What `flower go` (and the demo) chooses of starter_flow: how questions wait, the caps, the shape.

    ``approve``: the tools to ask about at the prompt before they run ("bash,edits"); ``rounds`` …
    ``judge_can_run`` go to starter_flow as they are; ``language`` is what the agent is told things in
    (flower_core.lang; English here, the framework's own default is Chinese); ``plan``: the work step plans
    first and changes nothing until its plan is approved at the prompt (starter_flow's ``plan``)."""

    timeout_s: float = 1800.0
    max_asks: int | None = None
    budget_usd: float | None = None
    approve: str = ""
    rounds: int = 3
    goal: bool = True
    clarify_only: bool = False
    new: bool = False
    isolate: bool = False
    judge_can_run: bool = False
    language: str = "en"
    plan: bool = False


@dataclass(frozen=True)
class DriveChoices:
    """How the Runtime that drives a workflow in the terminal is built: its context ``window`` (None: the
    Runtime's default), ``handoff``, the CLI's ``env`` (None: this process's), ``trim`` (trimming store),
    ``model`` / ``effort`` (the run's, over every agent's own; None: theirs or the CLI's)."""

    window: int | None = None
    handoff: bool = True
    env: dict[str, str] | None = None
    trim: bool = False
    model: str | None = None
    effort: str | None = None


# `flower go` trims, as the original's `go` does; `flower run` drives a workflow as given.
GO_DRIVE = DriveChoices(trim=True)


async def run_starter(task: str, *, workspace: Path, run_dir: Path, flow: StarterChoices = StarterChoices(),
                      drive: DriveChoices = GO_DRIVE, render: Render | None = None) -> int:
    """Build starter_flow (as ``flow`` says) + Runtime + Oracle (as ``drive`` says) and drive them through
    the terminal. Returns the exit code."""
    from adapters.transport.plan import BOT_STEPS
    from flower_core import BudgetError, starter_flow

    render = render or Render()
    check_budget(flow.budget_usd)
    check_plan(flow.plan)
    approvals = approvals_of(flow.approve)
    workspace.mkdir(parents=True, exist_ok=True)
    try:
        wf = starter_flow(task, workspace=workspace, run_dir=run_dir, timeout_s=flow.timeout_s,
                          max_asks=flow.max_asks, budget_usd=flow.budget_usd, approvals=approvals, rounds=flow.rounds,
                          goal=flow.goal, clarify_only=flow.clarify_only, new=flow.new, isolate=flow.isolate,
                          judge_can_run=flow.judge_can_run, step_names=BOT_STEPS, language=flow.language,
                          plan=flow.plan)
    except BudgetError as exc:
        raise UsageError(f"flower: {exc}") from exc
    except ValueError as exc:
        if flow.isolate and "git" in str(exc):  # --isolate outside a git work tree: say so, touch nothing
            raise UsageError(f"flower: {exc}") from exc
        raise _nothing_to_do() from exc
    if flow.timeout_s > 0 and not (sys.stdin is not None and sys.stdin.isatty()):
        render.say("! stdin is not a terminal: nobody can answer questions here. Add --timeout 0 to let it "
                   "decide for itself.", "warn")
    return await drive_workflow(wf, workspace=workspace, run_dir=run_dir, drive=drive, render=render)


def _nothing_to_do() -> UsageError:
    return UsageError('flower: nothing to do here. Give it a task, e.g. flower "add a --json flag to the '
                      'report", or run it in a workspace with an earlier brief to continue.')


async def drive_workflow(wf: Any, *, workspace: Path, run_dir: Path, drive: DriveChoices = DriveChoices(),
                         render: Render | None = None) -> int:
    """A Runtime + Oracle for ``wf`` (its own workbench and channel, when it has them), driven through the
    terminal: `flower go` and `flower run` both end here. Returns the exit code."""
    env = drive.env
    from adapters.transport.engine import bridge_resilience
    from flower_core import Oracle, Runtime

    render = render or Render()
    workspace.mkdir(parents=True, exist_ok=True)
    workbench = getattr(wf, "workbench", None)
    runtime_kwargs: dict[str, Any] = {"workspace": workspace, "run_dir": run_dir, "workbench": workbench,
                                      "handoff": drive.handoff, "env": env, "resilience": bridge_resilience(),
                                      "trim": drive.trim, "model": drive.model, "effort": drive.effort,
                                      # FLOWER_STREAM=1: the agent's words print as they are written
                                      "partial_text": os.environ.get("FLOWER_STREAM", "") in ("1", "true", "yes")}
    if drive.window:
        runtime_kwargs["window"] = drive.window
    rt = Runtime(**runtime_kwargs)
    oracle = Oracle(workspace=workspace, run_dir=run_dir, workbench=workbench, env=env,
                    budget=getattr(wf, "budget", None))
    try:
        return await Controller(rt, render, channel=getattr(wf, "channel", None), oracle=oracle).drive(wf)
    finally:
        oracle.close()
        rt.close()
