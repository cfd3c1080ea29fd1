"""A workflow driven through the terminal front end: `flower go`, `flower run` and `flower demo` end here."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
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


async def run_starter(task: str, *, workspace: Path, run_dir: Path, timeout_s: float, max_asks: int | None,
                      window: int | None, handoff: bool, env: dict[str, str] | None = None,
                      render: Render | None = None, budget_usd: float | None = None, approve: str = "",
                      rounds: int = 3, goal: bool = True, clarify_only: bool = False, new: bool = False,
                      isolate: bool = False, judge_can_run: bool = False, trim: bool = True,
                      language: str = "en") -> int:
    """Build starter_flow + Runtime + Oracle and drive them through the terminal. Returns the exit code.
    ``approve``: the tools to ask about at the prompt before they run ("bash,edits"). ``rounds`` … ``judge_can_run``
    go to starter_flow; ``trim`` to the Runtime (on by default here, as the original's `go`); ``language`` is
    what the agent is told things in (flower_core.lang; English here, the framework's own default is Chinese)."""
    from adapters.transport.plan import BOT_STEPS
    from flower_core import BudgetError, starter_flow

    render = render or Render()
    check_budget(budget_usd)
    approvals = approvals_of(approve)
    workspace.mkdir(parents=True, exist_ok=True)
    try:
        wf = starter_flow(task, workspace=workspace, run_dir=run_dir, timeout_s=timeout_s, max_asks=max_asks,
                          budget_usd=budget_usd, approvals=approvals, rounds=rounds, goal=goal,
                          clarify_only=clarify_only, new=new, isolate=isolate, judge_can_run=judge_can_run,
                          step_names=BOT_STEPS, language=language)
    except BudgetError as exc:
        raise UsageError(f"flower: {exc}") from exc
    except ValueError as exc:
        if isolate and "git" in str(exc):  # --isolate outside a git work tree: say so, touch nothing
            raise UsageError(f"flower: {exc}") from exc
        raise _nothing_to_do() from exc
    if timeout_s > 0 and not (sys.stdin is not None and sys.stdin.isatty()):
        render.say("! stdin is not a terminal: nobody can answer questions here. Add --timeout 0 to let it "
                   "decide for itself.", "warn")
    return await drive_workflow(wf, workspace=workspace, run_dir=run_dir, window=window, handoff=handoff, env=env,
                                render=render, trim=trim)


def _nothing_to_do() -> UsageError:
    return UsageError('flower: nothing to do here. Give it a task, e.g. flower "add a --json flag to the '
                      'report", or run it in a workspace with an earlier brief to continue.')


async def drive_workflow(wf: Any, *, workspace: Path, run_dir: Path, window: int | None = None,
                         handoff: bool = True, env: dict[str, str] | None = None, render: Render | None = None,
                         trim: bool = False) -> int:
    """A Runtime + Oracle for ``wf`` (its own workbench and channel, when it has them), driven through the
    terminal: `flower go` and `flower run` both end here. Returns the exit code."""
    from adapters.transport.engine import bridge_resilience
    from flower_core import Oracle, Runtime

    render = render or Render()
    workspace.mkdir(parents=True, exist_ok=True)
    workbench = getattr(wf, "workbench", None)
    runtime_kwargs: dict[str, Any] = {"workspace": workspace, "run_dir": run_dir, "workbench": workbench,
                                      "handoff": handoff, "env": env, "resilience": bridge_resilience(),
                                      "trim": trim,  # FLOWER_STREAM=1: the agent's words print as they are written
                                      "partial_text": os.environ.get("FLOWER_STREAM", "") in ("1", "true", "yes")}
    if window:
        runtime_kwargs["window"] = window
    rt = Runtime(**runtime_kwargs)
    oracle = Oracle(workspace=workspace, run_dir=run_dir, workbench=workbench, env=env,
                    budget=getattr(wf, "budget", None))
    try:
        return await Controller(rt, render, channel=getattr(wf, "channel", None), oracle=oracle).drive(wf)
    finally:
        oracle.close()
        rt.close()
