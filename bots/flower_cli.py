"""`flower`: the command. Parses arguments, checks credentials, builds the run, hands it to the terminal.

    flower "task" [--timeout S] [--asks N] [--budget USD] [--approve TOOLS] [--window T] [--no-handoff] [--lang L]
                  [--rounds N] [--no-goal] [--judge-can-run] [--isolate] [--new] [--clarify-only] [--no-trim]
                  [--plan] [--model NAME] [--effort LEVEL] [-w DIR] [-r DIR]
    flower run MODULE:ATTR [--model NAME] [--effort LEVEL] [-w DIR] [-r DIR]   # a Workflow you wrote
    flower once "prompt" [-t TOOLS] [-i TEXT] [-p MODE] [-b USD] [--resume ID [--fork]] [--model NAME]
                [--effort LEVEL] [-w DIR] [-r DIR]
    flower demo          # offline: a model double plays the model, no API key
    flower setup [--token] [--file PATH]   # keep your key (and endpoint) in ~/.config/flower/.env

Credentials come from the environment, else from FLOWER_ENV's file, ./.env or ~/.config/flower/.env
(bots/env_files.py); the environment always wins.

Exit codes: 0 finished, 1 a step failed, 2 usage or credentials, 130 stopped with Ctrl-C
(128+n when ended by signal n, e.g. 143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from adapters.terminal import EXIT_INTERRUPTED, Render
from bots import env_files, setup_cmd
from bots.credentials import has_credentials
from bots.terminal_run import (
    DriveChoices,
    StarterChoices,
    UsageError,
    check_budget,
    check_plan,
    drive_workflow,
    language_of,
    run_starter,
)

EXIT_USAGE = 2
COMMANDS = ("go", "run", "once", "demo", "setup")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions")

NO_KEY = """\
flower: no credentials — a real run needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway,
with ANTHROPIC_BASE_URL pointing at it).
  Get a key: https://console.anthropic.com/ → Settings → API keys, then run `flower setup` once
  (it keeps the key in ~/.config/flower/.env), or export ANTHROPIC_API_KEY=sk-ant-...
  Try it offline first: `flower demo` (or `make demo`) runs the same machinery against a local
  model double — no key, no network, no cost."""




# -- arguments ---------------------------------------------------------------------------------------
def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-w", "--workspace", default=".", help="the agent's working directory (default: .)")
    p.add_argument("-r", "--run-dir", default="runs",
                   help="session store and manifest, relative to the current directory (default: runs)")


def _model_flags(p: argparse.ArgumentParser) -> None:
    from flower_core.runtime import EFFORTS

    p.add_argument("--model", default=None, metavar="NAME",
                   help="the model every agent of the run uses, e.g. claude-opus-4-6 (default: the CLI's)")
    p.add_argument("--effort", default=None, choices=EFFORTS,
                   help="how hard the model thinks (default: the CLI's)")


def _flow_flags(p: argparse.ArgumentParser, *, timeout: float | None) -> None:
    p.add_argument("--timeout", type=float, default=timeout, metavar="SECONDS",
                   help="how long a question waits for you; 0 = unattended, questions settle at once")
    p.add_argument("--asks", type=int, default=-1, metavar="N",
                   help="question quota: negative = unlimited (default), 0 = no questions")
    p.add_argument("--approve", default="", metavar="TOOLS",
                   help="ask at the prompt before these tool calls run: bash, edits, write, web, all, or rules "
                        "like 'Bash(git push:*)', comma-separated (y once, a for the run, n or words deny)")
    p.add_argument("--window", type=int, default=None, metavar="TOKENS",
                   help="the model's context window (default: FLOWER_WINDOW, else the level last overflowed at, "
                        "else from the model name)")
    p.add_argument("--no-handoff", action="store_true", help="no handoff; fall back to the SDK's own compaction")
    p.add_argument("--lang", default=None, metavar="LANG",
                   help="the language the agent is told things in (its tool results, role rules, note names): "
                        "en (default, or FLOWER_LANG) or zh, the original flower's texts")
    p.add_argument("--budget", type=float, default=None, metavar="USD",
                   help="cost cap in dollars: when the run reaches it, it pauses and asks you (+$5 / +$20 / "
                        "stop) at the prompt; unanswered within --timeout, it stops. Default: no cap")


def _go_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=int, default=3, metavar="N",
                   help="work rounds in all, each judged against the goal (default 3; 0 and 1 both mean one)")
    p.add_argument("--no-goal", action="store_true", help="no goal and no judge: the run ends when the work does")
    p.add_argument("--judge-can-run", action="store_true", help="the judge may run commands (never Write/Edit)")
    p.add_argument("--isolate", action="store_true",
                   help="each worker in a git worktree of its own (the workspace must be a git work tree)")
    p.add_argument("--new", action="store_true",
                   help="do not continue the last run here: its brief, goal and lineage move to notes/archive/")
    p.add_argument("--clarify-only", action="store_true", help="only clarify the request, then stop")
    p.add_argument("--no-trim", action="store_true",
                   help="feed a resumed session its old large tool results whole (trimmed by default)")
    p.add_argument("--plan", action="store_true",
                   help="plan first: the work step presents a plan and changes nothing until you approve it at "
                        "the prompt (1 go, 2 go but ask before edits and commands, or words to keep planning)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flower", description="Long-horizon agent runs on the Claude Agent SDK, in your terminal.",
        epilog='`flower "task"` is short for `flower go "task"`. While it runs: type a line to add to its '
               "inbox, a number to answer a question, ?question for the oracle, Ctrl-C to interrupt.")
    sub = parser.add_subparsers(dest="cmd", metavar="{go,run,once,demo,setup}")

    go = sub.add_parser("go", help="clarify → set goals → work, judged (the default)")
    go.add_argument("task", nargs="?", default=None, help="what you want done")
    _flow_flags(go, timeout=1800.0)
    _go_flags(go)
    _model_flags(go)
    _common(go)

    run = sub.add_parser("run", help="run a Workflow you wrote: MODULE:ATTR or FILE.py:ATTR (called if callable)")
    run.add_argument("target", help="e.g. flows.py:main or mypkg.flows:build")
    _model_flags(run)
    _common(run)

    once = sub.add_parser("once", help="one agent step, no workflow, no interaction")
    once.add_argument("prompt")
    once.add_argument("-t", "--tools", default="Read,Glob,Grep", help="comma-separated allowed tools")
    once.add_argument("-i", "--instructions", default="", help="appended to Claude Code's system prompt")
    once.add_argument("-p", "--permission-mode", default="default", choices=PERMISSION_MODES)
    once.add_argument("-b", "--budget", type=float, default=None, metavar="USD", help="cost cap in dollars")
    once.add_argument("--resume", default=None, metavar="SESSION_ID", help="go on with this stored session")
    once.add_argument("--fork", action="store_true", help="with --resume: branch off a new session instead")
    _model_flags(once)
    _common(once)

    demo = sub.add_parser("demo", help="the offline demo: a local model double, no API key")
    _flow_flags(demo, timeout=None)
    demo.add_argument("-w", "--workspace", default=None, help="default: a fresh temporary directory")
    demo.add_argument("-r", "--run-dir", default=None, help="default: <workspace>/runs")
    demo.add_argument("--scenario", default="demo", help=argparse.SUPPRESS)  # tests play their own
    demo.add_argument("--task", default=None, help=argparse.SUPPRESS)
    setup_cmd.add_parser(sub)
    return parser


def with_default_command(argv: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """`flower "task"` → `flower go "task"`; a command named after leading flags moves to the front."""
    args = list(argv)
    if any(a in ("-h", "--help") for a in args) and not any(a in COMMANDS for a in args):
        return args
    takes_value: set[str] = set()
    for action in _subparsers(parser):
        for option in action._actions:
            if option.option_strings and option.nargs != 0:
                takes_value.update(option.option_strings)
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            break
        if token.startswith("-") and len(token) > 1:
            i += 2 if token in takes_value else 1
            continue
        if token in COMMANDS:
            return [token, *args[:i], *args[i + 1:]]
        break
    return ["go", *args]


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.values())
    return []


# -- runs ------------------------------------------------------------------------------------------------
async def _once(args: argparse.Namespace) -> int:
    from adapters.transport.engine import bridge_resilience
    from flower_core import AgentSpec, Runtime

    render = Render()
    workspace = Path(args.workspace).resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    spec = AgentSpec(name="ad-hoc", system_prompt=args.instructions, allowed_tools=tools,
                     permission_mode=args.permission_mode, max_budget_usd=args.budget, model=args.model,
                     effort=args.effort)
    if args.fork and not args.resume:
        raise UsageError("flower: --fork branches off a stored session; give it with --resume SESSION_ID.")
    rt = Runtime(workspace=workspace, run_dir=Path(args.run_dir), resilience=bridge_resilience())
    try:
        if args.resume and not rt.has_session(args.resume):
            raise UsageError(f"flower: no session {args.resume} is stored for {workspace} under {args.run_dir}.")
        result = await rt.run(spec, args.prompt, step_name="ad-hoc", resume=args.resume, fork=args.fork,
                              on_event=render)
    finally:
        rt.close()
    if not result.ok and result.error:
        render.say(f"x {result.error}", "error")
    render.write(render.summary_lines(failed_at=None if result.ok else "ad-hoc", cost_usd=result.cost_usd,
                                      duration_s=result.duration_s))
    return 0 if result.ok else 1


def _ask_for_task() -> str:
    """No task on the command line: ask on a terminal, read one line from a pipe."""
    if sys.stdin is None:
        return ""
    try:
        if sys.stdin.isatty():
            print("What do you want done? One sentence is enough; Enter starts (Ctrl-C quits).")
            return input("> ").strip()
        return sys.stdin.readline().strip()
    except (EOFError, KeyboardInterrupt):
        return ""


async def _go(args: argparse.Namespace) -> int:
    flow = StarterChoices(timeout_s=args.timeout, max_asks=None if args.asks < 0 else args.asks,
                          budget_usd=args.budget, approve=args.approve, rounds=args.rounds, goal=not args.no_goal,
                          clarify_only=args.clarify_only, new=args.new, isolate=args.isolate,
                          judge_can_run=args.judge_can_run, language=language_of(args.lang), plan=args.plan)
    drive = DriveChoices(window=args.window, handoff=not args.no_handoff, trim=not args.no_trim, model=args.model,
                         effort=args.effort)
    return await run_starter(args.task, workspace=Path(args.workspace).resolve(), run_dir=Path(args.run_dir),
                             flow=flow, drive=drive)


async def _run(args: argparse.Namespace) -> int:
    from bots.flow_target import TargetError, load_target

    try:
        wf = load_target(args.target)
    except TargetError as exc:
        raise UsageError(str(exc)) from exc
    return await drive_workflow(wf, workspace=Path(args.workspace).resolve(), run_dir=Path(args.run_dir),
                                drive=DriveChoices(model=args.model, effort=args.effort))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(with_default_command(sys.argv[1:] if argv is None else argv, parser))
    try:
        if args.cmd in ("go", "demo"):
            check_budget(args.budget)  # before credentials and before anything is created
            language_of(args.lang)
        if args.cmd == "go":
            check_plan(args.plan)
        if args.cmd == "demo":
            from bots.demo import run_demo

            return asyncio.run(run_demo(args))
        if args.cmd == "setup":
            return setup_cmd.run_setup(args)
        env_files.load()  # the files fill in what the environment leaves unset
        if not has_credentials():
            print(NO_KEY, file=sys.stderr)
            return EXIT_USAGE
        if args.cmd == "once":
            return asyncio.run(_once(args))
        if args.cmd == "run":
            return asyncio.run(_run(args))
        if args.task is None:
            args.task = _ask_for_task()  # empty is fine when this workspace has a brief to wake from
        return asyncio.run(_go(args))
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\n! stopped", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
