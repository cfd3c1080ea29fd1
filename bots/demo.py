"""`flower demo`: the whole terminal front end, offline.

The model double (flower_core.devmodel) serves a scripted scenario on 127.0.0.1 inside this process;
the real SDK and its bundled CLI talk to it through the environment handed to the Runtime. So the
demo runs the real machinery (questions, inbox, subagents, the stdin thread) with no key and no cost.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from adapters.terminal import Render
from bots.terminal_run import GO_DRIVE, StarterChoices, language_of, run_starter
from flower_core.devmodel import ModelDouble

DEMO_TASK = "Write a short greeting note in notes.md, then have a worker count its words."
DEMO_TIMEOUT_S = 20.0  # long enough to answer by hand, short enough that nobody typing is no problem


async def run_demo(args: argparse.Namespace) -> int:
    interactive = sys.stdin is not None and sys.stdin.isatty()
    timeout = args.timeout if args.timeout is not None else (DEMO_TIMEOUT_S if interactive else 0.0)
    workspace = Path(args.workspace or tempfile.mkdtemp(prefix="flower-demo-")).resolve()
    run_dir = Path(args.run_dir).resolve() if args.run_dir else workspace / "runs"
    render = Render()
    render.say("flower demo · offline demo — model double, no API key (nothing leaves 127.0.0.1)", "bold")
    render.say(f"- workspace {workspace}", "dim")
    if timeout > 0:
        render.say(f"- when it asks, type a number and Enter (after {timeout:g} s it decides for itself)", "dim")
    else:
        render.say("- unattended: questions settle at once and it decides for itself", "dim")
    with tempfile.TemporaryDirectory(prefix="flower-demo-cli-") as config_dir:
        async with ModelDouble(args.scenario) as md:
            flow = StarterChoices(timeout_s=timeout, max_asks=None if args.asks < 0 else args.asks,
                                  budget_usd=args.budget, language=language_of(args.lang))
            drive = replace(GO_DRIVE, window=args.window, handoff=not args.no_handoff, env=md.env(config_dir))
            return await run_starter(args.task or DEMO_TASK, workspace=workspace, run_dir=run_dir, flow=flow,
                                     drive=drive, render=render)
