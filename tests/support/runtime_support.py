"""Helpers for the Runtime tests: a runtime wired to the model double, and an event recorder."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flower_core.devmodel import ModelDouble
from flower_core.events import Event
from flower_core.runtime import HandoffPolicy, Resilience, Runtime, StepResult
from flower_core.spec import AgentSpec

FAST = Resilience(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=0.0, idle_timeout=60.0)


def make_runtime(tmp_path: Path, md: ModelDouble, cli_home: Path, **kw: Any) -> Runtime:
    kw.setdefault("resilience", Resilience(**vars(FAST)))
    return Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", env=md.env(cli_home), **kw)


def spec(name: str = "worker", **kw: Any) -> AgentSpec:
    kw.setdefault("allowed_tools", ["Read", "Glob", "Grep"])
    kw.setdefault("max_turns", 12)
    return AgentSpec(name=name, **kw)


async def count_words(rt: Runtime, prompt: str = "Count the words in data/.",
                      **kw: Any) -> tuple[StepResult, Recorder]:
    """One step of ``spec()`` in a workspace holding data.txt, its events recorded; the runtime is closed after."""
    (rt.workspace / "data.txt").write_text("some words")
    rec = Recorder()
    try:
        return await rt.run(spec(), prompt, on_event=rec, **kw), rec
    finally:
        rt.close()


def small_window(window: int = 10_000, **kw: Any) -> HandoffPolicy:
    return HandoffPolicy(window=window, **kw)


class Recorder:
    """Collects events (thread-safe) and lets a test react to one as it arrives."""

    def __init__(self, react: Callable[[Event], None] | None = None) -> None:
        self.events: list[Event] = []
        self.react = react
        self._lock = threading.Lock()

    def __call__(self, ev: Event) -> None:
        with self._lock:
            self.events.append(ev)
        if self.react is not None:
            self.react(ev)

    def kinds(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def phases(self) -> list[str]:
        return [e.payload.get("phase", "") for e in self.kinds("handoff")]
