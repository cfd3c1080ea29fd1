"""The outbox on a simulated clock: nothing really sleeps; time moves only when the test says so."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import pytest

from adapters.outbox import Outbox, OutboxBounds
from adapters.platform import (
    MEMORY,
    SLACK,
    Button,
    OutMessage,
    PermanentSurfaceError,
    PlatformLimits,
    Surface,
    ThreadRef,
    TransientSurfaceError,
)
from adapters.state import MemoryStateStore

T = TypeVar("T")
THREAD = ThreadRef("fake", "C1", "t1")


class SimClock:
    """A manual clock; `sleep` parks the caller until the test moves time past its deadline."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(0.0, delay), next(self._seq), fut))
        await fut

    @staticmethod
    async def settle() -> None:
        for _ in range(50):  # let every ready task run until it blocks again (no I/O in these tests)
            await asyncio.sleep(0)

    def _wake_next(self) -> None:
        deadline, _, fut = heapq.heappop(self._sleepers)
        self.now = max(self.now, deadline)
        if not fut.done():  # a cancelled sleeper just goes away
            fut.set_result(None)

    async def advance(self, delay: float) -> None:
        target = self.now + delay
        await self.settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            self._wake_next()
            await self.settle()
        self.now = target

    async def run(self, aw: Awaitable[T], max_time: float = 10_000.0) -> T:
        """Await `aw`, jumping the clock from one sleeper's deadline to the next."""
        task = asyncio.ensure_future(aw)
        while True:
            await self.settle()
            if task.done():
                return task.result()
            assert self._sleepers, "stuck: nothing is sleeping and the awaited thing is not done"
            assert self._sleepers[0][0] <= max_time, "simulated time ran away"
            self._wake_next()


@dataclass
class Call:
    at: float
    op: str
    msg: OutMessage
    message_id: str
    ok: bool


class FakeSurface:
    name = "fake"

    def __init__(self, clock: SimClock, limits: PlatformLimits = MEMORY,
                 fail: Callable[[str, OutMessage, int], Exception | None] | None = None) -> None:
        self.clock, self.limits, self.fail = clock, limits, fail
        self.calls: list[Call] = []
        self.shown: dict[str, OutMessage] = {}  # what each platform message shows now
        self.notes: list[tuple[str, str]] = []

    def _maybe_fail(self, op: str, msg: OutMessage, mid: str) -> None:
        exc = self.fail(op, msg, len(self.calls)) if self.fail else None
        self.calls.append(Call(self.clock.now, op, msg, mid, exc is None))
        if exc is not None:
            raise exc

    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        mid = f"m{len(self.shown) + 1}"
        self._maybe_fail("post", msg, mid)
        self.shown[mid] = msg
        return mid

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        self._maybe_fail("update", msg, message_id)
        self.shown[message_id] = msg

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        self.notes.append((user, text))

    def ok(self, op: str | None = None) -> list[Call]:
        return [c for c in self.calls if c.ok and (op is None or c.op == op)]


def notice(i: int) -> OutMessage:
    return OutMessage(f"n:{i}", "notice", f"notice {i}")


def status(v: int) -> OutMessage:
    return OutMessage("status", "status", f"status v{v}", title="Run", fields=[("step", f"{v}")])


def make(clock: SimClock, surface: FakeSurface, **kw: object) -> Outbox:
    return Outbox(surface, THREAD, clock=clock, sleeper=clock.sleep, **kw)  # type: ignore[arg-type]


async def test_fake_is_a_surface() -> None:
    assert isinstance(FakeSurface(SimClock()), Surface)


async def test_a_burst_coalesces() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, SLACK)
    ob = make(clock, fake)
    for i in range(30):
        ob.put(status(i))
        ob.put(OutMessage(f"prose:{i}", "prose", f"p{i}"))
    await clock.run(ob.flush())
    assert [(c.op, c.msg.key) for c in fake.calls] == [("post", "status"), ("post", "prose:0")]
    assert fake.calls[0].msg.text == "status v29" and fake.calls[0].msg.fields == [("step", "29")]
    assert fake.calls[1].msg.text == "\n\n".join(f"p{i}" for i in range(30))
    assert ob.stats.coalesced == 29 + 29 and ob.stats.posts == 2 and ob.stats.dropped == 0


async def test_edits_coalesce_while_waiting_for_the_budget() -> None:
    clock = SimClock()
    limits = PlatformLimits(text_max=2000, post_per_s=1, post_burst=1, update_per_min=6, update_burst=1)
    fake = FakeSurface(clock, limits)
    ob = make(clock, fake)
    ob.put(status(0))
    await clock.advance(0)
    ob.put(status(1))  # the one update token goes at once
    await clock.advance(0)
    for v in range(2, 20):  # the next token is 10 s away: these collapse into one edit
        ob.put(status(v))
        await clock.advance(0.5)
    await clock.run(ob.flush())
    assert [(c.at, c.op, c.msg.text) for c in fake.calls] == [
        (0.0, "post", "status v0"), (0.0, "update", "status v1"), (10.0, "update", "status v19")]
    assert fake.shown["m1"].text == "status v19"


