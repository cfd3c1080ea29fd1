"""Scenario model for the model double: what the fake model says, turn by turn.

A scenario is a list of *conversations*. Each request from the CLI is routed to the first
conversation whose ``match`` regex is found in the request's first user message (or whose
``system_match`` is found in the system prompt). Inside a conversation the turn played is the
number of assistant messages already in the request's history, so retries and resumed
sessions replay the right turn without any server-side cursor.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCENARIO_DIR = Path(__file__).parent / "scenarios"

FAULT_KINDS = ("http", "drop", "overflow")


@dataclass(frozen=True)
class Call:
    """One tool_use block."""

    tool: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True)
class Fault:
    """A failure served instead of the turn, ``times`` times (-1 = every time)."""

    kind: str = "http"
    status: int = 500
    times: int = 1
    message: str = ""


@dataclass(frozen=True)
class Stream:
    """How a turn's text is streamed: ``words`` words per text delta, ``pause_s`` seconds before each delta
    after the first (so a reader sees the words arrive over time, as from a real model)."""

    words: int = 1
    pause_s: float = 0.025


@dataclass(frozen=True)
class Turn:
    """One model reply: optional thinking, optional text, then tool calls."""

    say: str = ""
    think: str = ""
    calls: tuple[Call, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    fault: Fault | None = None
    delay_s: float = 0.0
    stop_reason: str = ""
    stream: Stream | None = None  # None: the text comes in two deltas at once (the double's default)


@dataclass(frozen=True)
class Again:
    """A turn played instead of the script's next one while the last tool result matches ``when`` (a plan sent
    back, a refusal). The script does not advance: every result that matched is taken off the turn count, so
    once the results stop matching the script goes on where it was. Named groups of ``when`` fill ``{name}``
    in the turn's text and call inputs (an unmatched group fills "")."""

    when: str
    turn: Turn

    def groups(self, tool_result: str) -> dict[str, str] | None:
        """The named groups when `tool_result` matches (None when it does not)."""
        found = re.search(self.when, tool_result, re.S)
        return None if found is None else {k: v or "" for k, v in found.groupdict().items()}


@dataclass(frozen=True)
class Conversation:
    name: str
    turns: tuple[Turn, ...]
    match: str = ""
    system_match: str = ""
    # What to do past the last turn: "end" answers a short text and ends the turn.
    after_end: str = "Done."
    again: Again | None = None

    def matches(self, first_user_text: str, system_text: str) -> bool:
        if not self.match and not self.system_match:
            return True
        if self.match and re.search(self.match, first_user_text, re.S):
            return True
        return bool(self.system_match and re.search(self.system_match, system_text, re.S))


@dataclass(frozen=True)
class Scenario:
    name: str
    conversations: tuple[Conversation, ...]
    description: str = ""
    # The model names this endpoint serves (empty: any). Another name is refused as the API refuses an
    # unknown model: 404 not_found_error "model: <name>".
    models: tuple[str, ...] = ()

    def route(self, first_user_text: str, system_text: str) -> Conversation | None:
        for conv in self.conversations:
            if conv.matches(first_user_text, system_text):
                return conv
        return None


class ScenarioError(ValueError):
    """A scenario file that cannot be understood."""


def _fault(raw: Any, where: str) -> Fault | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: fault must be a table")
    kind = str(raw.get("kind", "http"))
    if kind not in FAULT_KINDS:
        raise ScenarioError(f"{where}: fault kind {kind!r} not in {FAULT_KINDS}")
    persistent = bool(raw.get("persistent", False))
    times = -1 if persistent else int(raw.get("times", 1))
    return Fault(kind=kind, status=int(raw.get("status", 500 if kind == "http" else 400)),
                 times=times, message=str(raw.get("message", "")))


def _stream(raw: Any, where: str) -> Stream | None:
    """``stream = {words = 3, pause_s = 0.05}`` (either key optional), ``stream = true`` for the defaults,
    ``stream = false`` for none."""
    if raw is None or raw is False:
        return None
    if raw is True:
        return Stream()
    if not isinstance(raw, dict) or set(raw) - {"words", "pause_s"}:
        raise ScenarioError(f"{where}: stream must be true/false or a table of words, pause_s")
    words, pause = int(raw.get("words", 1)), float(raw.get("pause_s", Stream.pause_s))
    if words < 1 or not 0 <= pause <= 60:
        raise ScenarioError(f"{where}: stream needs words >= 1 and 0 <= pause_s <= 60")
    return Stream(words=words, pause_s=pause)


