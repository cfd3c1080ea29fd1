"""Fixtures for the hub tests: a watched in-memory surface, small workflows, a hub on the model double."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.hub import Hub, HubSettings, RunPlan
from adapters.memory_surface import MemorySurface, Posted
from adapters.platform import OutMessage, ThreadRef
from adapters.state import StateStore
from adapters.transport.engine import EngineKit
from adapters.view import ViewConfig
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from flower_core.devmodel import ModelDouble
from tests.support.runtime_support import FAST
from tests.support.waiting import until

ASK = "mcp__human__ask"
INBOX = "mcp__human__inbox"
THREAD = ThreadRef("memory", "C1", "t1")
# Prose goes out at once in tests, so its order and completeness are easy to check.
QUICK = ViewConfig(status_every_s=0.5, prose_linger_s=0.0)


def ask_call(question: str, options: list[str]) -> dict[str, Any]:
    return {"tool": ASK, "input": {"question": question, "options": options}}


class Watch:
    """Wait on a MemorySurface's contents without sleeping: re-checked after every platform call."""

    def __init__(self, surface: MemorySurface) -> None:
        self.surface = surface
        self._changed = asyncio.Event()
        surface.on_call = lambda call: self._changed.set()

    async def until(self, pred: Callable[[MemorySurface], Any], timeout: float = 60.0) -> Any:
        return await until(self._changed, lambda: pred(self.surface), timeout)

    async def card(self, key: str, *, open_: bool = True, timeout: float = 60.0) -> OutMessage:
        """The message with this key once it shows buttons (open_) or none (settled)."""
        def pred(s: MemorySurface) -> OutMessage | None:
            for p in s.find(key):
                if p.msg.key == key and bool(p.msg.buttons) == open_:
                    return p.msg
            return None
        msg: OutMessage = await self.until(pred, timeout)
        return msg


def kill_cli_children() -> list[int]:
    """SIGKILL the CLI processes this test process started (by pid, found as our children), the way
    they die with a crashed bot; returns their pids."""
    me, killed = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and "claude" in cmd:
            os.kill(int(entry), signal.SIGKILL)
            killed.append(int(entry))
    return killed


async def transcript_has(live: Any, step: str, needle: str, timeout: float = 30.0) -> None:
    """Wait until the step's session transcript in the run's store holds `needle`.

    The CLI mirrors its transcript to the store asynchronously; a test that kills the CLI must first
    wait for what it wants the woken run to resume from, or the resumed history depends on timing.
    """
    rt = live.side.runtime  # an in-process run: its RunEngine

    async def poll() -> None:
        while True:
            sid = live.side.workflow.sessions.get(step)
            if sid:
                entries = await rt.store.load({"project_key": rt.project_key, "session_id": sid}) or []
                if any(needle in json.dumps(e, ensure_ascii=False) for e in entries):
                    return
            await asyncio.sleep(0.05)  # polling a condition on disk: there is no event to wait on
    await asyncio.wait_for(poll(), timeout)


def posted(surface: MemorySurface, key: str) -> Posted:
    found = [p for p in surface.find(key) if p.msg.key == key]
    assert len(found) == 1, f"{key}: {len(found)} messages"
    return found[0]


def button(msg: OutMessage, label: str) -> str:
    return next(b.action_id for b in msg.buttons if b.label == label)


def one_step_flow(*, timeout_s: float = 60.0, resume_prompt: str | None = None,
                  steps: tuple[str, ...] = ("ask",)) -> Callable[[RunPlan], Workflow]:
    """A factory: the named steps in order, each one agent with the human channel; prompts are
    "<step>: <task>" so a scenario can route each step to its own conversation."""
    def factory(plan: RunPlan) -> Workflow:
        ch = HumanChannel(timeout_s=timeout_s)
        spec = AgentSpec(name="asker", allowed_tools=["Read"], channel=ch, max_turns=12)
        wf_steps = [Step(name, spec, f"{name}: {plan.task}", resume_prompt=resume_prompt) for name in steps]
        return Workflow(wf_steps, channel=ch)
    return factory


SETTINGS = frozenset(f.name for f in dataclasses.fields(HubSettings))
KIT = frozenset({"factory", "env", "runtime_options"})


def hub_of(surfaces: Any, store: StateStore, **kw: Any) -> Hub:
    """A Hub from one flat set of keywords, as tests like to write them: HubSettings fields, EngineKit
    fields (factory, env, runtime_options) and the Hub's own (transport, clock, sleeper)."""
    if "park_after_s" in kw:  # a test of parking after a delay: no warm pool keeps its one waiting run's CLI
        kw.setdefault("warm_pool", 0)
    settings = HubSettings(**{k: kw.pop(k) for k in list(kw) if k in SETTINGS})
    kit = {k: kw.pop(k) for k in list(kw) if k in KIT}
    return Hub(surfaces, store, settings, kit=EngineKit(**kit) if kit else None, **kw)


def make_hub(tmp_path: Path, md: ModelDouble, cli_home: Path, surface: MemorySurface, store: StateStore,
             **kw: Any) -> Hub:
    kw.setdefault("factory", one_step_flow())
    kw.setdefault("view", QUICK)
    kw.setdefault("runtime_options", {"resilience": FAST})
    kw.setdefault("env", md.env(cli_home))
    return hub_of(surface, store, root=tmp_path / "runs", **kw)


# Both scenarios below open the same way: one question about tabs and spaces.
FIRST_QUESTION = """
[[conversation]]
name = "main"
after_end = "Going with {last_tool_result}."
[[conversation.turn]]
say = "One question first."
call = [{ tool = "mcp__human__ask", input = { question = "Tabs or spaces?", options = ["tabs", "spaces"] } }]
"""
# A run that asks, is cut off by a bot restart while the question waits, and comes back by itself: the
# question is restored on its old card from the stored session (the model is never asked to repeat it),
# and the answer reaches the model as that call's result. Every process-restart test plays it.
RESTART_SCENARIO = 'name = "restart-life"' + FIRST_QUESTION
# What the thread of a run brought back after a restart says (adapters/hub/wake.py BACK).
BACK_NOTE = "picks up where it was"


# A run that asks twice in one session; the second question says what the first was answered with, so a
# test sees the answer reach the model as the tool's result (the mirror and scale-out tests play it).
TWO_QUESTIONS_SCENARIO = 'name = "two-questions"' + FIRST_QUESTION + """
[[conversation.turn]]
say = "Got {last_tool_result}. One more."
call = [{ tool = "mcp__human__ask", input = { question = "Dark or light?", options = ["dark", "light"] } }]
"""


async def single_flow_on_the_web(md: Any, cli_home: Path, tmp_path: Path) -> tuple[Any, Hub]:
    """A started web front end (port 0) on a hub running the bot's single flow against the double `md`, its
    status card edited on events only; the caller closes the hub, then stops the front end."""
    from adapters.state import MemoryStateStore
    from adapters.web import WebFrontend
    from bots.flows import single_flow

    home = tmp_path / "home"  # the Bash tool sources the user's shell config: give it an empty HOME
    home.mkdir()
    front = WebFrontend(port=0, say=lambda s: None)
    hub = hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs",
                 env={**md.env(cli_home), "HOME": str(home)}, factory=single_flow,
                 view=ViewConfig(status_every_s=0.5, prose_linger_s=0.0))
    front.attach(hub)
    await front.start()
    return front, hub