async def test_rate_budget_is_respected_and_separate_for_edits() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, SLACK)  # posts 1/s burst 3; updates 50/min burst 5
    ob = make(clock, fake)
    ob.put(status(0))
    for i in range(12):
        ob.put(notice(i))
    await clock.run(ob.flush())
    posts = fake.ok("post")
    assert [c.msg.key for c in posts] == ["status"] + [f"n:{i}" for i in range(12)]
    assert [c.at for c in posts] == [0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    for a, b in itertools.combinations(range(len(posts)), 2):  # token-bucket envelope
        assert b - a + 1 <= SLACK.post_burst + (posts[b].at - posts[a].at) * SLACK.post_per_s + 1e-9
    # The post bucket is empty now; an edit does not wait for it.
    t0 = clock.now
    ob.put(status(1))
    ob.put(notice(99))
    await clock.run(ob.flush())
    assert [(c.op, c.at - t0) for c in fake.calls[-2:]] == [("update", 0.0), ("post", 1.0)]


async def test_a_429_storm_loses_nothing_and_keeps_order() -> None:
    clock = SimClock()

    def every_other(op: str, msg: OutMessage, n: int) -> Exception | None:
        return TransientSurfaceError("429 Too Many Requests", retry_after=1.0) if n % 2 else None

    fake = FakeSurface(clock, SLACK, fail=every_other)
    errors: list[OutMessage] = []
    ob = make(clock, fake, on_error=lambda m, e: errors.append(m))
    expected = []
    for i in range(40):
        if i % 10 == 5:
            msg = OutMessage(f"ask:q{i}", "ask", f"question {i}?", buttons=[Button("yes", f"fl1:ans:r:q{i}:0")],
                             important=True)
        else:
            msg = notice(i)
        expected.append(msg.key)
        ob.put(msg)
        ob.put(status(i))
        if i % 7 == 0:
            await clock.advance(0.3)
    await clock.run(ob.flush())
    posted = [c.msg.key for c in fake.ok("post") if c.msg.key != "status"]
    assert posted == expected
    assert errors == [] and ob.stats.dropped == 0
    assert ob.stats.retries == len([c for c in fake.calls if not c.ok]) > 20
    assert fake.shown[ob.message_id("status")].text == "status v39"  # type: ignore[index]
    for failed, nxt in itertools.pairwise(fake.calls):
        if not failed.ok:
            assert nxt.at >= failed.at + 1.0  # retry_after honoured


async def test_important_messages_survive_permanent_errors() -> None:
    clock = SimClock()
    failures = {"ask:q1": 5, "n:bad": 10**9}

    def flaky(op: str, msg: OutMessage, n: int) -> Exception | None:
        if failures.get(msg.key, 0) > 0:
            failures[msg.key] -= 1
            return PermanentSurfaceError("invalid_blocks")
        return None

    fake = FakeSurface(clock, SLACK, fail=flaky)
    errors: list[tuple[str, str]] = []
    ob = make(clock, fake, on_error=lambda m, e: errors.append((m.key, str(e))))
    ob.put(OutMessage("n:bad", "notice", "doomed"))
    ob.put(OutMessage("ask:q1", "ask", "Proceed?", important=True))
    ob.put(OutMessage("summary", "summary", "done", important=True))
    await clock.run(ob.flush())
    assert [c.msg.key for c in fake.ok("post")] == ["ask:q1", "summary"]
    assert errors == [("n:bad", "invalid_blocks")]
    assert ob.stats.dropped == 1 and ob.stats.retries == 5


async def test_important_retries_are_bounded() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, SLACK, fail=lambda op, m, n: PermanentSurfaceError("channel_not_found"))
    errors: list[str] = []
    ob = make(clock, fake, on_error=lambda m, e: errors.append(m.key))
    ob.put(OutMessage("summary", "summary", "done", important=True))
    await clock.run(ob.flush())
    assert errors == ["summary"] and ob.stats.dropped == 1
    assert 570 <= clock.now <= 600  # about ten minutes of backoff, then reported


async def test_failed_edit_is_posted_anew() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, MEMORY, fail=lambda op, m, n: PermanentSurfaceError("message_not_found")
                       if op == "update" else None)
    ob = make(clock, fake)
    ob.put(status(0))
    await clock.run(ob.flush())
    ob.put(status(1))
    await clock.run(ob.flush())
    assert [c.op for c in fake.calls] == ["post", "update", "post"]
    assert ob.message_id("status") == "m2" and fake.shown["m2"].text == "status v1"


