"""Slack faults with a real run: 429s on posts and edits lose nothing and keep order. (A bot killed
while a question waits, restarted, answering from the old card: test_slack_bot_process.py, through
the real `flower-bot slack` process.)"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.conftest import scenario_of
from tests.support.hub_support import ask_call
from tests.support.slack_double import ApiCall, SlackDouble
from tests.support.slack_support import C1, card, root_of, slack_bot

RETRY_AFTER = 1  # Slack sends whole seconds (slack-sdk's retry handler parses an int)


def _gaps_honoured(calls: list[ApiCall], method: str) -> bool:
    """Every call of `method` that came after a 429 waited at least its Retry-After."""
    seq = [c for c in calls if c.method == method]
    return all(b.at - a.at >= RETRY_AFTER - 0.05 for a, b in itertools.pairwise(seq) if a.status == 429)


async def test_429s_on_post_and_update_lose_nothing_and_keep_order(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path) -> None:
    turns: list[dict[str, Any]] = [{"say": f"Line {i}.", "call": [{"tool": "Read", "input": {"file_path": f"f{i}"}}]}
                                   for i in range(5)]
    turns.insert(2, {"say": "Line q.", "call": [ask_call("Go on?", ["yes"])]})
    md = await double_factory(scenario_of({"name": "main", "after_end": "Line end.", "turn": turns}))
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        double.fail("chat.postMessage", 1, retry_after=RETRY_AFTER)  # the root card: slack-sdk retries it itself
        double.fail("chat.update", 1, retry_after=RETRY_AFTER)  # the first status edit: the outbox retries
        assert await double.slash("/flower", "weather the storm", user="UALICE", channel=C1) is None
        ask = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Go on?"))
        root = root_of(double).ts
        double.fail("chat.postMessage", 1, retry_after=RETRY_AFTER)  # now the outbox's posts and edits
        double.fail("chat.update", 1, retry_after=RETRY_AFTER)
        double.fail("chat.postEphemeral", 1, retry_after=RETRY_AFTER)  # slack-sdk's own retry handler
        late = double.click_payload(ask, "yes", user="UBOB")  # Bob clicks the card as Alice saw it
        await double.click(ask, "yes", user="UALICE")
        await double.send("interactive", late)  # late: its ephemeral meets a 429 first
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root))
        assert run is not None
        live = await bot.hub.query.wait(run)
        assert live is not None and live.pipe.fanout.stats.dropped == 0
        await double.wait_for(lambda d: d.ephemerals_for("UBOB"))

        thread = double.thread(C1, root)
        prose = "\n\n".join(m.body() for m in thread if m.body().startswith("Line") and not m.header())
        expected = [f"Line {i}." for i in range(2)] + ["Line q."] + [f"Line {i}." for i in range(2, 5)] + ["Line end."]
        assert prose == "\n\n".join(expected), repr(prose)  # bursts may merge into one post, never lost or reordered
        order = [next(i for i, m in enumerate(thread) if needle in m.body()) for needle in ("Line q.", "Go on?")]
        assert order == sorted(order) and thread[order[1]].header().startswith("✅ Answered")
        assert any(m.header() == "✅ Finished" for m in thread) and root_of(double).header().startswith("✅ Done")
        failed = [c for c in double.calls if c.status == 429]
        assert len(failed) == 5 and {c.method for c in failed} == {"chat.postMessage", "chat.update",
                                                                   "chat.postEphemeral"}
        for method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
            assert _gaps_honoured(double.calls, method), method
        assert len(double.roots(C1)) == 1  # the root card's retry posted it once
