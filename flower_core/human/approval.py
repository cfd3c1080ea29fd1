"""Approvals: a tool call the policy asks about becomes one more question on the HumanChannel.

    CLI ─can_use_tool─▶ runtime/permission.py ─▶ ApprovalGate.decide(channel, tool, input)
                                                   │ deny rule            → denied, the agent is told the rule
                                                   │ allow rule / granted → allowed, nobody asked
                                                   │ unattended channel   → the seed's wording (or allowed)
                                                   ▼ ask rule: an ask of kind "approval" (tool, input, options)
    a person, anywhere: channel.approve(ask_id, "once" | "run" | "deny", text)  (or an option's answer)

The ask carries ``kind="approval"``, ``tool`` and a bounded ``input`` in its event payload, so front
ends that only know questions still show it with its three options and can settle it. It never
counts against ``max_asks``. It waits as long as it takes unless ``timeout_s`` is set. "for this
run" grants are kept in ``grants_path`` so they hold after a restart. Every decision is logged in
the Q&A log (as the ask's entry) and kept in ``decisions`` for the manifest. No SDK here: the
runtime turns a ``Decision`` into the SDK's permission result.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Any, Protocol

import flower_core.human.texts as texts
from flower_core.human.approval_diff import diff_facts
from flower_core.human.ask import Ask
from flower_core.human.questions import Questions
from flower_core.lang import Catalogue, catalogue
from flower_core.permissions import Policy

KIND = "approval"
DECISIONS = ("once", "run", "deny")
ALLOW_ONCE = "Allow once"
DENY = "Deny"
MAX_INPUT_CHARS = 4000  # of one input value shown on a card and kept in the log
_YES = {"y", "yes", "allow", "once", "ok", ALLOW_ONCE.lower()}
_ALWAYS = {"a", "always", "run", "allow for this run"}
_NO = {"n", "no", "deny", DENY.lower()}

# Model-facing, in the channel's language (channel.lang, flower_core/lang/); these names are the seed's texts.
DENIED = texts._SEED["approval.denied"]
DENIED_BY_RULE = texts._SEED["approval.denied_by_rule"]
TIMED_OUT = texts._SEED["approval.timed_out"]
CANCELLED = texts._SEED["approval.cancelled"]


class Asking(Protocol):
    """The channel an approval is asked through (a HumanChannel), as ``ApprovalGate.decide`` uses it."""

    lang: Catalogue
    timeout_s: float | None
    timeout_text: str

    async def ask_outcome(self, question: str, options: list[str] | None = None, *, kind: str = "",
                          facts: dict[str, Any] | None = None,
                          timeout_s: float | EllipsisType | None = ...) -> Ask: ...


@dataclass(frozen=True)
class Decision:
    """What the runtime tells the CLI: run the call (``allow``) or refuse it with ``message``."""

    allow: bool
    message: str = ""
    how: str = ""  # once | run | deny | rule | timeout | unattended | allowed | policy | cancelled
    ask_id: str = ""


def call_key(tool: str, args: dict[str, Any]) -> str:
    """One call's identity across a CLI restart: its tool and its whole input (its call id changes)."""
    return tool + "\n" + json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)


def run_option(tool: str) -> str:
    return f"Allow {tool} for this run"


def summary(tool: str, args: dict[str, Any]) -> str:
    """One line a person reads: the command, the file, or the input as JSON (bounded)."""
    for key in ("command", "file_path", "notebook_path", "url", "pattern", "path"):
        if isinstance(args.get(key), str):
            return texts.cap(args[key], MAX_INPUT_CHARS)
    return texts.cap(json.dumps(args, ensure_ascii=False, default=str), MAX_INPUT_CHARS)


def bounded_input(args: dict[str, Any]) -> dict[str, Any]:
    """The call's input for an event payload: strings cut at MAX_INPUT_CHARS, other values as is if small."""
    out: dict[str, Any] = {}
    for key, value in list(args.items())[:20]:
        if isinstance(value, str):
            out[str(key)] = texts.cap(value, MAX_INPUT_CHARS)
        elif isinstance(value, bool | int | float) or value is None:
            out[str(key)] = value
        else:
            out[str(key)] = texts.cap(json.dumps(value, ensure_ascii=False, default=str), MAX_INPUT_CHARS)
    return out


def decision_of(answer: str, tool: str) -> tuple[str, str]:
    """(once | run | deny, words) from an answer's text: an option, a terminal letter, or words (= deny)."""
    said = " ".join(answer.split())
    low = said.lower()
    if low in _YES:
        return "once", ""
    if low in _ALWAYS or low == run_option(tool).lower():
        return "run", ""
    if low in _NO:
        return "deny", ""
    return "deny", said


