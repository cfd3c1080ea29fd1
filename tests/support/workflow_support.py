"""Helpers for the workflow / starter / oracle tests: a runtime on the model double, step recorders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flower_core.devmodel import ModelDouble
from flower_core.events import Event
from flower_core.runtime import Resilience, Runtime
from flower_core.spec import AgentSpec

REPO = Path(__file__).resolve().parents[2]


def make_runtime(tmp_path: Path, md: ModelDouble, cli_home: Path, **kw: Any) -> Runtime:
    """A Runtime in tmp_path/ws with runs in tmp_path/runs; no engine retries unless asked."""
    kw.setdefault("resilience", Resilience(enabled=False))
    return Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", env=md.env(cli_home), **kw)


def spec(name: str = "agent", **kw: Any) -> AgentSpec:
    kw.setdefault("allowed_tools", ["Read", "Glob", "Grep"])
    kw.setdefault("max_turns", 6)
    return AgentSpec(name=name, **kw)


class Steps:
    """An on_step callback that keeps (step name, result) pairs."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def __call__(self, step: Any, result: Any) -> None:
        self.seen.append((step.name, result))

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.seen]

    def ok(self) -> dict[str, bool]:
        return {n: bool(r.ok) for n, r in self.seen}


class Events:
    """An on_event sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, ev: Event) -> None:
        self.events.append(ev)

    def steps(self) -> list[tuple[str, dict[str, Any]]]:
        return [(e.text, e.payload) for e in self.events if e.kind == "step"]
