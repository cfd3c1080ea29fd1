"""The Discord bridge's cost: its share of an ask's round trip, and REST calls per 1,000 events.

1. Ask latency. One run asks N questions in a row through the real SDK + CLI (model double). Each
   ask's round trip is the time between two model requests: the reply carrying the ask, the CLI,
   the human channel, the hub, the answer, the CLI again. "Bare": the hub on the in-memory surface,
   answered in-process the moment the card is posted. "Discord": the same hub behind the bridge —
   the card goes out over REST to the Discord double, a person clicks the moment it lands, the
   click comes back over the gateway through discord.py (DynamicItem -> handle_action), and the
   interaction is acknowledged. Both use generous rate limits, so the figure is the bridge's own
   work, not Discord's pacing. Printed: p50/p95 of both and the bridge's share (target <= 10%).
2. REST calls per 1,000 events: the synthetic run stream of bench_hub (shaped like a coordinator
   with workers) through RunView -> Outbox (Discord's limits) -> DiscordSurface -> discord.py ->
   the Discord double, on a virtual clock; every REST call the double records is counted.
Run: .venv/bin/python -m bench.bench_discord [N_ASKS] [N_EVENTS]   (defaults 20 and 5000)
"""

from __future__ import annotations

import asyncio
import dataclasses
import selectors
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from adapters.discord_bridge import DiscordFrontend, DiscordSettings
from adapters.discord_bridge.surface import DiscordSurface
from adapters.hub import Hub, HubSettings, RunPlan
from adapters.hub.fanout import Fanout, Target
from adapters.hub.pipe import RunPipe
from adapters.memory_surface import MemorySurface, SurfaceCall
from adapters.outbox import Outbox
from adapters.platform import DISCORD, ThreadRef
from adapters.state import MemoryStateStore
from adapters.transport.engine import EngineKit
from adapters.view import RunOutcome, RunView, ViewConfig
from bench.bench_hub import Mix, SimLoop, _SimSelector, stream
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from flower_core.devmodel import ModelDouble, Scenario, parse_scenario
from tests.support.discord_double import TOKEN, DiscordDouble
from tests.support.drive import drive

FAST = dataclasses.replace(DISCORD, post_per_s=1000.0, post_burst=1000, update_per_min=60000.0, update_burst=1000)
VIEW = ViewConfig(status_every_s=0.5, prose_linger_s=0.0)


def _scenario(n: int) -> Scenario:
    ask = {"say": "", "call": [{"tool": "mcp__human__ask", "input": {"question": "Next?", "options": ["go"]}}]}
    return parse_scenario({"name": "latency", "conversation": [
        {"name": "main", "turn": [ask] * n + [{"say": "done"}]}]})


def _factory(n: int) -> Any:
    def factory(plan: RunPlan) -> Workflow:
        ch = HumanChannel(timeout_s=60)
        spec = AgentSpec(name="asker", allowed_tools=["Read"], channel=ch, max_turns=n + 4)
        return Workflow([Step("ask", spec, f"ask: {plan.task}")], channel=ch)
    return factory


@dataclasses.dataclass
class Trips:
    round_trips: list[float]  # model request carrying an answer - the one before it
    human_side: list[float]  # the ask event at the hub -> the answer given to the channel


def _trips(md: ModelDouble, n: int, marks: dict[tuple[str, str], float]) -> Trips:
    reqs = md.model_requests("main")
    side = [marks[(f"q{i}", "answered")] - marks[(f"q{i}", "asked")] for i in range(1, n + 1)]
    return Trips([reqs[i + 1].received_at - reqs[i].received_at for i in range(n)], side)


def _marker(marks: dict[tuple[str, str], float]) -> Any:
    def tap(run_id: str, ev: Any) -> None:  # when the hub sees each ask being asked and answered
        p = ev.payload if isinstance(ev.payload, dict) else {}
        if ev.kind == "ask" and p.get("kind") != "mail":
            marks.setdefault((str(p.get("id")), str(p.get("state"))), time.perf_counter())
    return tap


