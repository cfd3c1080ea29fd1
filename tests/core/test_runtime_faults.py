"""Resilience through the real CLI: transient faults are retried on the same session, permanent ones stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flower_core.runtime.attempt import Outcome
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


async def test_words_on_a_failed_attempt_reach_the_retry_once(double_factory: Any, cli_home: Path,
                                                              tmp_path: Path) -> None:
    """Words said before the step ride on its first prompt; that attempt fails (529) after the CLI stored
    the prompt, so the retry resumes a session that has them: the model reads them once, not twice."""
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Recovered.", "fault": {"kind": "http", "status": 529, "times": 1}}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        assert rt.interrupt("and use tabs") is False  # kept for the next step's prompt
        r = await rt.run(spec(), "go", step_name="flaky", on_event=Recorder())
    finally:
        rt.close()
    assert r.ok and r.attempts == 2
    last = json.dumps(md.model_requests()[-1].body)
    assert last.count("and use tabs") == 1, last


async def test_words_on_an_attempt_whose_cli_never_started_ride_on_the_retry(double_factory: Any, cli_home: Path,
                                                                             tmp_path: Path) -> None:
    """The person's words go out on an attempt that fails before its CLI stored the prompt (under load the
    CLI may not come up at all): the session the retry resumes never had them, so they ride on the retry's
    prompt instead of being lost. (The failing attempt is the one thing not run for real here.)"""
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Working."}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    real, prompts = rt.parking.attempt, []

    async def flaky(spec_: Any, prompt: str, resume: str | None, fork: bool, state: Any) -> Outcome:
        prompts.append(prompt)
        if len(prompts) == 2:  # the interrupt's attempt: its CLI never started
            return Outcome(session_id=state.session, ok=False, status=529, error="overloaded before it started")
        out = await real(spec_, prompt, resume, fork, state)
        if len(prompts) == 1:
            assert rt.interrupt("and use tabs")  # said while the first attempt runs
        return out

    rt.parking.attempt = flaky  # type: ignore[method-assign]
    try:
        r = await rt.run(spec(), "go", step_name="flaky", on_event=Recorder())
    finally:
        rt.close()
    assert r.ok and len(prompts) == 3 and "and use tabs" in prompts[1]
    last = json.dumps(md.model_requests()[-1].body)
    assert last.count("and use tabs") == 1, prompts
