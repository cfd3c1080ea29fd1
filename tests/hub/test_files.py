"""Files attached to a run (adapters/hub/files.py): saved in the workspace's inbox/, then one inbox mail.

The run goes through the real SDK + bundled CLI on the model double: the model's next inbox read is
the proof that the mail names the files. Refusals are checked on the disk: nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub, Incoming, UploadLimits, human_size, inside, workspace_files
from adapters.hub.files import UploadRefused, safe_name
from adapters.memory_surface import MemorySurface
from adapters.state import MemoryStateStore
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.files_support import every_file, found_anywhere
from tests.support.hub_support import INBOX, THREAD, Watch, ask_call, button, make_hub


def inbox_scenario() -> Any:
    """Ask (so the run waits while files arrive), then read the inbox and say what it held."""
    return scenario_of({"name": "main", "after_end": "Again: {last_user_text}", "turn": [
        {"say": "Waiting for you.", "call": [ask_call("Ready?", ["yes"])]},
        {"say": "Reading the inbox.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}"},
    ]})


def workspace(hub: Hub, run_id: str) -> Path:
    record = hub.query.run(run_id)
    assert record is not None
    return Path(record.workspace)



async def test_attached_files_reach_the_workspace_and_the_models_inbox_read(double_factory: Any, cli_home: Path,
                                                                           tmp_path: Path) -> None:
    md = await double_factory(inbox_scenario())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, MemoryStateStore())
    hub.hooks.note("U1", "ana")
    try:
        run = (await drive(hub).start("look at my log", THREAD, "U1")).run_id
        q1 = await watch.card("ask:1-q1")
        log_bytes = b"Traceback: boom\n" * 800
        got = await drive(hub).attach(run, [Incoming("error.log", log_bytes, "text/plain"),
                                     Incoming("error.log", b"second", "text/plain")], "see the trace", "U1",
                               origin="m-1", where=THREAD)
        assert got.ok, got
        assert [(f.name, f.path, f.size) for f in got.files] == [
            ("error.log", "inbox/error.log", len(log_bytes)), ("error-2.log", "inbox/error-2.log", 6)]
        ws = workspace(hub, run)
        assert (ws / "inbox" / "error.log").read_bytes() == log_bytes  # on disk before the answer came back
        assert (ws / "inbox" / "error-2.log").read_bytes() == b"second"
        assert not [p for p in (ws / "inbox").iterdir() if p.name.startswith(".part-")]

        assert (await drive(hub).handle_action(button(q1, "yes"), "U1", delivery_id="d1")).ok
        await hub.query.wait(run)
        read = md.model_requests("main")[2].last_tool_result
        assert f"📎 ana attached inbox/error.log ({human_size(len(log_bytes))}, text/plain)" in read
        assert "📎 ana attached inbox/error-2.log (6 B, text/plain)" in read and "see the trace" in read
        receipt = next(p.msg for p in surface.find("mail:"))
        assert "inbox/error.log" in receipt.text  # receipts as for any mail

        listed = {f["path"]: f for f in workspace_files(ws, since=0.0)}
        assert listed["inbox/error.log"]["size"] == len(log_bytes) and listed["inbox/error.log"]["changed"]
        assert inside(ws, "inbox/error.log") == (ws / "inbox" / "error.log").resolve()
    finally:
        await hub.close()


async def test_files_on_an_ended_run_go_with_its_next_round(double_factory: Any, cli_home: Path,
                                                           tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Round: {last_user_text}", "turn": [
        {"say": "Done at once."}, {"say": "Round: {last_user_text}"}]}))
    surface = MemorySurface()
    hub = make_hub(tmp_path, md, cli_home, surface, MemoryStateStore())
    try:
        run = (await drive(hub).start("task", THREAD, "bob")).run_id
        await hub.query.wait(run)
        got = await drive(hub).attach(run, [Incoming("data.csv", b"a,b\n1,2\n", "text/csv")], "use this", "bob")
        assert got.ok and [f.path for f in got.files] == ["inbox/data.csv"], got
        record = hub.query.run(run)
        assert record is not None and record.round == 2
        await hub.query.wait(run)
        last = md.model_requests("main")[-1].last_user_text
        assert last.startswith("📎 bob attached inbox/data.csv (8 B, text/csv)") and last.endswith("use this")
        assert (workspace(hub, run) / "inbox" / "data.csv").read_bytes() == b"a,b\n1,2\n"
    finally:
        await hub.close()


@pytest.mark.parametrize(("files", "words"), [
    ([Incoming("../../outside.txt", b"x")], "outside the inbox"),
    ([Incoming("/etc/passwd", b"x")], "outside the inbox"),
    ([Incoming("ok.txt", b"fine"), Incoming("empty.txt", b"")], "empty"),
    ([Incoming("gone.bin", None, problem="the download failed (HTTP 403)")], "HTTP 403"),
    ([Incoming("big.bin", b"x" * 2049)], "over the 2.0 KB limit"),
    ([Incoming("a.bin", b"x" * 2000), Incoming("b.bin", b"x" * 2000)], "would pass its"),
    ([], "no file"),
])
async def test_refusals_save_nothing_and_say_why(double_factory: Any, cli_home: Path, tmp_path: Path,
                                                 files: list[Incoming], words: str) -> None:
    md = await double_factory(inbox_scenario())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, MemoryStateStore(),
                   uploads=UploadLimits(max_file_bytes=2048, max_run_bytes=3000))
    try:
        run = (await drive(hub).start("task", THREAD, "carol")).run_id
        await watch.card("ask:1-q1")
        ws = workspace(hub, run)
        before = every_file(ws)
        got = await drive(hub).attach(run, files, "words", "carol")
        assert not got.ok and words in got.message and not got.files
        assert got.problem == ("too_large" if "limit" in words or "pass" in words else "bad_file")
        assert surface.notices_for("carol") == [got.message]
        assert every_file(ws) == before and not found_anywhere(tmp_path, "outside.txt")  # nothing written
        assert not surface.find("mail:")
    finally:
        await hub.close()


async def test_an_outsider_cannot_attach(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    from adapters.state import ChannelPolicy

    md = await double_factory(inbox_scenario())
    surface, store = MemorySurface(), MemoryStateStore()
    store.set_channel_policy("memory:C1", ChannelPolicy(responders={"alice"}))
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, store)
    try:
        run = (await drive(hub).start("task", THREAD, "alice")).run_id
        await watch.card("ask:1-q1")
        got = await drive(hub).attach(run, [Incoming("x.txt", b"x")], "", "mallory")
        assert not got.ok and not (workspace(hub, run) / "inbox").exists()
        assert not (await drive(hub).attach("r-nope", [Incoming("x.txt", b"x")], "", "alice")).ok
    finally:
        await hub.close()


def test_safe_names() -> None:
    assert safe_name("report.pdf") == "report.pdf"
    assert safe_name("Users\\ana\\log.txt") == "log.txt"
    assert safe_name("dir/sub/x.png") == "x.png"
    assert safe_name("bad\x00na\x1bme\u202e.txt") == "badname.txt"
    assert safe_name("..hidden") == "hidden" and safe_name("a..b") == "a.b"
    assert safe_name(".env") == "env" and safe_name("\x07") == "file"
    long = safe_name("x" * 300 + ".tar")
    assert len(long) == 120 and long.endswith(".tar")
    for bad in ("../x", "a/../../b", "/abs", "\\\\server\\share\\x", "C:\\Users\\x.txt"):
        with pytest.raises(UploadRefused):
            safe_name(bad)


def test_inside_refuses_everything_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "ok.txt").write_text("ok")
    (tmp_path / "secret.txt").write_text("secret")
    (ws / "link").symlink_to(tmp_path / "secret.txt")
    assert inside(ws, "sub/ok.txt") == (ws / "sub" / "ok.txt").resolve()
    for bad in ("../secret.txt", "/etc/passwd", str(tmp_path / "secret.txt"), "link", "sub", "nope", "",
                "sub/../../secret.txt"):
        assert inside(ws, bad) is None, bad


def test_sizes_read_like_the_mail() -> None:
    assert human_size(12_700) == "12.4 KB" and human_size(5) == "5 B" and human_size(3 * 1024 * 1024) == "3.0 MB"


def test_the_limits_come_from_bot_and_channel_tables(tmp_path: Path) -> None:
    from bots.bot import build_parser, hub_settings
    from bots.config import ConfigError, load_config

    path = tmp_path / "bot.toml"
    path.write_text('[bot]\nmax_upload_mb = 1\n[channels."slack:C1"]\nmax_run_upload_mb = 2.5\n'
                    '[channels."slack:C2"]\nworkspace = "/tmp/x"\n', encoding="utf-8")
    settings = hub_settings(load_config(build_parser().parse_args(["--config", str(path)]), {}))
    mb = 1024 * 1024
    assert settings.uploads == UploadLimits(1 * mb, 200 * mb)
    assert settings.channel_uploads == {"slack:C1": UploadLimits(1 * mb, int(2.5 * mb))}  # C1's own, C2 inherits
    path.write_text('[channels."slack:C1"]\nmax_upload_mb = "big"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r'\[channels."slack:C1"\].max_upload_mb'):
        load_config(build_parser().parse_args(["--config", str(path)]), {})