async def bare(n: int, tmp: Path) -> Trips:
    async with ModelDouble(_scenario(n)) as md:
        surface = MemorySurface(limits=FAST)
        hub = Hub(surface, MemoryStateStore(), HubSettings(root=tmp / "bare", view=VIEW, oracle=False),
                  kit=EngineKit(factory=_factory(n), env=md.env(tmp / "cfg-bare")))
        marks: dict[tuple[str, str], float] = {}
        hub.taps.append(_marker(marks))
        tasks: set[asyncio.Task[Any]] = set()

        def on_call(call: SurfaceCall) -> None:  # a person answers the moment the card is shown
            if call.op == "post" and call.msg is not None and call.msg.kind == "ask" and call.msg.buttons:
                t = asyncio.get_running_loop().create_task(
                    drive(hub).handle_action(call.msg.buttons[0].action_id, "ana", delivery_id=call.message_id))
                tasks.add(t)
                t.add_done_callback(tasks.discard)

        surface.on_call = on_call
        run = await drive(hub).start("go", ThreadRef("memory", "C1", "t1"), "ana")
        await hub.query.wait(run.run_id)
        return _trips(md, n, marks)


async def through_discord(n: int, tmp: Path) -> Trips:
    async with ModelDouble(_scenario(n)) as md:
        d = await DiscordDouble().start()
        bridge = DiscordFrontend(DiscordSettings(token=TOKEN, guild_ids=[d.guild_id], api_base=d.api_base,
                                               gateway_url=d.gateway_url, ready_timeout=0.05))
        bridge.surface.limits = FAST
        hub = Hub(bridge.surface, MemoryStateStore(), HubSettings(root=tmp / "discord", view=VIEW, oracle=False),
                  kit=EngineKit(factory=_factory(n), env=md.env(tmp / "cfg-discord")))
        bridge.attach(hub)
        marks: dict[tuple[str, str], float] = {}
        hub.taps.append(_marker(marks))
        await bridge.start()
        ana = d.person("Ana")
        tasks: set[asyncio.Task[Any]] = set()

        def on_call(call: Any) -> None:  # Ana clicks the moment the card lands in the thread
            if call.method != "POST" or not call.path.endswith("/messages") or not call.body:
                return
            ids = [b.get("custom_id", "") for row in call.body.get("components") or [] for b in row["components"]]
            if ids and ids[0].startswith("fl1:ans:"):
                msg = next(m for m in reversed(d.messages.values()) if d.custom_ids(m)[:1] == ids[:1])
                t = asyncio.get_running_loop().create_task(d.click(ana, int(msg["id"]), custom_id=ids[0]))
                tasks.add(t)
                t.add_done_callback(tasks.discard)

        d.on_call = on_call
        try:
            started = await d.slash(ana, "run", task="go")
            await d.until(lambda _: any("Started run" in t for t in started.texts()))
            await hub.query.wait(next(iter(hub.live)))
        finally:
            await hub.close()
            await bridge.stop()
            await d.stop()
        late = [ix for ix in d.interactions.values() if not ix.acked or ix.late]
        assert not late, f"{len(late)} interactions not acknowledged in time"
        return _trips(md, n, marks)


