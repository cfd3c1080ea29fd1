"""Plan first: a step starts in the CLI's ``plan`` mode and changes nothing until a person approves its plan.

    build_options(spec, plan_first) ─▶ permission_mode "plan" + the plan's hook and callback (runtime/permission.py)
    the agent investigates; a call that could change something is refused (``holds``: the hook says "ask",
    the callback refuses with ``plan.planning``)
    it presents its plan: ExitPlanMode ─▶ ``PlanReview.review`` ─▶ an ask of kind "plan" (facts: ``plan``,
    ``plan_file``, ``plan_chars``) with three options:
        "Approve and go"             → allowed; the CLI leaves plan mode for the step's own mode (setMode)
        "Approve, ask before edits"  → the same, and from then on edits and Bash ask a person (``after``'s gate)
        "Keep planning…" or words    → refused with the words: the agent reads them as the tool's result,
                                       stays in plan mode and presents a new plan
    the decision is kept in ``<run_dir>/plan.json`` before anyone is told it is decided (the parking's
    keep_outcomes hook, runtime/park_plan.py), so a restart never asks it again nor plans again.

Where the plan comes from (tests/core/test_plan_cli_facts.py): the CLI hands ExitPlanMode to the callback,
and to PreToolUse hooks, with an *empty* input. The CLI tells the model to write its plan into a file in
``<config dir>/plans/`` (the one edit plan mode allows, and that write reaches the callback too, so it is
free here) and to call ExitPlanMode when done; a model may also put the plan in the call's ``plan`` input,
which only the stream shows. ``watching`` wraps the step's event sink and keeps both, by call id and by the
last plan file written, so ``review`` shows the call's own plan, else the file's. Without a callback the CLI
disables ExitPlanMode in a headless session, which is why a plan-first step always has one.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flower_core.events import Event
from flower_core.human.ask import Ask
from flower_core.human.texts import cap
from flower_core.lang import Catalogue, catalogue
from flower_core.payloads import ToolCallPayload

KIND = "plan"
TOOL = "ExitPlanMode"
PLANNING, GO, GO_ASK, REVISE = "planning", "go", "go_ask", "revise"
APPROVE_GO = "Approve and go"
APPROVE_ASK = "Approve, ask before edits"
KEEP_PLANNING = "Keep planning…"
OPTIONS = (APPROVE_GO, APPROVE_ASK, KEEP_PLANNING)
DECISIONS = (GO, GO_ASK, REVISE)
# "Approve, ask before edits": the approval rules added for the rest of the run (an Edit rule covers every edit tool).
ASK_AFTER = ("Edit", "Bash")
# The CLI's own tool result when ExitPlanMode is allowed: what a parked plan's approval writes into the session.
APPROVED = "User has approved exiting plan mode. You can now proceed."
# What a planning agent may use: reading, searching, delegating (its workers are held by the same rule), its todo list.
FREE_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "Agent", "Task",
                        "TodoWrite", TOOL})
PLAN_FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})
# What the CLI lets through in plan mode by itself. Everything else is sent to the callback while planning (the
# hook's "ask"), which decides by ``holds``: the CLI's plan mode would refuse some of what is free here, e.g. an
# Agent call ("Auto mode is unavailable…": its classifier does not run for SDK sessions).
READ_ONLY = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
MAX_CARD_CHARS = 20_000  # of the plan in the ask's payload; the whole plan is in its file
STATE_FILE = "plan.json"
# How long ``review`` waits for the plan's call to come through the stream (the SDK may hand the callback
# its request before the assistant message reaches the step's sink), and how often it looks.
TEXT_WAIT_S = 10.0
TEXT_POLL_S = 0.02

# An option's number approves only as a whole answer (the terminal's "1"/"2"); words from a "Keep planning…"
# form never approve: the hub declines the card with them (adapters/hub/handlers.py), and a decline is a revision.
_GO_WORDS = {APPROVE_GO.casefold(), "1"}
_ASK_WORDS = {APPROVE_ASK.casefold(), "2"}
_REVISE_WORDS = {KEEP_PLANNING.casefold(), "keep planning", "keep planning...", "3", ""}


def decision_of(answer: str) -> tuple[str, str]:
    """(go | go_ask | revise, the words the agent reads) from an answer: an option, its number, or words."""
    low = " ".join(answer.split()).casefold()
    if low in _GO_WORDS:
        return GO, ""
    if low in _ASK_WORDS:
        return GO_ASK, ""
    if low in _REVISE_WORDS:
        return REVISE, ""
    return REVISE, answer.strip()


def option_of(decision: str) -> str:
    """The option text that answers a plan ask with ``decision``; ValueError for anything else."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
    return OPTIONS[DECISIONS.index(decision)]


