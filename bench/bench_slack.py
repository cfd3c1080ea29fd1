"""The Slack bridge's cost: ask latency through the whole stack, platform calls, and 429s.

1. Ask latency. One run asks N questions in a row through the real SDK + CLI (model double). Each
   question is measured on two legs: ask -> card (the model double sends the mcp__human__ask call
   until the card reaches the platform) and answer -> result (the answer leaves the person until
   the tool result reaches the model double). Three ways, in the same process, one after another:
     bare   the HumanChannel answered in process as soon as it asks (no hub, no chat);
     memory the hub (view + outbox) with an in-memory surface, answered with Hub.handle_action;
     slack  the hub with the Slack bridge: real AsyncApp over Socket Mode, real AsyncWebClient, the
            Slack double; answered by a click envelope.
   The ratio slack/memory is the Slack bridge's share; slack/bare the whole chat stack's. Slack's
   pacing (1 post/s per channel) is switched off for both hub modes here: with it, a question
   asked within a second of the previous card waits for its turn, which is Slack's limit, not the
   bridge's cost (section 3 shows the pacing at work).
   The Slack double runs on the same event loop as the bridge and the CLI stream, so its own handler
   time (each Web API request it answers, each envelope it sends) is clocked too, and the slack row is
   printed again less the double's time inside each leg: what is the bridge's own (slack-bolt,
   slack-sdk, our adapter) against what a real Slack would spend on its own machines.
2. Platform calls per question and per 1,000 events of that Slack run (Web API calls by method,
   Socket Mode acks).
3. 429s through the real slack-sdk client: posts and edits through the outbox (one 429 holds the
   channel back for Retry-After, nothing lost, order kept) and an ephemeral through the app client
   (slack-sdk's retry handler sleeps Retry-After itself).
Run: .venv/bin/python -m bench.bench_slack [N] [ROUNDS]   (defaults 20 and 2)

Measured (20 questions x 2 rounds, 2-core machine shared with other suites), before and after the
status-card / agent-session coalescer (adapters/slack/coalesce.py), back to back:
  before: 6.4 Web API calls per question (chat.update 124, setStatus 84, postMessage 48), slack/memory
          1.145 at p50, click envelope -> Hub.handle_action p50 7.5 ms;
  after:  2.35 per question (postMessage 1.20, chat.update 1.07, setStatus 0.07), slack/memory 1.014
          at p50 (1.008 less the double's own 0.5 ms), click envelope -> Hub.handle_action p50 1.1 ms.
The ~30 ms were ours: two status-card edits and two setStatus calls per question sharing the loop
with the click and the CLI stream; the double's own handler time is under a millisecond of it.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from adapters.hub import Hub, HubSettings, RunPlan
from adapters.memory_surface import MemorySurface
from adapters.outbox import Outbox
from adapters.platform import MEMORY, SLACK, OutMessage, ThreadRef
from adapters.slack import SlackFrontend, SlackSettings
from adapters.state import MemoryStateStore
from adapters.transport.engine import EngineKit
from adapters.view import ViewConfig
from flower_core import AgentSpec, Event, HumanChannel, Runtime, Step, Workflow
from flower_core.devmodel import ModelDouble, Scenario, parse_scenario
from tests.support.drive import drive
from tests.support.slack_double import APP_TOKEN, BOT_TOKEN, Msg, SlackDouble

C1 = "C0000001"
VIEW = ViewConfig(status_every_s=5.0, prose_linger_s=0.0)


def _scenario(n: int) -> Scenario:
    asks = [{"say": "", "call": [{"tool": "mcp__human__ask", "input": {"question": f"Question {k}?",
                                                                          "options": ["go", "stop"]}}]}
            for k in range(1, n + 1)]
    return parse_scenario({"name": "slack-latency", "conversation": [
        {"name": "main", "turn": [*asks, {"say": "done"}]}]})


def _factory(plan: RunPlan) -> Workflow:
    channel = HumanChannel(timeout_s=120)
    spec = AgentSpec(name="asker", allowed_tools=["Read"], channel=channel, max_turns=200)
    return Workflow([Step("ask", spec, plan.task)], channel=channel)


def _legs(md: ModelDouble, shown: dict[int, float], answered: dict[int, float], n: int) -> list[tuple[float, float]]:
    """Per question k: (ask -> card, answer -> result) in seconds. Request k-1 (0-based) is answered
    with the ask of question k; request k carries its result."""
    reqs = md.model_requests("main")
    return [(shown[k] - reqs[k - 1].received_at, reqs[k].received_at - answered[k]) for k in range(1, n + 1)]


# ---- the three ways -------------------------------------------------------------------------------
async def bare(md: ModelDouble, n: int, tmp: Path) -> list[tuple[float, float]]:
    shown: dict[int, float] = {}
    answered: dict[int, float] = {}
    loop = asyncio.get_running_loop()
    channel = HumanChannel(timeout_s=120)

    def answer(ask_id: str, k: int) -> None:
        answered[k] = time.perf_counter()
        channel.answer(ask_id, "go")

    def on_event(ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            k = int(ev.text.split()[1].rstrip("?"))
            shown[k] = time.perf_counter()
            loop.call_soon_threadsafe(answer, str(ev.payload["id"]), k)

    channel.on_event = on_event
    rt = Runtime(workspace=tmp / "ws", run_dir=tmp / "runs", env=md.env(tmp / "cfg"), handoff=False)
    try:
        result = await rt.run(AgentSpec(name="asker", channel=channel, allowed_tools=["Read"], max_turns=200),
                              "ask away")
    finally:
        rt.close()
    assert result.ok, result.error
    return _legs(md, shown, answered, n)


async def memory(md: ModelDouble, n: int, tmp: Path) -> list[tuple[float, float]]:
    surface = MemorySurface(limits=MEMORY)
    shown: dict[int, float] = {}
    cards: asyncio.Queue[tuple[int, str]] = asyncio.Queue()

    def on_call(call: Any) -> None:
        msg = call.msg
        if call.op == "post" and msg is not None and msg.kind == "ask" and msg.buttons:
            k = int(msg.text.split()[1].rstrip("?"))
            shown[k] = time.perf_counter()
            cards.put_nowait((k, msg.buttons[0].action_id))

    surface.on_call = on_call
    hub = Hub(surface, MemoryStateStore(), HubSettings(root=tmp / "runs", view=VIEW),
              kit=EngineKit(factory=_factory, env=md.env(tmp / "cfg")))
    run = (await drive(hub).start("ask away", ThreadRef("memory", C1, "t1"), "UALICE")).run_id
    answered: dict[int, float] = {}
    for _ in range(n):
        k, action = await asyncio.wait_for(cards.get(), 60)
        answered[k] = time.perf_counter()
        await drive(hub).handle_action(action, "UALICE", delivery_id=f"d{k}")
    await hub.query.wait(run)
    return _legs(md, shown, answered, n)


class DoubleClock:
    """The Slack double's own handler time: (start, end) perf_counter spans of every Web API request it
    answered and every envelope it sent (aiohttp's parsing around them is not counted: a lower bound)."""

    def __init__(self, double: SlackDouble) -> None:
        self.spans: list[tuple[float, float]] = []
        api, send = double._api, double.send

        async def timed_api(request: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await api(request)
            finally:
                self.spans.append((t0, time.perf_counter()))

        async def timed_send(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await send(*a, **kw)
            finally:
                self.spans.append((t0, time.perf_counter()))

        double._api = timed_api  # type: ignore[method-assign]  # before start(): the router takes this one
        double.send = timed_send  # type: ignore[method-assign]

    def within(self, start: float, end: float) -> float:
        return sum(max(0.0, min(b, end) - max(a, start)) for a, b in self.spans)


async def slack(md: ModelDouble, n: int, tmp: Path, double: SlackDouble,
                own: dict[str, list[float]], clock: DoubleClock | None = None,
                ours: list[tuple[float, float]] | None = None) -> tuple[list[tuple[float, float]], int]:
    """The Slack way; also returns how many run events the hub saw (for calls per 1,000 events) and
    adds to `own` the Slack layer's own time on each leg: surface.post entered -> the double has the
    card; click envelope sent -> Hub.handle_action entered."""
    frontend = SlackFrontend(SlackSettings(bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_url=double.api_url))
    frontend.surface.limits = MEMORY  # pacing off, as for the memory mode (see the docstring)
    hub = Hub(frontend.surface, MemoryStateStore(), HubSettings(root=tmp / "runs", view=VIEW),
              kit=EngineKit(factory=_factory, env=md.env(tmp / "cfg")))
    events: list[str] = []
    hub.taps.append(lambda run_id, ev: events.append(ev.kind))
    posting: dict[int, float] = {}
    entered: list[float] = []
    surface_post, submit = frontend.surface.post, hub.submit

    async def timed_post(thread: ThreadRef, msg: OutMessage) -> str:
        if msg.kind == "ask" and msg.buttons:
            posting[int(msg.text.split()[1].rstrip("?"))] = time.perf_counter()
        return await surface_post(thread, msg)

    async def timed_action(*a: Any, **kw: Any) -> Any:  # the door: where a click enters the hub
        entered.append(time.perf_counter())
        return await submit(*a, **kw)

    frontend.surface.post = timed_post  # type: ignore[method-assign]
    hub.submit = timed_action  # type: ignore[method-assign]
    frontend.attach(hub)
    await frontend.start()
    shown: dict[int, float] = {}
    answered: dict[int, float] = {}
    first_call = len(double.calls)  # the double serves every round: look at this run's calls only
    try:
        await double.slash("/flower", "ask away please", user="UALICE", channel=C1)
        root = (await double.wait_for(lambda d: d.roots(C1), 60))[-1].ts
        run = hub.query.runs()[0].run_id
        for k in range(1, n + 1):
            def open_card(d: SlackDouble, k: int = k) -> Msg | None:
                return d.find(C1, root, lambda m: f"Question {k}?" in m.body() and bool(m.buttons()))

            card = await double.wait_for(open_card, 60)
            shown[k] = next(c.at for c in double.calls[first_call:] if c.method == "chat.postMessage"
                            and f"Question {k}?" in str(c.args.get("blocks")))
            own["card"].append(shown[k] - posting[k])
            payload = double.click_payload(card, "go", user="UALICE")
            answered[k] = time.perf_counter()
            await double.send("interactive", payload, wait_ack=False)
            def handled(d: SlackDouble, k: int = k) -> bool:
                return len(entered) >= k

            await double.wait_for(handled, 60)
            own["click"].append(entered[k - 1] - answered[k])
        await hub.query.wait(run)
    finally:
        await hub.close()
        await frontend.stop()
    legs = _legs(md, shown, answered, n)
    if clock is not None and ours is not None:  # the same legs less the double's own time inside each
        reqs = md.model_requests("main")
        for k, (card, result) in enumerate(legs, start=1):
            ours.append((card - clock.within(reqs[k - 1].received_at, shown[k]),
                         result - clock.within(answered[k], reqs[k].received_at)))
    return legs, len(events)


# ---- figures --------------------------------------------------------------------------------------
def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def _row(name: str, legs: list[tuple[float, float]]) -> tuple[float, float]:
    a, b = [x[0] for x in legs], [x[1] for x in legs]
    total = [x + y for x, y in legs]
    print(f"  {name:<7} ask->card p50 {statistics.median(a) * 1000:7.1f} ms  p95 {_pct(a, .95) * 1000:7.1f} ms"
          f" | answer->result p50 {statistics.median(b) * 1000:7.1f} ms  p95 {_pct(b, .95) * 1000:7.1f} ms"
          f" | both p50 {statistics.median(total) * 1000:7.1f} ms")
    return statistics.median(total), _pct(total, .95)


async def latency(n: int, rounds: int) -> None:
    print(f"1. ask latency: {rounds} round(s) of bare, memory, slack, each one run of {n} questions (real SDK + CLI "
          "on the model double); the modes alternate so they share the machine's load")
    legs: dict[str, list[tuple[float, float]]] = {"bare": [], "memory": [], "slack": []}
    own: dict[str, list[float]] = {"card": [], "click": []}
    ours: list[tuple[float, float]] = []
    events = 0
    double = SlackDouble()
    clock = DoubleClock(double)
    await double.start()
    try:
        with tempfile.TemporaryDirectory() as t:
            for r in range(rounds):
                tmp = Path(t) / f"round{r}"
                async with ModelDouble(_scenario(n)) as md:
                    legs["bare"] += await bare(md, n, tmp / "bare")
                async with ModelDouble(_scenario(n)) as md:
                    legs["memory"] += await memory(md, n, tmp / "memory")
                async with ModelDouble(_scenario(n)) as md:
                    got, count = await slack(md, n, tmp / "slack", double, own, clock, ours)
                    legs["slack"] += got
                    events += count
    finally:
        await double.stop()
    results = {name: _row(name, rows) for name, rows in legs.items()}
    o = _row("slack-d", ours)
    s, m, b = results["slack"], results["memory"], results["bare"]
    print(f"  the Slack bridge's share: slack/memory = {s[0] / m[0]:.3f} at p50, {s[1] / m[1]:.3f} at p95 "
          f"(target <= 1.10); the whole chat stack: slack/bare = {s[0] / b[0]:.3f} at p50")
    print(f"  less the Slack double's own handler time (slack-d): slack-d/memory = {o[0] / m[0]:.3f} at p50, "
          f"{o[1] / m[1]:.3f} at p95; the double took {(s[0] - o[0]) * 1000:.1f} ms of the slack p50")
    print(f"  the Slack layer's own time: card HTTP post p50 {statistics.median(own['card']) * 1000:.1f} ms "
          f"(p95 {_pct(own['card'], .95) * 1000:.1f}); click envelope -> Hub.handle_action p50 "
          f"{statistics.median(own['click']) * 1000:.1f} ms (p95 {_pct(own['click'], .95) * 1000:.1f})")
    calls(double, events, n * rounds)


def calls(double: SlackDouble, events: int, asks: int) -> None:
    skip = {"auth.test", "apps.connections.open"}
    by = Counter(c.method for c in double.calls if c.method not in skip)
    total = sum(by.values())
    print(f"2. platform calls in those Slack runs: {total} Web API calls for {events} run events = "
          f"{1000 * total / max(1, events):.0f} per 1,000 events, {total / max(1, asks):.2f} per question "
          f"(target <= 3; each run's start and end included); Socket Mode acks: {len(double.acks)}")
    print("   per question by method: " + ", ".join(f"{m} {k / max(1, asks):.2f}" for m, k in by.most_common()))
    print("   by method: " + ", ".join(f"{m} {k}" for m, k in by.most_common()))


async def rate_limits() -> None:
    print("3. 429 with Retry-After: 1 through the real slack-sdk client")
    async with SlackDouble() as double:
        frontend = SlackFrontend(SlackSettings(bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_url=double.api_url))
        thread = ThreadRef("slack", C1, "")
        outbox = Outbox(frontend.surface, thread, limits=SLACK)
        double.fail("chat.postMessage", 2, retry_after=1)
        double.fail("chat.update", 1, retry_after=1)
        start = time.perf_counter()
        for i in range(6):
            outbox.put(OutMessage(f"n{i}", "notice", f"line {i}", replace=False))
        await outbox.flush()
        outbox.put(OutMessage("n0", "notice", "line 0, edited", replace=True))
        await outbox.flush()
        took = time.perf_counter() - start
        texts = [m.body() for m in double.messages.values()]
        in_order = texts == ["line 0, edited"] + [f"line {i}" for i in range(1, 6)]
        print(f"   outbox: 6 posts + 1 edit meeting 2 post 429s and 1 edit 429 -> "
              f"{len(double.called('chat.postMessage'))} posts, {len(double.called('chat.update'))} edit, "
              f"{outbox.stats.retries} retries, {outbox.stats.dropped} dropped, order kept: {in_order}, "
              f"{took:.2f} s (each 429 holds the channel for Retry-After; Slack's 1 post/s after a burst of "
              f"{SLACK.post_burst} sets the pace in between); 429s seen: "
              f"{len([c for c in double.calls if c.status == 429])}, none retried inside slack-sdk")
        await outbox.close()
        double.fail("chat.postEphemeral", 1, retry_after=1)
        before = len(double.calls)
        start = time.perf_counter()
        await frontend.surface.notify(thread, "UALICE", "hello")
        print(f"   app client: an ephemeral meeting a 429 arrived after {time.perf_counter() - start:.2f} s in "
              f"{len(double.calls) - before} calls (slack-sdk's AsyncRateLimitErrorRetryHandler sleeps Retry-After "
              "plus up to 1 s of jitter)")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 20
    rounds = int(args[1]) if len(args) > 1 else 2
    asyncio.run(latency(n, rounds))
    asyncio.run(rate_limits())
    print(f"command: .venv/bin/python -m bench.bench_slack {n} {rounds}")


if __name__ == "__main__":
    main()