async def test_long_text_is_split_and_the_key_edits_all_parts() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, SLACK)
    sent: list[tuple[str, str]] = []
    ob = make(clock, fake, on_sent=lambda m, mid: sent.append((m.key, mid)))
    para = "word " * 500  # 2,500 chars
    ob.put(OutMessage("ask:q1", "ask", f"{para}\n\n{para}", title="Question", important=True,
                      buttons=[Button("OK", "fl1:ans:r1:q1:0", "primary")]))
    await clock.run(ob.flush())
    first, second = fake.calls
    assert (first.msg.key, second.msg.key) == ("ask:q1", "ask:q1#2")
    assert first.msg.title == "Question" and first.msg.buttons == [] and second.msg.buttons[0].label == "OK"
    assert all(len(c.msg.text) <= SLACK.text_max for c in fake.calls)
    assert sent == [("ask:q1", "m1")]
    ob.put(OutMessage("ask:q1", "ask", "answered: OK", title="Question"))  # shrinks to one part
    await clock.run(ob.flush())
    assert [(c.op, c.message_id) for c in fake.calls[2:]] == [("update", "m1"), ("update", "m2")]
    assert fake.shown["m1"].text == "answered: OK" and fake.shown["m2"].text == "(continued above)"
    assert fake.shown["m2"].buttons == []


async def test_replace_false_posts_a_fresh_message() -> None:
    clock = SimClock()
    fake = FakeSurface(clock)
    ob = make(clock, fake)
    ob.put(status(0))
    await clock.run(ob.flush())
    ob.put(OutMessage("status", "status", "moved to the bottom", replace=False))
    await clock.run(ob.flush())
    assert [c.op for c in fake.calls] == ["post", "post"] and ob.message_id("status") == "m2"


async def test_prose_queue_is_bounded_drop_oldest() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, SLACK)
    ob = make(clock, fake, bounds=OutboxBounds(max_prose=5))
    ob.put(OutMessage("ask:q1", "ask", "important stays", important=True))
    for i in range(12):
        ob.put(OutMessage(f"prose:{i}", "prose", f"p{i}"))
    await clock.run(ob.flush())
    assert ob.stats.dropped == 7
    assert [c.msg.text for c in fake.calls] == ["important stays", "p7\n\np8\n\np9\n\np10\n\np11"]


async def test_mentions_are_defused() -> None:
    clock = SimClock()
    fake = FakeSurface(clock)
    ob = make(clock, fake)
    ob.put(OutMessage("prose:1", "prose", "hey @everyone and <!channel>", title="@here"))
    await clock.run(ob.flush())
    msg = fake.calls[0].msg
    assert "@everyone" not in msg.text and "<!channel>" not in msg.text and msg.title == "@\u200bhere"


async def test_edits_survive_a_restart_through_the_store() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, SLACK)
    store = MemoryStateStore()
    ob = make(clock, fake, store=store)
    ob.put(OutMessage("summary", "summary", "x " * 2000, important=True))  # two parts
    await clock.run(ob.flush())
    await ob.close()
    assert store.get_message(THREAD, "summary") == "m1" and store.get_message(THREAD, "summary#2") == "m2"
    again = make(clock, fake, store=store)  # a new process: nothing in memory
    again.put(OutMessage("summary", "summary", "final", important=True))
    await clock.run(again.flush())
    assert [(c.op, c.message_id) for c in fake.calls[2:]] == [("update", "m1"), ("update", "m2")]


async def test_put_never_raises_and_close_stops_intake() -> None:
    clock = SimClock()
    fake = FakeSurface(clock, fail=lambda op, m, n: RuntimeError("surface bug"))
    errors: list[str] = []
    ob = make(clock, fake, on_error=lambda m, e: errors.append(f"{m.key}: {e}"))
    ob.put(notice(1))
    await clock.run(ob.flush())
    assert errors == ["n:1: surface bug"] and ob.stats.dropped == 1
    await ob.close()
    ob.put(notice(2))
    assert ob.stats.dropped == 2 and errors[-1] == "n:2: outbox is closed"


@pytest.mark.parametrize("drain", [True, False])
async def test_close(drain: bool) -> None:
    clock = SimClock()
    fake = FakeSurface(clock, SLACK)
    ob = make(clock, fake)
    for i in range(6):
        ob.put(notice(i))
    await clock.advance(0)  # the burst (3) goes out; the rest waits for tokens
    await clock.run(ob.close(drain=drain))
    assert len(fake.calls) == (6 if drain else 3)
    assert ob.stats.dropped == (0 if drain else 3)
    assert ob._task is None or ob._task.done()  # no worker left behind


def test_the_message_model_refuses_nonsense() -> None:
    ref = ThreadRef("slack", "C1", "1700000000.1:x")
    assert str(ref) == "slack:C1:1700000000.1:x" and ThreadRef.parse(str(ref)) == ref
    assert ThreadRef.parse("discord:42:") == ThreadRef("discord", "42")
    for bad in ("slack", "slack:C1", ":C1:t"):
        with pytest.raises(ValueError):
            ThreadRef.parse(bad)
    with pytest.raises(ValueError, match="kind"):
        OutMessage("k", "shout", "x")
    with pytest.raises(ValueError, match="style"):
        Button("x", "fl1:stop:r:", "red")


def test_lru_forgets_the_least_recently_used() -> None:
    from adapters.lru import LRU

    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # touching "a" makes "b" the oldest
    lru.put("c", 3)
    assert "b" not in lru and lru.get("a") == 1 and lru.get("c") == 3 and len(lru) == 2
    lru.discard("a")
    assert "a" not in lru
