"""One attempt: one CLI process, one prompt, driven through ClaudeSDKClient until its result.

The attempt normalizes every message, keeps the books the Runtime needs (session id, main-thread
prose, synthetic errors, context level, cost), and can be asked to stop: ``StopSignal.request``
makes it send the CLI an interrupt, which ends the turn at the next message boundary with a
result (measured: ~10 ms while a model request is in flight). Every wait is bounded.

CLI starts are bounded per event loop (``start_gate``): a CLI start is ~0.5 s of CPU, so twenty runs
resuming at once on two cores would each take ten seconds and starve the loop; queued, the first ones are
up in a fraction of that, in the order they asked (FIFO), and the process stays responsive.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, SystemMessage
from claude_agent_sdk.types import StreamEvent

from flower_core.events import PARTIAL, Event, normalize
from flower_core.payloads import ThreadPayload, ToolCallPayload, ToolResultPayload
from flower_core.runtime.handoff import is_overflow
from flower_core.runtime.steering import ModelRefused

CONNECT_TIMEOUT = 120.0
INTERRUPT_TIMEOUT = 10.0
ANSWER_LAND_TIMEOUT = 10.0  # an interrupt waits at most this long for an answer on its way to the CLI
DRAIN_TIMEOUT = 30.0
DISCONNECT_TIMEOUT = 30.0
# prompt=None: the CLI continues an interrupted turn on its own (a parked run resuming); if it has not
# started within this long it declined to (see docs/parking.md), and the attempt fails instead of idling.
CONTINUE_TIMEOUT = 60.0
RECENT_CALLS = 12
# How many CLIs may be starting at once in one process (their connect: spawn and the initialize handshake).
STARTS_ENV = "FLOWER_CLI_STARTS"


def start_limit() -> int:
    """``FLOWER_CLI_STARTS`` if set (at least 1), else the number of CPUs (at least 2)."""
    raw = os.environ.get(STARTS_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(2, os.cpu_count() or 2)


_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def start_gate() -> asyncio.Semaphore:
    """The running loop's FIFO bound on CLI starts (an asyncio primitive belongs to one loop)."""
    loop = asyncio.get_running_loop()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = asyncio.Semaphore(start_limit())
    return gate