class _SocketAwareSelector(_SimSelector):
    """The virtual clock of bench_hub, but real sockets get a moment first: a loopback connect or
    response is in flight for microseconds, and jumping the clock over it would fire its timeouts."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout <= 0:
            return super().select(timeout)
        ready = self._real.select(0.002)
        return ready if ready else super().select(timeout)


class _SocketSimLoop(SimLoop):
    def __init__(self) -> None:
        self._sim = _SocketAwareSelector()
        asyncio.SelectorEventLoop.__init__(self, self._sim)


def run_sim(coro: Any) -> Any:
    loop = _SocketSimLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


# ---- REST calls per 1,000 events -----------------------------------------------------------------
async def rest_calls(n: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    d = await DiscordDouble().start()
    bridge = DiscordFrontend(DiscordSettings(token=TOKEN, guild_ids=[d.guild_id], api_base=d.api_base,
                                           gateway_url=d.gateway_url))
    await bridge._endpoints_before_login()
    await bridge.client.login(TOKEN)  # REST only: posting needs no gateway
    surface: DiscordSurface = bridge.surface
    channel = bridge.client.get_partial_messageable(d.channel_id)
    starter = await channel.send("starter")
    await bridge.client.http.start_thread_with_message(d.channel_id, starter.id, name="bench",
                                                       auto_archive_duration=1440)
    thread = ThreadRef("discord", str(d.channel_id), str(starter.id))
    before = len(d.calls)
    view = RunView("rbench", "benchmark run", clock=loop.time, epoch="b")
    pipe = RunPipe(view, Fanout(Target(thread, Outbox(surface, thread, clock=loop.time))))
    pipe.start()
    mix = Mix()
    started = loop.time()
    for dt, ev in stream(n, mix=mix):
        await asyncio.sleep(dt)
        pipe.on_event(ev)
    fed = sum(mix.counts.values())
    mix.seconds = loop.time() - started
    pipe.put(view.finish(RunOutcome("done", result="All done.", cost_usd=1.23, duration_s=mix.seconds, steps=3)))
    await pipe.close()
    calls = d.calls[before:]
    texts = [d.text(m) for m in d.bot_messages(starter.id)] + [d.text(d.messages[starter.id])]
    await bridge.client.close()
    await d.stop()
    by_kind: dict[str, int] = {}
    for c in calls:
        kind = f"{c.method} {'reaction' if '/reactions/' in c.path else 'message'}"
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return {"fed": fed, "calls": len(calls), "by_kind": by_kind, "mix": mix, "stats": pipe.fanout.stats,
            "problems": _loss(texts, mix)}


def _loss(texts: list[str], mix: Mix) -> list[str]:
    """Every main-thread prose line in order, every ask settled on its card, the summary."""
    problems, pos = [], 0
    joined = "\n\n".join(texts)
    for line in mix.prose:
        found = joined.find(line, pos)
        if found < 0:
            problems.append(f"prose lost or out of order: {line[:40]}")
            break
        pos = found + len(line)
    for qid in mix.asks:
        if not any(t.startswith("✅ Answered") and f"Question {qid[1:]}:" in t for t in texts):
            problems.append(f"ask {qid} not settled on its card")
    if not any(t.startswith("✅ Finished") for t in texts):
        problems.append("summary missing")
    return problems


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n_events = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    with tempfile.TemporaryDirectory() as tmp:
        base = asyncio.run(bare(n, Path(tmp)))
        disc = asyncio.run(through_discord(n, Path(tmp)))

    def ms(values: list[float]) -> str:
        return f"p50 {pct(values, 0.5) * 1000:.1f} ms, p95 {pct(values, 0.95) * 1000:.1f} ms"

    print(f"ask round trip over {n} asks (model reply -> CLI -> hub -> answer -> next model request):")
    print(f"  bare in-process: {ms(base.round_trips)}; of which ask event -> answer {ms(base.human_side)}")
    print(f"  through Discord: {ms(disc.round_trips)}; of which ask event -> answer {ms(disc.human_side)} "
          "(card over REST, click over the gateway, discord.py, acknowledgement)")
    for q, name in ((0.5, "p50"), (0.95, "p95")):
        extra = pct(disc.human_side, q) - pct(base.human_side, q)
        print(f"  bridge share at {name}: {extra * 1000:+.1f} ms = {100 * extra / pct(base.round_trips, q):+.1f}% "
              f"of the bare round trip (target <= 10%)")
    whole = statistics.median(disc.round_trips) / statistics.median(base.round_trips) - 1
    print(f"  (whole round trips, medians: {100 * whole:+.1f}% — CLI timing noise included)")
    r = run_sim(rest_calls(n_events))
    per_k = 1000.0 * r["calls"] / r["fed"]
    print(f"REST calls per 1,000 events: {per_k:.1f} ({r['calls']} calls for {r['fed']} events over "
          f"{r['mix'].seconds / 3600:.2f} simulated hours; " + ", ".join(f"{k} {v}" for k, v in sorted(
              r["by_kind"].items())) + f") vs 1,000 for one message per event -> {1000.0 / per_k:.0f}x fewer")
    st = r["stats"]
    print(f"  outbox: coalesced {st.coalesced}, retries {st.retries}, dropped {st.dropped}; loss check: "
          + ("none lost, order kept" if not r["problems"] else "; ".join(r["problems"])))
    print("command: .venv/bin/python -m bench.bench_discord 20 5000")


if __name__ == "__main__":
    main()
