"""The original flower's trimming and pruning session stores, and Runtime(trim=, ephemeral=, keep_denials=).

What a resume is fed is rewritten at load() time only; SQLite keeps what the CLI wrote. The real-CLI
test checks both sides: what the model double was sent after the resume, and what the store still holds.
The shape tests feed a real SQLite store hand-written transcripts for the cases the CLI rarely makes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claude_agent_sdk import HookMatcher

from flower_core import (
    EphemeralPolicy,
    PrunePolicy,
    PruningSessionStore,
    Runtime,
    TrimmingSessionStore,
    TrimPolicy,
    trim_report,
)
from tests.conftest import scenario_of
from tests.support import store_contract as contract
from tests.support.runtime_support import FAST, spec

KEY: Any = {"project_key": "p", "session_id": "s"}


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}}


async def refuse_rm(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
    if "rm " not in str((data.get("tool_input") or {}).get("command", "")):
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "no removing here"}}


async def test_a_resume_is_fed_the_trimmed_history_and_the_store_keeps_the_original(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
    big = "".join(f"line {n:03d} of the first large file, padded to be long enough\n" for n in range(80))
    (ws / "big1.txt").write_text(big)
    (ws / "big2.txt").write_text(big.replace("first", "second"))
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Reading one.", "call": [{"tool": "Read", "input": {"file_path": str(ws / "big1.txt")}}]},
        {"say": "Reading two.", "call": [{"tool": "Read", "input": {"file_path": str(ws / "big2.txt")}}]},
        {"say": "Glance one.", "call": [bash("echo glance one output | tr a-z A-Z")]},
        {"say": "Glance two.", "call": [bash("echo glance two output | tr a-z A-Z")]},
        {"say": "Remove one.", "call": [bash("rm -rf first-doomed")]},
        {"say": "Remove two.", "call": [bash("rm -rf second-doomed")]},
        {"say": "done one"},
        {"say": "done two"}]}))
    rt = Runtime(workspace=ws, run_dir=tmp_path / "runs", env={**md.env(cli_home), "HOME": str(home)},
                 resilience=FAST, trim=TrimPolicy(keep_recent=1, min_chars=2000),
                 ephemeral=EphemeralPolicy(keep_recent=1), keep_denials=1)
    agent = spec(permission_mode="acceptEdits", allowed_tools=["Read", "Bash"],
                 hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[refuse_rm])]})
    try:
        assert isinstance(rt.store, PruningSessionStore)
        first = await rt.run(agent, "first prompt")
        assert first.ok, first.error
        sent_first = json.dumps(md.model_requests()[-1].body["messages"], ensure_ascii=False)
        second = await rt.run(agent, "second prompt", resume=first.session_id)
        assert second.ok, second.error
        key: Any = {"project_key": rt.project_key, "session_id": first.session_id}
        stored = json.dumps(await rt.store.load_stored(key), ensure_ascii=False)
        report = trim_report(rt.store)
    finally:
        rt.close()
    sent = json.dumps(md.model_requests()[-1].body["messages"], ensure_ascii=False)
    # Before the resume the model saw everything, as it happened.
    assert "first large file" in sent_first and "GLANCE ONE OUTPUT" in sent_first and "first-doomed" in sent_first
    # The resume: the older large result is a pointer to a file in the workspace, the newer one stays.
    assert "first large file" not in sent and "second large file" in sent
    spilled = list((ws / ".flower" / "spill").glob("*.txt"))
    assert len(spilled) == 1 and "first large file" in spilled[0].read_text()
    assert f".flower/spill/{spilled[0].name}" in sent
    # The older glance is marked stale, the newer one is kept; the older refusal is gone, call and result.
    assert "GLANCE ONE OUTPUT" not in sent and "stale" in sent and "GLANCE TWO OUTPUT" in sent
    assert "first-doomed" not in sent and "second-doomed" in sent and "second prompt" in sent
    assert "done one" in sent
    # SQLite still holds every byte the CLI wrote.
    for original in ("first large file", "GLANCE ONE OUTPUT", "first-doomed", "second-doomed"):
        assert original in stored, original
    assert report.startswith("trimmed 1 tool result"), report


async def test_runtime_default_store_expires_and_prunes_but_does_not_trim(tmp_path: Path) -> None:
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    try:
        store = rt.store
        assert isinstance(store, PruningSessionStore) and store.workspace == rt.workspace
        assert not store.policy.enabled and store.ephemeral.enabled and store.prune_policy.keep_denials == 1
    finally:
        rt.close()
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", trim=True, ephemeral=False, keep_denials=3)
    try:
        assert rt.store.policy.enabled and not rt.store.ephemeral.enabled and rt.store.prune_policy.keep_denials == 3
    finally:
        rt.close()


async def test_the_stores_pass_the_sdk_conformance_suite(tmp_path: Path) -> None:
    await contract.check_conformance(lambda n: PruningSessionStore(tmp_path / f"p{n}.db", tmp_path / "ws"))
    await contract.check_conformance(lambda n: TrimmingSessionStore(tmp_path / f"t{n}.db", tmp_path / "ws"))


# -- transcripts written by hand: the shapes the CLI makes rarely -----------------------------------------

def chain(*entries: dict[str, Any]) -> list[dict[str, Any]]:
    """Number the entries u0, u1, ... and link each to the one before, as the CLI does."""
    out = []
    for n, entry in enumerate(entries):
        out.append({"type": "user", "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, **entry})
    return out


def call(call_id: str, command: str, *, name: str = "Bash") -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": call_id, "name": name, "input": {"command": command}}]}}


def result(call_id: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                                      "content": content, **extra}]}}


async def test_trimming_keeps_blocks_summaries_images_and_the_stored_rows(tmp_path: Path) -> None:
    image = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x" * 3000}}]
    entries = chain(call("a", "cat big"), result("a", "A" * 3000),
                    {"isCompactSummary": True, **result("z", "Z" * 3000)},
                    call("b", "cat img"), result("b", image),
                    call("c", "cat big2"), result("c", [{"type": "text", "text": "C" * 2500}]),
                    call("d", "cat small"), result("d", "small"))
    with TrimmingSessionStore(tmp_path / "s.db", tmp_path / "ws", policy=TrimPolicy(keep_recent=1),
                              ephemeral=EphemeralPolicy(enabled=False)) as store:
        await store.append(KEY, entries)  # type: ignore[arg-type]
        loaded = [dict(e) for e in await store.load(KEY) or []]
        assert store.last_report == {"cleared": 1, "kept": 1, "chars_saved": 3000}
        assert [dict(e) for e in await store.load_stored(KEY) or []] == entries
    blocks = [e["message"]["content"][0] for e in loaded]
    assert len(loaded) == len(entries) and all(b["type"] in ("tool_use", "tool_result") for b in blocks)
    assert "moved to a file: 3000 characters" in blocks[1]["content"]
    assert blocks[2]["content"] == "Z" * 3000 and blocks[4]["content"] == image  # summary and image untouched
    assert blocks[6]["content"][0]["text"] == "C" * 2500  # the newest large one is kept
    assert trim_report(store) == "trimmed 1 tool result(s) (the last 1 kept), saving ~750 tokens"


async def test_expiry_counts_only_short_bash_glances(tmp_path: Path) -> None:
    entries = chain(call("g1", "git status"), result("g1", "clean"),
                    call("m1", "make build"), result("m1", "built"),
                    call("g2", "ls && git log --oneline"), result("g2", "a b"),
                    call("r1", "x.txt", name="Read"), result("r1", "file text"),
                    call("g3", "git diff"), result("g3", "D" * 2500),
                    call("g4", "pwd"), result("g4", "/ws"))
    with TrimmingSessionStore(tmp_path / "s.db", tmp_path / "ws", ephemeral=EphemeralPolicy(keep_recent=1)) as store:
        await store.append(KEY, entries)  # type: ignore[arg-type]
        loaded = [dict(e) for e in await store.load(KEY) or []]
        assert store.last_report["expired"] == 2
        assert trim_report(store) == "2 stale glance result(s) marked expired"
    texts = [e["message"]["content"][0].get("content") for e in loaded]
    assert "`git status`" in texts[1] and "3 results ago" in texts[1]
    assert "`ls && git log --oneline`" in texts[5] and "2 results ago" in texts[5]
    assert texts[3] == "built" and texts[7] == "file text" and texts[9] == "D" * 2500 and texts[11] == "/ws"


async def test_pruning_drops_old_denials_and_api_errors_and_relinks_the_chain(tmp_path: Path) -> None:
    two_calls = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "trying two"},
        {"type": "tool_use", "id": "d1", "name": "Bash", "input": {"command": "rm a"}},
        {"type": "tool_use", "id": "ok", "name": "Bash", "input": {"command": "ls"}}]}}
    error = {"type": "assistant", "isApiErrorMessage": True,
             "message": {"role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "API"}]}}
    denial = {"toolDenialKind": "permission-rule", "toolUseResult": "Error: refused",
              "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "d1", "content": "refused", "is_error": True},
                  {"type": "tool_result", "tool_use_id": "ok", "content": "x.txt"}]}}
    placeholder = {"type": "assistant", "message": {"role": "assistant", "model": "<synthetic>",
                                                    "content": [{"type": "text", "text": "No response requested."}]}}
    entries = chain({"message": {"role": "user", "content": "go"}}, two_calls, denial, error,
                    call("d2", "rm b"), {"toolDenialKind": "permission-rule", **result("d2", "refused", is_error=True)},
                    call("i1", "sleep 9"), result("i1", "[Request interrupted by user for tool use]", is_error=True),
                    call("d3", "rm c"), {"toolDenialKind": "permission-rule", **result("d3", "refused", is_error=True)},
                    call("open", "ls -la"), placeholder)
    with PruningSessionStore(tmp_path / "s.db", tmp_path / "ws",
                             prune=PrunePolicy(keep_denials=1, heal_orphans=True)) as store:
        await store.append(KEY, entries)  # type: ignore[arg-type]
        loaded = [dict(e) for e in await store.load(KEY) or []]
        again = [dict(e) for e in await store.load(KEY) or []]
        assert (store.pruned, store.denials_dropped) == (3, 2)
    assert loaded == again  # the same history on every load, healing uuid included
    by_uuid = {e["uuid"]: e for e in loaded}
    assert "u3" not in by_uuid and "u4" not in by_uuid and "u5" not in by_uuid  # error, old denial call + result
    assert [b["type"] for b in by_uuid["u1"]["message"]["content"]] == ["text", "tool_use"]
    assert [b["tool_use_id"] for b in by_uuid["u2"]["message"]["content"]] == ["ok"]
    assert "toolUseResult" not in by_uuid["u2"]
    assert by_uuid["u6"]["parentUuid"] == "u2"  # walked up through three dropped entries
    interrupted = by_uuid["u7"]["message"]["content"][0]
    assert "interrupted" in interrupted["content"] and interrupted["is_error"] is False
    assert by_uuid["u9"]["message"]["content"][0]["tool_use_id"] == "d3"  # the newest denial stays
    heal = loaded[-2]
    assert heal["parentUuid"] == "u10" and heal["message"]["content"][0]["tool_use_id"] == "open"
    # The CLI's own synthetic placeholder is conversation structure, not an API error: it stays, after the heal.
    assert loaded[-1]["uuid"] == "u11" and loaded[-1]["parentUuid"] == heal["uuid"]
    # Every kept entry's parent is a kept entry: the chain is whole.
    assert all(e["parentUuid"] is None or e["parentUuid"] in by_uuid for e in loaded)


async def test_spill_threshold_spills_through_the_runtimes_workbench(double_factory: Any, cli_home: Path,
                                                                     tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("".join(f"row {n:03d} of a file the model reads whole\n" for n in range(60)))
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": str(ws / "big.txt")}}]},
        {"say": "read it"}]}))
    rt = Runtime(workspace=ws, run_dir=tmp_path / "runs", env=md.env(cli_home), resilience=FAST, workbench=True,
                 spill_threshold=1000)
    try:
        shaped = rt.load.shaped(rt.load.shaped(spec(), rt.workbench), rt.workbench)
        assert len(shaped.hooks["PostToolUse"]) == 1  # one guard, however often the spec is shaped
        r = await rt.run(spec(), "read big.txt")
    finally:
        rt.close()
    assert r.ok, r.error
    fed = md.model_requests()[-1].last_tool_result
    assert "spilled to" in fed and "row 059" not in fed
    spilled = list((tmp_path / "runs" / "workbench").rglob("spill/*.txt"))
    assert len(spilled) == 1 and "row 059" in spilled[0].read_text()
    plain = Runtime(workspace=ws, run_dir=tmp_path / "runs2", workbench=True, spill_threshold=None)
    try:
        assert not (plain.load.shaped(spec(), plain.workbench).hooks or {}).get("PostToolUse")
    finally:
        plain.close()
