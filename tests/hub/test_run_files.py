"""The run's files (adapters/hub/changes.py): the summary names what the run changed and offers a Files
button that posts them into the thread; in a git workspace with the diff stat and the patch. Real SDK +
bundled CLI on the model double, a recording in-memory surface."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from adapters.hub import Bookkeeping
from adapters.memory_surface import MemorySurface
from adapters.state import ChannelPolicy, MemoryStateStore
from flower_core.trimming import TrimPolicy
from flower_core.workbench import DIRNAME
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import THREAD, Watch, ask_call, button, make_hub


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


def scenario() -> Any:
    return scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Working.", "call": [ask_call("Done writing?", ["yes"])]}, {"say": "Finished."}]})


async def run_and_change(hub: Any, watch: Watch, change: Any) -> tuple[str, Any]:
    run = (await drive(hub).start("write things", THREAD, "ana")).run_id
    q = await watch.card("ask:1-q1")
    change(Path(hub.query.run(run).workspace))
    assert (await drive(hub).handle_action(button(q, "yes"), "ana", delivery_id="d1")).ok
    await hub.query.wait(run)
    summary = await watch.until(lambda s: next((m for m in s.thread(kind="summary") if m.buttons), None))
    return run, summary


async def test_the_summary_lists_changed_files_and_the_button_posts_them(double_factory: Any, cli_home: Path,
                                                                        tmp_path: Path) -> None:
    md = await double_factory(scenario())
    surface, store = MemorySurface(), MemoryStateStore()
    store.set_channel_policy("memory:C1", ChannelPolicy(responders={"ana"}))
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, store)

    def change(ws: Path) -> None:
        (ws / "src").mkdir(exist_ok=True)
        (ws / "report.md").write_text("# report\n")
        (ws / "src" / "cli.py").write_text("print('hi')\n")
        (ws / "inbox").mkdir(exist_ok=True)
        (ws / "inbox" / "theirs.txt").write_text("attached by a person")  # not the run's work
    try:
        _run, summary = await run_and_change(hub, watch, change)
        assert "📦 2 files changed: report.md, src/cli.py" in summary.text
        files_button = button(summary, "Files")

        refused = await drive(hub).handle_action(files_button, "mallory", delivery_id="d2")
        assert not refused.ok and not surface.find("files:")
        got = await drive(hub).handle_action(files_button, "ana", delivery_id="d3")
        assert got.ok, got
        posted = {p.msg.attachment.rel: p.msg for p in surface.find("files:") if p.msg.attachment is not None}
        assert set(posted) == {"report.md", "src/cli.py"}
        assert Path(posted["report.md"].attachment.path).read_text() == "# report\n"  # type: ignore[union-attr]
    finally:
        await hub.close()


async def test_a_git_workspace_gets_the_diff_stat_and_the_patch(double_factory: Any, cli_home: Path,
                                                               tmp_path: Path) -> None:
    md = await double_factory(scenario())
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    (project / "app.py").write_text("x = 1\n")
    (project / ".flower").mkdir()
    (project / ".flower" / "INDEX.md").write_text("desk\n")  # a team that commits the framework's desk
    git(project, "add", "app.py", ".flower/INDEX.md")
    git(project, "commit", "-qm", "start")
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, MemoryStateStore(), workspaces={"memory:C1": project})

    def change(ws: Path) -> None:
        (ws / "app.py").write_text("x = 2\n")
        (ws / "new.txt").write_text("new\n")
        (ws / ".flower" / "INDEX.md").write_text("desk, rewritten\n")  # the framework's: tracked, changed
        (ws / ".flower" / "notes").mkdir()
        (ws / ".flower" / "notes" / "goal.md").write_text("goal\n")  # and untracked
    try:
        _run, summary = await run_and_change(hub, watch, change)
        assert "📦 2 files changed: app.py, new.txt" in summary.text and "1 file changed" in summary.text
        assert (await drive(hub).handle_action(button(summary, "Files"), "ana", delivery_id="d2")).ok
        diff = next(p.msg for p in surface.find("files:") if p.msg.key.endswith(":diff"))
        assert diff.attachment is not None and diff.attachment.content is not None
        assert b"-x = 1" in diff.attachment.content and b"+x = 2" in diff.attachment.content
        assert b".flower" not in diff.attachment.content and ".flower" not in summary.text
        posted = {p.msg.attachment.rel for p in surface.find("files:") if p.msg.attachment and p.msg.attachment.rel}
        assert posted == {"app.py", "new.txt"}
    finally:
        await hub.close()


def test_bookkeeping_is_the_desk_and_the_bridges_own_folder_inside_a_workspace(tmp_path: Path) -> None:
    assert Bookkeeping().folders == (DIRNAME,) and TrimPolicy().spill_dirname.startswith(DIRNAME + "/")
    ws = tmp_path / "ws"
    ws.mkdir()
    rule = Bookkeeping.of(ws, ws / "flower-runs" / "channels" / "x" / "runs")  # a hub root inside the project
    assert rule.folders == (".flower", "flower-runs/channels/x/runs")
    assert rule.holds(".flower/INDEX.md") and rule.holds("flower-runs/channels/x/runs/bridge/cards.json")
    assert not rule.holds("notes.md") and not rule.holds(".flowers/a") and not rule.holds("flower-runs/other")
    assert not rule.holds("src/.flower/x")  # only the workspace's own desk
    assert Bookkeeping.of(ws, tmp_path / "elsewhere").folders == (".flower",)
    assert Bookkeeping.of(ws, ws).folders == (".flower",)  # never the whole workspace
