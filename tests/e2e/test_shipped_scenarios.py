"""The shipped fault and handoff scenarios do what their headers promise, through the Runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flower_core import HandoffPolicy
from tests.support.runtime_support import Recorder, make_runtime, spec


async def test_flaky_is_ridden_out_by_retries(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory("flaky")
    rt = make_runtime(tmp_path, md, cli_home)
    rec = Recorder()
    try:
        r = await rt.run(spec(), "list the files", on_event=rec)
    finally:
        rt.close()
    assert r.ok and r.attempts == 2 and r.resumed, (r.error, r.errors)
    assert len(rec.kinds("retry")) == 1  # the 529; the CLI re-requests a cut stream on its own
    assert [(q.turn, q.served) for q in md.model_requests()] == [
        (0, "fault:http:529"), (0, "turn"), (1, "fault:drop"), (1, "turn")]
    assert "Recovered; finishing." in r.text


async def test_long_hands_off_once_with_a_small_window(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory("long")
    # the bridge's fractions: the original's thresholds (50k of room, a 10k floor) never trigger on a 10k window
    rt = make_runtime(tmp_path, md, cli_home, handoff=HandoffPolicy(window=10_000, near=0.70, trigger=0.80))
    rec = Recorder()
    try:
        r = await rt.run(spec(), "count the files", on_event=rec)
    finally:
        rt.close()
    assert rec.phases() == ["near", "writing", "done"] and not rec.kinds("handoff")[-1].payload["degraded"]
    assert r.ok and len(r.retired) == 1 and r.text.endswith("Finished.")
    assert "Report the count." in md.model_requests("successor")[0].first_user_text