class StopSignal:
    """Asks a running attempt to stop at the next message boundary. Loop-thread only."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.reason: str | None = None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self.event.set()


@dataclass
class Outcome:
    """What one attempt did. ``stopped`` is the reason when the runtime asked it to stop."""

    session_id: str | None = None
    ok: bool = False
    error: str | None = None
    status: int | None = None
    overflow: bool = False
    stopped: str | None = None
    cost_usd: float = 0.0
    num_turns: int = 0
    texts: list[str] = field(default_factory=list)
    synthetic: list[str] = field(default_factory=list)
    context: int = 0
    tool_calls: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT_CALLS))
    subtype: str = ""
    terminal_reason: str | None = None
    stop_reason: str | None = None  # the last model message's: "end_turn" = the turn had finished

    @property
    def text(self) -> str:
        return "\n\n".join(t.strip() for t in self.texts if t.strip())


def _session_of(msg: Any) -> str | None:
    sid = getattr(msg, "session_id", None)
    if not sid and isinstance(msg, SystemMessage) and isinstance(msg.data, dict):
        sid = msg.data.get("session_id")
    return sid if isinstance(sid, str) and sid else None


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:400]}" if text else type(exc).__name__


class Attempt:
    """Drive one CLI process. ``on_events`` sees every normalized batch (it must not raise much:
    exceptions are swallowed); ``on_session`` is told each new session id the moment it appears."""

    def __init__(self, options: ClaudeAgentOptions, prompt: str | None, *, signal: StopSignal | None = None,
                 on_events: Callable[[list[Event]], None] | None = None,
                 on_session: Callable[[str], None] | None = None,
                 idle_timeout: float | None = None, ask_tool: str = "",
                 waiting_questions: Callable[[bool], int] | None = None,
                 person_waits: Callable[[], bool] | None = None,
                 model_now: Callable[[], str | None] | None = None) -> None:
        self.options = options
        self.model_now = model_now  # the run's model as a person last chose it (a change may land mid-connect)
        self.prompt = prompt
        self.signal = signal or StopSignal()
        self.on_events = on_events
        self.on_session = on_session
        self.idle_timeout = idle_timeout
        self.out = Outcome()
        self._result: ResultMessage | None = None
        self._first = prompt is None  # waiting for a continued turn's first message
        # Question calls (`ask_tool`) of the main thread whose result the CLI has not echoed yet, and how
        # many questions still wait on the human side (withdrawing them first when True is passed):
        # see _let_answers_land.
        self.ask_tool, self.waiting_questions = ask_tool, waiting_questions
        self.person_waits = person_waits  # a question or an approval waits for a person: silence is expected
        self._open_asks: set[str] = set()
        self._asks_closed: asyncio.Event | None = None
        self._client: ClaudeSDKClient | None = None

    async def switch_model(self, model: str | None) -> None:
        """A new model for this CLI from its next model request (SDK ``set_model``). The CLI checks the name
        with the endpoint first: a refusal raises ModelRefused and the CLI keeps its model. Before the CLI is
        connected, or after it is gone, there is nothing to tell: the next attempt's options carry it."""
        client = self._client
        if client is not None:
            await self._switch(client, model)

    @staticmethod
    async def _switch(client: ClaudeSDKClient, model: str | None) -> None:
        try:
            await asyncio.wait_for(client.set_model(model), INTERRUPT_TIMEOUT)
        except Exception as exc:
            if "not found" in str(exc).lower() or "not_found" in str(exc).lower():
                raise ModelRefused(str(exc)) from exc
            # anything else: the CLI is going away; the next attempt's options carry the model

    async def run(self) -> Outcome:
        client = ClaudeSDKClient(self.options)
        try:
            async with start_gate():  # queued behind other starts (the wait is not the connect's time)
                await asyncio.wait_for(client.connect(), CONNECT_TIMEOUT)
            self._client = client
            if self.model_now is not None and (model := self.model_now()) and model != self.options.model:
                with contextlib.suppress(ModelRefused):  # changed while this CLI started; the change hears it
                    await self._switch(client, model)
            if self.prompt is not None:
                await client.query(self.prompt)
            await self._pump(client)
        except asyncio.CancelledError:
            # Abort the turn in flight before hanging up: on a bare stdin EOF the CLI would finish the
            # turn first, still calling the model and running tools for a run nobody waits on.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.interrupt(), INTERRUPT_TIMEOUT)
            raise
        except Exception as exc:
            self.out.error = self.out.error or _short(exc)
        finally:
            self._client = None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.disconnect(), DISCONNECT_TIMEOUT)
        self._settle()
        return self.out

    async def _pump(self, client: ClaudeSDKClient) -> None:
        consumer = asyncio.create_task(self._consume(client))
        stopper = asyncio.create_task(self.signal.event.wait())
        try:
            done, _ = await asyncio.wait({consumer, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if consumer not in done:
                self.out.stopped = self.signal.reason
                await self._let_answers_land(consumer)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(client.interrupt(), INTERRUPT_TIMEOUT)
                try:
                    await asyncio.wait_for(asyncio.shield(consumer), DRAIN_TIMEOUT)
                except TimeoutError:
                    self.out.error = f"the CLI did not stop within {DRAIN_TIMEOUT:.0f}s of an interrupt"
                    return
            await consumer
        finally:
            for task in (consumer, stopper):
                task.cancel()
            await asyncio.gather(consumer, stopper, return_exceptions=True)

    async def _let_answers_land(self, consumer: asyncio.Task[None]) -> None:
        """An interrupt that reaches the CLI while a question call is open makes the CLI reject the call:
        an answer accepted in that instant would never reach the model. So the questions still waiting
        are withdrawn first (an answer after this is refused, and the person is told), and when an open
        call's question was answered before that, the interrupt waits (bounded) until the CLI has echoed
        the result. A call whose question was withdrawn is interrupted at once: the person spoke instead.
        Other stops (parking, a handoff, the budget) keep a waiting question open for what follows."""
        interrupting = self.out.stopped == "interrupt"
        if self.waiting_questions is None or not (self._open_asks or interrupting):
            return
        try:
            waiting = self.waiting_questions(interrupting)
        except Exception:
            waiting = len(self._open_asks)
        if waiting >= len(self._open_asks):
            return
        self._asks_closed = self._asks_closed or asyncio.Event()
        echoed = asyncio.ensure_future(self._asks_closed.wait())
        try:
            await asyncio.wait({echoed, consumer}, timeout=ANSWER_LAND_TIMEOUT)
        finally:
            echoed.cancel()

    async def _consume(self, client: ClaudeSDKClient) -> None:
        stream = client.receive_response().__aiter__()
        # The next message is awaited as a task of its own, so a timeout can be waited out again without
        # cancelling (and so closing) the SDK's stream: a CLI that is silent because a person is being
        # asked (a question, an approval) is not hung, and that wait is the person's, not the idle limit's.
        nxt: asyncio.Future[Any] | None = None
        try:
            while True:
                nxt = nxt or asyncio.ensure_future(stream.__anext__())
                done, _ = await asyncio.wait({nxt}, timeout=self._next_timeout())
                if not done:
                    if not self._first and self.person_waits is not None and self.person_waits():
                        continue
                    self.out.error = (
                        f"the CLI did not continue the interrupted turn within {self._next_timeout():.0f}s"
                        if self._first else f"timeout: no message from the CLI for {self.idle_timeout:.0f}s")
                    return
                got, nxt = nxt, None
                try:
                    msg = got.result()
                except StopAsyncIteration:
                    return
                except Exception as exc:
                    self.out.error = _short(exc)
                    return
                self._first = False
                self._take(msg)
                if isinstance(msg, ResultMessage):
                    return
        finally:
            if nxt is not None:
                # Retrieved whatever becomes of it: a CLI ended by a stop or a shutdown fails this read, and that
                # is this attempt's outcome already, not "Task exception was never retrieved" in the log.
                nxt.add_done_callback(_retrieve)
                if not nxt.done():
                    nxt.cancel()
                    await asyncio.gather(nxt, return_exceptions=True)

    def _next_timeout(self) -> float | None:
        if not self._first:
            return self.idle_timeout
        return CONTINUE_TIMEOUT if self.idle_timeout is None else min(CONTINUE_TIMEOUT, self.idle_timeout)

    def _take(self, msg: Any) -> None:
        sid = _session_of(msg)
        if sid and sid != self.out.session_id:
            self.out.session_id = sid
            if self.on_session is not None:
                with contextlib.suppress(Exception):
                    self.on_session(sid)
        if isinstance(msg, ResultMessage):
            self._result = msg
        events = normalize(msg)
        if isinstance(msg, StreamEvent):  # partial messages on: only the words; the complete message says the rest
            events = [ev for ev in events if ev.kind == PARTIAL]
        for ev in events:
            said = ThreadPayload.of(ev)
            main = not said.subagent
            if ev.kind == "text" and main:
                self.out.texts.append(ev.text)
            elif ev.kind == "error":
                self.out.synthetic.append(ev.text)
            elif ev.kind == "tool_call" and main:
                self.out.tool_calls.append(str(ev))
                if self.ask_tool and ev.tool == self.ask_tool:
                    self._open_asks.add(ToolCallPayload.of(ev).id)
            elif ev.kind == "tool_result" and main and self._open_asks:
                self._open_asks.discard(ToolResultPayload.of(ev).tool_use_id)
                if not self._open_asks and self._asks_closed is not None:
                    self._asks_closed.set()
            if main and said.context > 0:
                self.out.context = said.context
        if self.on_events is not None and events:
            with contextlib.suppress(Exception):
                self.on_events(events)

    def _settle(self) -> None:
        """Turn the result message (or its absence) into ok / error / overflow."""
        out, res = self.out, self._result
        if res is not None:
            out.cost_usd = float(res.total_cost_usd or 0.0)
            out.num_turns = int(res.num_turns or 0)
            out.subtype = res.subtype
            out.terminal_reason = res.terminal_reason
            out.stop_reason = res.stop_reason
            out.status = res.api_error_status
            out.session_id = out.session_id or res.session_id
            if not res.is_error and res.subtype == "success" and out.error is None:
                out.ok = True
            elif res.is_error or res.subtype != "success":
                detail = (res.result or "").strip() or "; ".join(
                    e for e in (res.errors or []) if not e.startswith("[ede_diagnostic]"))
                if res.subtype != "success":
                    detail = f"{res.subtype}: {detail}" if detail else res.subtype
                out.error = detail or (out.synthetic[-1] if out.synthetic else "the CLI reported an error")
        elif out.error is None:
            out.error = "the CLI ended without a result"
        if out.synthetic and out.error and out.synthetic[-1] not in out.error:
            out.error = f"{out.error} ({out.synthetic[-1]})"
        out.overflow = out.terminal_reason == "prompt_too_long" or (
            not out.ok and is_overflow(out.error, *out.synthetic))


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