def outcome_of(ask: Ask) -> tuple[str, str]:
    """(decision, words) of a settled plan ask; ("", "") when nobody decided (cancelled, timed out)."""
    return outcome(ask.state, ask.answer)


def outcome(state: str, answer: str) -> tuple[str, str]:
    """(decision, words) of a plan ask settled as ``state`` with ``answer``; a decline is a revision with its
    words (none when they are only "Keep planning…"); ("", "") when nobody decided."""
    if state == "answered":
        return decision_of(answer)
    if state == "declined":
        return REVISE, "" if " ".join(answer.split()).casefold() in _REVISE_WORDS else answer.strip()
    return "", ""


@dataclass(frozen=True)
class Verdict:
    """What the CLI is told about one ExitPlanMode call: allow it, or refuse it with ``message``."""

    allow: bool
    message: str = ""
    decision: str = ""


class PlanReview:
    """One run's plan state (planning → go | go_ask), kept in ``path``; ``after`` builds the approval gate
    "ask before edits" turns on (a gate with ASK_AFTER beside the run's own rules)."""

    def __init__(self, path: str | Path, *, after: Callable[[], Any] | None = None,
                 free_prefix: str = "mcp__human__") -> None:
        self.path = Path(path)
        self._after, self.free_prefix = after, free_prefix
        self.state = self._load()
        self._texts: dict[str, str] = {}
        self._armed = False
        self.plans_dir: Path | None = None  # the CLI's plans folder (permission.wire sets it from the CLI's env)
        self._plan_file: Path | None = None  # the plan file the agent wrote last

    @property
    def planning(self) -> bool:
        return self.state == PLANNING

    def holds(self, tool: str, args: dict[str, Any]) -> bool:
        """Would this call be refused while planning? Everything but FREE_TOOLS, the channel's own tools
        and a read-only shell command."""
        if tool in FREE_TOOLS or tool.startswith(self.free_prefix) or self._plan_file_of(tool, args) is not None:
            return False
        if tool == "Bash":
            from flower_core.guards import is_ephemeral  # (guards imports the SDK's types lazily too)

            return not is_ephemeral(str(args.get("command") or ""))
        return True

    # -- the plan's text, from the stream ------------------------------------------------------------
    def watching(self, sink: Callable[[list[Event]], None]) -> Callable[[list[Event]], None]:
        """``sink`` that also keeps the plan of every ExitPlanMode call it sees, by call id."""
        def seen(events: list[Event]) -> None:
            for ev in events:
                if ev.kind != "tool_call" or not (call := ToolCallPayload.of(ev)).id:
                    continue
                if ev.tool == TOOL:
                    plan = call.input.get("plan")
                    self._texts[call.id] = plan if isinstance(plan, str) else ""
                elif (written := self._plan_file_of(ev.tool, call.input)) is not None:
                    self._plan_file = written
            sink(events)
        return seen

    def _plan_file_of(self, tool: str, args: dict[str, Any]) -> Path | None:
        """The file an edit call writes when it is in the CLI's plans folder (plan mode's one allowed edit)."""
        raw = args.get("file_path")
        if tool not in PLAN_FILE_TOOLS or self.plans_dir is None or not isinstance(raw, str) or not raw:
            return None
        path = Path(os.path.normpath(raw))
        return path if path.is_absolute() and path.parent == self.plans_dir else None

    async def text_of(self, call_id: str) -> str:
        """The plan of the ExitPlanMode call ``call_id``: its own input's, else the plan file's ("" if none)."""
        deadline = time.monotonic() + TEXT_WAIT_S
        while call_id not in self._texts and time.monotonic() < deadline:
            await asyncio.sleep(TEXT_POLL_S)
        text = self._texts.pop(call_id, "")
        if not text.strip() and self._plan_file is not None:
            text = read_plan(self._plan_file)
        return text

    def facts(self, text: str) -> dict[str, Any]:
        """The plan ask's payload facts; the whole plan goes to ``plans/<time>.md`` beside the state file."""
        facts: dict[str, Any] = {"tool": TOOL, "input": {}, "plan": cap(text, MAX_CARD_CHARS), "plan_chars": len(text),
                                 "plan_bytes": len(text.encode())}
        folder = self.path.parent / "plans"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"plan-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid() % 1000:03d}.md"
            path.write_text(text, encoding="utf-8")
            facts["plan_file"] = str(path)
        except OSError:
            pass  # the card still has the plan (cut at MAX_CARD_CHARS)
        return facts

    # -- deciding ------------------------------------------------------------------------------------
    async def review(self, channel: Any, call_id: str) -> Verdict:
        """Ask a person about the plan of the ExitPlanMode call ``call_id``; the verdict for the CLI."""
        lang = catalogue(getattr(channel, "lang", None))
        if not self.planning:  # approved already (a call made again after a restart): nothing to ask
            return Verdict(True, decision=self.state)
        text = await self.text_of(call_id)
        wait = getattr(channel, "timeout_s", None)
        if wait is not None and wait <= 0:  # an unattended run: nobody will review it, so the plan is its result
            return Verdict(False, lang["plan.unattended"])
        ask = await channel.ask_outcome(lang["plan.question"], list(OPTIONS), kind=KIND, facts=self.facts(text),
                                        timeout_s=None)
        return self.verdict(ask, channel, lang)

    def verdict(self, ask: Ask, channel: Any, lang: Catalogue | None = None) -> Verdict:
        decision, words = outcome_of(ask)
        lang = catalogue(lang)
        if decision in (GO, GO_ASK):
            self.decide(decision, channel)
            return Verdict(True, decision=decision)
        if decision == REVISE:
            text = lang.fill("plan.revise", words=cap(words)) if words else lang["plan.revise_silent"]
            return Verdict(False, text, REVISE)
        return Verdict(False, lang["plan.cancelled"])

    def decide(self, decision: str, channel: Any) -> None:
        """Keep an approval (go | go_ask) and arm what it turns on; a revision changes nothing kept."""
        if decision not in (GO, GO_ASK) or self.state == decision:
            return
        self.state = decision
        self._save()
        self.arm(channel)

    def arm(self, channel: Any) -> None:
        """After "ask before edits": the channel's gate asks about edits and Bash (built once by ``after``)."""
        if self.state == GO_ASK and self._after is not None and not self._armed:
            channel.approvals = self._after()
            self._armed = True

    # -- the state file ------------------------------------------------------------------------------
    def _load(self) -> str:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return PLANNING
        state = data.get("state") if isinstance(data, dict) else None
        return state if state in (GO, GO_ASK) else PLANNING

    def _save(self) -> None:
        """Atomically; a disk error keeps the decision in memory (the run goes on, a restart plans again)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps({"state": self.state, "at": time.time()}), encoding="utf-8")
            tmp.replace(self.path)
        except OSError:
            pass


def read_plan(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def plans_dir(env: dict[str, str] | None) -> Path:
    """Where the CLI keeps plan files: ``<config dir>/plans`` (CLAUDE_CONFIG_DIR, else ~/.claude)."""
    config = (env or {}).get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude"
    return Path(os.path.normpath(Path(config).expanduser())) / "plans"


def plan_of(channel: Any) -> PlanReview | None:
    plan = getattr(channel, "plan", None)
    return plan if isinstance(plan, PlanReview) else None


def plan_first(channel: Any, run_dir: str | Path, *, approvals: dict[str, Any] | None = None,
               cwd: str | Path = "") -> PlanReview:
    """Give ``channel`` a plan review kept in ``<run_dir>/plan.json``; "ask before edits" turns on the run's
    ``approvals`` rules plus ASK_AFTER (a gate whose grants live beside the run's own)."""
    from flower_core.human.approval import gate_from, merge_rules

    after = merge_rules(approvals, {"ask_tools": list(ASK_AFTER)})
    grants = Path(run_dir) / "approvals.json"
    prefix = str(getattr(channel, "tool_name", "") or "mcp__human__ask").rsplit("__", 1)[0] + "__"
    plan = PlanReview(Path(run_dir) / STATE_FILE, free_prefix=prefix,
                      after=lambda: gate_from(after, cwd=cwd, grants_path=grants))
    channel.plan = plan
    plan.arm(channel)  # "ask before edits" approved before a restart: the gate is on again
    return plan
