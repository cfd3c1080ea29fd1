"""The agent's `share(path, note)` (flower_core/human/share.py) through the real SDK + bundled CLI on the
model double: a file of the workspace becomes one message with the file attached; a path outside the
workspace (`..`, absolute, a symlink out) is refused to the agent with a clear tool result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.memory_surface import MemorySurface
from adapters.state import MemoryStateStore
from flower_core.human.share import resolve_share
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import THREAD, Watch, ask_call, button, make_hub

SHARE = "mcp__human__share"


def share_call(path: str, note: str = "") -> dict[str, Any]:
    return {"tool": SHARE, "input": {"path": path, "note": note}}


async def test_the_agent_shares_a_workspace_file_and_nothing_outside(double_factory: Any, cli_home: Path,
                                                                    tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the thread")
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Writing the report.", "call": [ask_call("Go?", ["go"])]},
        {"say": "Here it is.", "call": [share_call("out/report.md", "the weekly report <!channel>")]},
        {"say": "Shared: {last_tool_result}", "call": [share_call("../../../secret.txt")]},
        {"say": "Outside: {last_tool_result}", "call": [share_call(str(secret))]},
        {"say": "Absolute: {last_tool_result}", "call": [share_call("link.txt")]},
        {"say": "Link: {last_tool_result}", "call": [share_call("missing.md")]},
        {"say": "Missing: {last_tool_result}"},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, MemoryStateStore())
    try:
        run = (await drive(hub).start("report", THREAD, "ana")).run_id
        q = await watch.card("ask:1-q1")
        record = hub.query.run(run)
        assert record is not None
        ws = Path(record.workspace)
        (ws / "out").mkdir(parents=True, exist_ok=True)
        (ws / "out" / "report.md").write_text("# Report\nall good\n")
        (ws / "link.txt").symlink_to(secret)
        assert (await drive(hub).handle_action(button(q, "go"), "ana", delivery_id="d1")).ok
        await hub.query.wait(run)

        shared = [p.msg for p in surface.find("share:")]
        assert len(shared) == 1, [m.text for m in shared]
        msg = shared[0]
        assert msg.attachment is not None and msg.attachment.rel == "out/report.md"
        assert Path(msg.attachment.path) == (ws / "out" / "report.md").resolve() and msg.attachment.size == 18
        assert msg.attachment.run_id == run and msg.important
        assert msg.text.startswith("📎 out/report.md (18 B)") and "the weekly report" in msg.text

        results = [r.last_tool_result for r in md.model_requests("main")[2:7]]
        assert "out/report.md" in results[0] and "发到对话里" in results[0]
        assert all("工作区之外" in r for r in results[1:4]), results  # .., absolute, a symlink out
        assert "没有这个文件" in results[4]
        assert "not for the thread" not in str([m.text for m in surface.thread()])
    finally:
        await hub.close()


def test_resolve_share_keeps_to_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "a.txt").write_text("a")
    (ws / "empty.txt").write_text("")
    assert resolve_share(ws, "d/a.txt")[0] == (ws / "d" / "a.txt").resolve()
    assert resolve_share(ws, str(ws / "d" / "a.txt"))[0] is not None  # absolute, but inside
    for bad, words in (("d", "没有"), ("empty.txt", "空"), ("../x", "之外"), ("/etc/passwd", "之外"), ("", "没有")):
        found, why = resolve_share(ws, bad)
        assert found is None and words in why, (bad, why)