class ApprovalGate:
    """The policy of one run and what it remembers: grants "for this run" and the decisions taken."""

    def __init__(self, policy: Policy, *, cwd: str | Path = "", timeout_s: float | None = None,
                 unattended: str = "deny", grants_path: str | Path | None = None) -> None:
        if unattended not in ("deny", "allow"):
            raise ValueError(f"unattended_approvals must be 'deny' or 'allow', not {unattended!r}")
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"approval_timeout_s must be > 0 or None (wait as long as it takes), not {timeout_s!r}")
        self.cwd, self.timeout_s, self.unattended = str(cwd), timeout_s, unattended
        self.grants_path = Path(grants_path) if grants_path is not None else None
        self.decisions: list[dict[str, Any]] = []
        # Decisions taken while the CLI was closed (a parked approval), waiting for the re-asked call.
        self._ready: dict[str, tuple[Decision, Callable[[], None]]] = {}
        self._lock = threading.Lock()
        self.policy = policy
        for tool in self._load_grants():
            self.policy = self.policy.granting(tool)

    @property
    def active(self) -> bool:
        return self.policy.active

    def grant(self, tool: str) -> None:
        """Allow ``tool`` for the rest of the run, durably (best effort: a write error keeps it in memory)."""
        with self._lock:
            self.policy = self.policy.granting(tool)
            granted = sorted(self.policy.granted)
        if self.grants_path is not None:
            try:
                self.grants_path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.grants_path.with_name(self.grants_path.name + ".tmp")
                tmp.write_text(json.dumps({"granted": granted}), encoding="utf-8")
                tmp.replace(self.grants_path)
            except OSError:
                pass

    def take_decisions(self) -> list[dict[str, Any]]:
        with self._lock:
            taken, self.decisions = self.decisions, []
        return taken

    def expect(self, tool: str, args: dict[str, Any], decision: Decision, consumed: Callable[[], None]) -> None:
        """Answer the next call of ``tool`` with exactly ``args`` with ``decision``, once, without asking:
        a parked approval decided while no CLI ran, whose call the resumed CLI makes again. ``consumed``
        runs when it is used (the call is about to run)."""
        with self._lock:
            self._ready[call_key(tool, args)] = (decision, consumed)

    def forget(self, tool: str, args: dict[str, Any]) -> bool:
        """Drop an expected call that never came; True if it was still waiting."""
        with self._lock:
            return self._ready.pop(call_key(tool, args), None) is not None

    def settle_parked(self, ask: Ask, tool: str, args: dict[str, Any], unattended_text: str,
                      lang: Catalogue | None = None) -> Decision:
        """The decision of a parked approval once its ask settled (granting and recording it as decide does)."""
        return self._note(self._outcome(ask, tool, False, unattended_text, catalogue(lang)), tool, args, ask)

    async def decide(self, channel: Asking, tool: str, args: dict[str, Any]) -> Decision:
        """Apply the policy to one call, asking a person through ``channel`` when it says so."""
        with self._lock:
            ready = self._ready.pop(call_key(tool, args), None)
        if ready is not None:  # decided (and recorded) while parked: the person is not asked twice
            with contextlib.suppress(Exception):
                ready[1]()
            return ready[0]
        verdict, rule = self.policy.decide(tool, args, cwd=self.cwd)
        if verdict == "deny":
            text = channel.lang.fill("approval.denied_by_rule", rule=rule.text if rule else tool, tool=tool)
            return self._note(Decision(False, text, "rule"), tool, args)
        if verdict != "ask":  # "allowed": an allow rule or a grant; "policy": no rule speaks about it
            return Decision(True, how="allowed" if verdict == "allow" else "policy")
        unattended = channel.timeout_s is not None and channel.timeout_s <= 0
        if unattended and self.unattended == "allow":
            return self._note(Decision(True, how="unattended"), tool, args)
        question = f"The agent wants to run {tool}: {summary(tool, args)}"
        facts = {"tool": tool, "input": bounded_input(args)}
        folder = self.grants_path.parent / "approvals" if self.grants_path is not None else None
        facts.update(diff_facts(tool, args, self.cwd, folder))  # the whole change of an edit, as a file
        ask = await channel.ask_outcome(question, [ALLOW_ONCE, run_option(tool), DENY], kind=KIND, facts=facts,
                                        timeout_s=0.0 if unattended else self.timeout_s)
        return self._note(self._outcome(ask, tool, unattended, channel.timeout_text, channel.lang), tool, args, ask)

    def _outcome(self, ask: Ask, tool: str, unattended: bool, unattended_text: str, lang: Catalogue) -> Decision:
        if ask.state == "answered":
            how, words = decision_of(ask.answer, tool)
            if how == "run":
                self.grant(tool)
            if how != "deny":
                return Decision(True, how=how, ask_id=ask.id)
            return Decision(False, _denied(tool, words, lang), "deny", ask.id)
        if ask.state == "declined":
            return Decision(False, _denied(tool, ask.answer, lang), "deny", ask.id)
        if ask.state == "timeout":
            text = unattended_text if unattended else lang.fill("approval.timed_out", s=round(self.timeout_s or 0),
                                                                tool=tool)
            return Decision(False, text, "unattended" if unattended else "timeout", ask.id)
        return Decision(False, lang.fill("approval.cancelled", tool=tool), str(ask.state), ask.id)

    def _note(self, d: Decision, tool: str, args: dict[str, Any], ask: Ask | None = None) -> Decision:
        row = {"tool": tool, "input": summary(tool, args)[:500], "decision": d.how, "allowed": d.allow,
               "at": time.time()}
        if ask is not None:
            row.update(ask=ask.id, by=str(ask.facts.get("by", "")), waited_s=ask.waited_s)
        with self._lock:
            self.decisions.append(row)
        return d

    def _load_grants(self) -> list[str]:
        if self.grants_path is None:
            return []
        try:
            data = json.loads(self.grants_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        granted = data.get("granted") if isinstance(data, dict) else None
        return [t for t in granted if isinstance(t, str)] if isinstance(granted, list) else []


RULE_KEYS = ("ask_tools", "allow_tools", "deny_tools")
SETTING_KEYS = (*RULE_KEYS, "approval_timeout_s", "unattended_approvals")


def merge_rules(*tables: Mapping[str, Any] | None) -> dict[str, Any]:
    """Approval settings layered: rule lists add up (bot, channel, run), later scalars win."""
    out: dict[str, Any] = {}
    for table in tables:
        for key, value in (table or {}).items():
            if key in RULE_KEYS:
                out[key] = list(dict.fromkeys([*out.get(key, []), *(value or [])]))
            elif key in SETTING_KEYS and value is not None:
                out[key] = value
    return out


def gate_from(settings: Mapping[str, Any] | None, *, cwd: str | Path = "",
              grants_path: str | Path | None = None) -> ApprovalGate | None:
    """The gate for a run's approval settings (``SETTING_KEYS``); None when no rule asks or denies.
    ValueError, naming the key, on a bad rule or setting."""
    s = dict(settings or {})
    policy = Policy.of(s.get("ask_tools"), s.get("allow_tools"), s.get("deny_tools"))
    if not policy.active:
        return None
    timeout = s.get("approval_timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise ValueError(f"approval_timeout_s must be a number of seconds, not {timeout!r}")
    return ApprovalGate(policy, cwd=cwd, timeout_s=None if timeout is None else float(timeout),
                        unattended=str(s.get("unattended_approvals") or "deny"), grants_path=grants_path)


def _denied(tool: str, words: str, lang: Catalogue) -> str:
    text = lang.fill("approval.denied", tool=tool)
    return f"{text}\n{lang['ask.decline_reason']}{texts.cap(words, marker=lang['text.truncated'])}" if words.strip() \
        else text


class Approver:
    """Approvals beside answers (``channel.approver``; HumanChannel delegates ``approve`` and
    ``pending_approvals`` to it): given the channel's Questions and its ``answer`` and ``decline``."""

    def __init__(self, questions: Questions, *, answer: Callable[[str, str], bool],
                 decline: Callable[[str, str], bool]) -> None:
        self._questions, self._answer, self._decline = questions, answer, decline

    def approve(self, ask_id: str, decision: str, text: str = "", *, by: str = "") -> bool:
        """Decide a waiting approval: "once", "run" (this tool for the rest of the run) or "deny" (with
        words the agent reads). ValueError for another decision; False when the id is unknown, is not an
        approval, or is no longer waiting (decided already: the first decision wins)."""
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
        q = self._questions
        with q.lock:
            ask = next((a for a in q.asks if a.id == ask_id and a.kind == KIND), None)
            if ask is None or ask.state != "asked" or ask.id in q.claimed:
                return False
            if by:
                ask.facts["by"] = str(by)[:200]
        if decision == "deny":
            return self._decline(ask_id, text)
        answer = ALLOW_ONCE if decision == "once" else run_option(str(ask.facts.get("tool", "")))
        return self._answer(ask_id, answer)

    def pending(self) -> list[Ask]:
        """Approvals still waiting for a decision, oldest first."""
        return [a for a in self._questions.waiting() if a.kind == KIND]
