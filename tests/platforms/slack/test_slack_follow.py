"""`/flower follow` and `/flower unfollow` refusals in Slack: told to the caller alone, nothing posted
(the full follow — a new thread mirroring a live run — is in tests/e2e/test_mirror_e2e.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, slack_bot


async def test_following_or_unfollowing_an_unknown_run_is_refused_without_a_trace(tmp_path: Path) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double):
        assert await double.slash("/flower", "follow rnothing1", user="UALICE", channel=C1) is None
        await double.wait_for(lambda d: d.responses)
        assert "No run rnothing1" in double.responses[0]["text"]
        assert await double.slash("/flower", "unfollow rnothing1", user="UALICE", channel=C1) is None
        await double.wait_for(lambda d: len(d.responses) >= 2)
        assert "No thread of this channel follows run rnothing1" in double.responses[1]["text"]
        usage = await double.slash("/flower", "follow", user="UALICE", channel=C1)
        assert usage is not None and "/flower follow &lt;run id&gt;" in usage["text"]
        assert double.roots(C1) == [] and not double.called("chat.postMessage")