def _turn(raw: Any, where: str, stream: Stream | None = None) -> Turn:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: a turn must be a table")
    unknown = set(raw) - {"say", "think", "call", "usage", "fault", "delay_s", "stop_reason", "stream"}
    if unknown:
        raise ScenarioError(f"{where}: unknown keys {sorted(unknown)}")
    calls = []
    for j, c in enumerate(raw.get("call", [])):
        if not isinstance(c, dict) or "tool" not in c:
            raise ScenarioError(f"{where}.call[{j}]: needs a 'tool' name")
        calls.append(Call(tool=str(c["tool"]), input=dict(c.get("input", {})), id=str(c.get("id", ""))))
    usage = {str(k): int(v) for k, v in dict(raw.get("usage", {})).items()}
    return Turn(say=str(raw.get("say", "")), think=str(raw.get("think", "")), calls=tuple(calls),
                usage=usage, fault=_fault(raw.get("fault"), where),
                delay_s=float(raw.get("delay_s", 0.0)), stop_reason=str(raw.get("stop_reason", "")),
                stream=_stream(raw["stream"], where) if "stream" in raw else stream)


def _again(raw: Any, where: str, stream: Stream | None) -> Again | None:
    """``[conversation.again]``: ``when`` (a regex on the last tool result) and the keys of a turn."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("when"), str) or not raw["when"]:
        raise ScenarioError(f"{where}: needs 'when', a regex on the last tool result")
    try:
        re.compile(raw["when"])
    except re.error as exc:
        raise ScenarioError(f"{where}.when: bad regex: {exc}") from exc
    return Again(when=raw["when"], turn=_turn({k: v for k, v in raw.items() if k != "when"}, where, stream))


def parse_scenario(data: dict[str, Any], name: str = "scenario") -> Scenario:
    """Build a Scenario from the decoded TOML/JSON document. A top-level ``stream`` is every turn's that has
    none of its own."""
    convs_raw = data.get("conversation")
    stream = _stream(data.get("stream"), name)
    if not isinstance(convs_raw, list) or not convs_raw:
        raise ScenarioError(f"{name}: needs at least one [[conversation]]")
    convs = []
    for i, c in enumerate(convs_raw):
        where = f"{name}.conversation[{i}]"
        if not isinstance(c, dict):
            raise ScenarioError(f"{where}: must be a table")
        for key in ("match", "system_match"):
            if key in c:
                try:
                    re.compile(str(c[key]))
                except re.error as exc:
                    raise ScenarioError(f"{where}.{key}: bad regex: {exc}") from exc
        turns = tuple(_turn(t, f"{where}.turn[{j}]", stream) for j, t in enumerate(c.get("turn", [])))
        convs.append(Conversation(name=str(c.get("name", f"c{i}")), turns=turns,
                                  match=str(c.get("match", "")),
                                  system_match=str(c.get("system_match", "")),
                                  after_end=str(c.get("after_end", "Done.")),
                                  again=_again(c.get("again"), f"{where}.again", stream)))
    models = data.get("models", [])
    if not isinstance(models, list):
        raise ScenarioError(f"{name}.models: must be a list of model names")
    return Scenario(name=str(data.get("name", name)), conversations=tuple(convs),
                    description=str(data.get("description", "")), models=tuple(str(m) for m in models))


def load_scenario(ref: str | Path) -> Scenario:
    """Load a scenario by file path, or by the name of a shipped one (``demo``)."""
    path = Path(ref)
    if not path.exists():
        for suffix in (".toml", ".json"):
            shipped = SCENARIO_DIR / f"{ref}{suffix}"
            if shipped.exists():
                path = shipped
                break
        else:
            names = sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))
            raise ScenarioError(f"no scenario file or shipped scenario named {ref!r} (shipped: {names})")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{path}: {exc}") from exc
    return parse_scenario(data, name=path.stem)


def shipped_scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))
