"""Steering: the model and effort a run's agents use, changed by a person while the run goes on.

A value the Runtime reads when it builds each attempt's options (``shaped``), so a change reaches the
next CLI the run starts (the next step, round, resume, retry or handoff). A live attempt gets the new
model at once through the SDK's ``set_model``; the CLI first checks the name with the endpoint (a
request of its own) and refuses an unknown one ("Model '<name>' not found"), else applies it from its
next model request, never to one already in flight (measured with the bundled CLI against the model
double). Effort has no live
switch in the SDK, so a new effort applies from the next attempt.

A model the endpoint refuses when a CLI starts with it (HTTP 404; the CLI answers with a synthetic
"There's an issue with the selected model (<name>)…", error ``model_not_found``) is taken back:
``refused`` returns the model the run had before the change, and the Runtime goes on with it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flower_core.spec import AgentSpec

class ModelRefused(Exception):
    """The CLI (having asked the endpoint) refused a model name; the message is the CLI's."""


# The SDK's EffortLevel (claude_agent_sdk.types), lowest first.
EFFORTS = ("low", "medium", "high", "xhigh", "max")


def effort_problem(effort: str | None) -> str | None:
    """What is wrong with an effort level, in words for the person who typed it (None: nothing)."""
    if effort is None or effort in EFFORTS:
        return None
    return f"Unknown effort {effort!r}: say one of {', '.join(EFFORTS)}."


@dataclass(frozen=True)
class Choice:
    """A run's model and effort; None = the agent spec's own (or the CLI's default)."""

    model: str | None = None
    effort: str | None = None


class Steering:
    """Thread-safe: ``change`` may come from any thread; the Runtime reads ``now`` per attempt."""

    def __init__(self, model: str | None = None, effort: str | None = None) -> None:
        if (bad := effort_problem(effort)) is not None:
            raise ValueError(bad)
        self._lock = threading.Lock()
        self._now = Choice(model or None, effort or None)
        self._before: str | None = None  # the model a change replaced, until a request proves the new one
        self._trying = False

    @property
    def now(self) -> Choice:
        with self._lock:
            return self._now

    def change(self, *, model: str | None = None, effort: str | None = None) -> Choice:
        """A person's change (None leaves that part as it is); ValueError for an unknown effort."""
        if (bad := effort_problem(effort)) is not None:
            raise ValueError(bad)
        with self._lock:
            now = self._now
            if model and model != now.model:
                if not self._trying:  # two changes in a row: the one before both is what the run had
                    self._before = now.model
                self._trying = True
                now = replace(now, model=model)
            if effort:
                now = replace(now, effort=effort)
            self._now = now
            return now

    def shaped(self, spec: AgentSpec) -> AgentSpec:
        """``spec`` with the run's choice over its own model and effort."""
        now = self.now
        if now.model is None and now.effort is None:
            return spec
        return replace(spec, model=now.model or spec.model, effort=now.effort or spec.effort)

    def worked(self) -> None:
        """A request with the current model went through: it is the model the run has now."""
        with self._lock:
            self._trying, self._before = False, None

    def refused_now(self) -> None:
        """A live CLI refused the model just asked for: the run keeps the one it had."""
        with self._lock:
            if self._trying:
                self._now = replace(self._now, model=self._before)
            self._trying, self._before = False, None

    def refused(self, error: str | None, status: int | None) -> tuple[str, str | None] | None:
        """When ``error`` is the endpoint refusing the model a change asked for: go back to the model the
        run had, and return (the refused name, the model now in use); else None."""
        with self._lock:
            name = self._now.model
            if not self._trying or not name or not is_model_refusal(error, status, name):
                return None
            self._now = replace(self._now, model=self._before)
            self._trying, self._before = False, None
            return name, self._now.model


def is_model_refusal(error: str | None, status: int | None, model: str) -> bool:
    """The CLI's words when the endpoint refused ``model`` (a 404, "model_not_found", "It may not exist")."""
    text = (error or "").lower()
    said = any(w in text for w in ("not_found", "not found", "may not exist", "404")) or status == 404
    return said and model.lower() in text
