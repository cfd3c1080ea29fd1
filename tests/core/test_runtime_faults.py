"""Resilience through the real CLI: transient faults are retried on the same session, permanent ones stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import scenario_of
from tests.support.runtime_support import Recorder, make_runtime, spec


async def test_a_529_is_retried_by_resuming_the_same_session(double_factory: Any, cli_home: Path,
                                                            tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Recovered.", "fault": {"kind": "http", "status": 529, "times": 1}}]}))
    rt = make_runtime(tmp_path, md, cli_home)  # md.env(): CLAUDE_CODE_MAX_RETRIES=0, so the runtime retries
    rec = Recorder()
    try:
        r = await rt.run(spec(), "go", step_name="flaky", on_event=rec)
    finally:
        rt.close()
    first_session = rec.kinds("system")[0].payload["session_id"]
    assert r.ok and r.resumed and r.attempts == 2 and r.session_id == first_session
    assert r.text == "Recovered." and "API Error" not in r.text
    assert len(r.errors) == 1 and "529" in r.errors[0]
    [retry] = rec.kinds("retry")
    assert retry.payload["step"] == "flaky" and retry.payload["attempt"] == 2 and "529" in retry.payload["error"]
    assert retry.text and "\n" not in retry.text
    assert rec.kinds("error") and rec.kinds("error")[0].payload.get("synthetic") is True
    assert [q.served for q in md.model_requests()] == ["fault:http:529", "turn"]
    assert rt.resilience.resume_prompt in md.model_requests()[-1].last_user_text


async def test_a_persistent_fault_fails_after_max_attempts(double_factory: Any, cli_home: Path,
                                                           tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "never", "fault": {"kind": "http", "status": 500, "persistent": True}}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    rec = Recorder()
    try:
        r = await rt.run(spec(), "go", on_event=rec)
    finally:
        rt.close()
    assert not r.ok and r.attempts == rt.resilience.max_attempts == 3
    assert r.error and "500" in r.error and len(r.errors) == 3
    assert r.text == "" and "API Error" not in r.text
    assert [e.payload["attempt"] for e in rec.kinds("retry")] == [2, 3]
    assert len(md.model_requests()) == 3


async def test_a_permanent_error_is_not_retried(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "never", "fault": {"kind": "http", "status": 401, "persistent": True}}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    rec = Recorder()
    try:
        r = await rt.run(spec(), "go", on_event=rec)
    finally:
        rt.close()
    assert not r.ok and r.attempts == 1 and not rec.kinds("retry") and r.error


async def test_overflow_without_handoff_is_a_plain_failure(double_factory: Any, cli_home: Path,
                                                           tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "never", "fault": {"kind": "overflow", "persistent": True}}]}))
    rt = make_runtime(tmp_path, md, cli_home, handoff=False)
    rec = Recorder()
    try:
        r = await rt.run(spec(), "go", on_event=rec)
    finally:
        rt.close()
    assert not r.ok and r.attempts == 1 and not rec.kinds("retry") and not rec.kinds("handoff")
    assert r.error and "too long" in r.error.lower()
