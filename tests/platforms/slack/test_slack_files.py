"""Files shared in a run's Slack thread: the real AsyncApp + Socket Mode against the Slack double (which
serves `url_private_download` to the bot token only), the real SDK + CLI against the model double."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.hub import UploadLimits
from adapters.slack.files import SharedFile, SlackFiles
from tests.conftest import scenario_of
from tests.support.files_support import every_file, found_anywhere
from tests.support.hub_support import INBOX, ask_call
from tests.support.slack_double import BOT_TOKEN, BOT_USER, SlackDouble
from tests.support.slack_support import C1, card, root_of, slack_bot


async def test_a_shared_file_reaches_the_workspace_and_the_models_inbox_and_bad_ones_save_nothing(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Send me the log.", "call": [ask_call("Ready?", ["yes"])]},
        {"say": "Reading.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}"},
    ]}))
    async with SlackDouble(names={"UANA": "ana"}) as double, \
            slack_bot(tmp_path, md, cli_home, double, uploads=UploadLimits(max_file_bytes=4096)) as bot:
        assert await double.slash("/flower", "read my log", user="UANA", channel=C1) is None
        q1 = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Ready?"))
        root = root_of(double).ts
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root))
        assert run is not None
        record = bot.hub.query.run(run)
        assert record is not None
        workspace = Path(record.workspace)

        # Refused, each with a line to the person and nothing written: too big (as Slack announces it, and
        # as the download turns out), empty, a traversal name, and a link that redirects to another host.
        before = every_file(workspace)
        bad = [
            ([double.share_file("huge.bin", b"x" * 5000)], "over the 4.0 KB limit"),
            ([double.share_file("liar.bin", b"x" * 5000, size=10)], "over the 4.0 KB limit"),
            ([double.share_file("ok.txt", b"fine"), double.share_file("empty.txt", b"")], "empty"),
            ([double.share_file("../../escape.txt", b"x")], "outside the inbox"),
            ([double.share_file("moved.txt", b"x", moved_elsewhere=True)], "redirected to another host"),
        ]
        for n, (files, words) in enumerate(bad, start=1):
            await double.say(C1, "here", user="UANA", thread_ts=root, files=files)
            told = await double.wait_for(lambda d, n=n: len(d.ephemerals_for("UANA")) >= n and d.ephemerals_for("UANA"))
            assert words in told[n - 1], (words, told)
        assert every_file(workspace) == before and not found_anywhere(tmp_path, "escape.txt")
        # The token went to the double's own download links only; none was sent for the announced-too-big file.
        assert all(auth == f"Bearer {BOT_TOKEN}" for _, auth in double.downloads)
        assert not any("huge.bin" in path for path, _ in double.downloads)

        # A good file: downloaded with the token, saved, one mail with a receipt on the person's message.
        log = double.share_file("error.log", b"Traceback: boom\n" * 100, "text/plain")
        msg = await double.say(C1, "the trace", user="UANA", thread_ts=root, files=[log])
        await double.wait_for(lambda d: d.reactions.get((C1, msg.ts)))
        assert (workspace / "inbox" / "error.log").read_bytes() == b"Traceback: boom\n" * 100
        # Shared with a mention of the bot (Slack sends it as app_mention and as message): saved once.
        extra = double.share_file("extra.txt", b"more")
        mention = await double.say(C1, f"<@{BOT_USER}> and this", user="UANA", thread_ts=root, mention=True,
                                   files=[extra])
        await double.wait_for(lambda d: d.reactions.get((C1, mention.ts)))
        assert (workspace / "inbox" / "extra.txt").read_bytes() == b"more"
        assert not (workspace / "inbox" / "extra-2.txt").exists()

        await double.click(q1, "yes", user="UANA")
        await bot.hub.query.wait(run)
        read = md.model_requests("main")[2].last_tool_result
        assert "📎 ana attached inbox/error.log (1.6 KB, text/plain)" in read and "the trace" in read
        assert "📎 ana attached inbox/extra.txt (4 B, text/plain)" in read and "and this" in read


async def test_the_token_goes_only_to_slack_or_the_configured_api() -> None:
    files = SlackFiles("xoxb-secret", "http://127.0.0.1:9/api/")
    assert files.trusted("https://files.slack.com/files-pri/T1-F1/download/x.txt")
    assert files.trusted("http://127.0.0.1:9/files-pri/F1/x")
    assert not SlackFiles("t", "https://slack.com/api/").trusted("http://slack.com/files-pri/x")  # never in clear
    for url in ("http://files.slack.com/x", "https://evil.example/x", "https://slack.com.evil.example/x",
                "https://notslack.com/x", "ftp://files.slack.com/x", "http://127.0.0.2:9/x", "", "http://[::1"):
        assert not files.trusted(url), url
    got = await files.fetch(SharedFile("F1", "a.txt", "text/plain", 5, "https://evil.example/a.txt"), 100)
    assert got.data is None and "away from Slack" in got.problem


async def test_a_file_the_agent_shares_is_uploaded_into_the_thread(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Writing it.", "call": [ask_call("Go?", ["go"])]},
        {"say": "Here.", "call": [{"tool": "mcp__human__share",
                                   "input": {"path": "chart.csv", "note": "the chart <!channel>"}}]},
        {"say": "Shared: {last_tool_result}"},
    ]}))
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", "chart it", user="UANA", channel=C1) is None
        q = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Go?"))
        root = root_of(double).ts
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root))
        record = bot.hub.query.run(run or "")
        assert record is not None
        (Path(record.workspace) / "chart.csv").write_bytes(b"x,y\n1,2\n")
        await double.click(q, "go", user="UANA")
        up = await double.wait_for(lambda d: d.uploads)
        assert up[0]["name"] == "chart.csv" and up[0]["data"] == b"x,y\n1,2\n"
        assert up[0]["channel"] == C1 and up[0]["thread_ts"] == root  # the thread's parent, never a reply
        assert "chart.csv" in up[0]["comment"] and "the chart" in up[0]["comment"]
        assert "<!channel>" not in up[0]["comment"]  # agent text pings nobody
        assert double.called("files.getUploadURLExternal") and double.called("files.completeUploadExternal")
        await bot.hub.query.wait(run or "")


async def test_long_output_is_uploaded_as_a_file_with_a_preview(double_factory: Any, cli_home: Path,
                                                                tmp_path: Path) -> None:
    report = "\n".join(f"line {i:04d} of a long report" for i in range(1200))  # ~31,000 chars: 11 messages
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [{"say": report}]}))
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", "write the report", user="UANA", channel=C1) is None
        up = await double.wait_for(lambda d: d.uploads)
        root = root_of(double).ts
        assert up[0]["data"].decode() == report and up[0]["name"].endswith(".md") and up[0]["thread_ts"] == root
        assert up[0]["comment"].startswith("line 0000 of a long report") and "1200 lines in all" in up[0]["comment"]
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root))
        await bot.hub.query.wait(run or "")
        walls = [m for m in double.thread(C1, root) if "line 0500" in m.body()]
        assert walls == []  # no wall of split messages in the thread


async def test_the_summarys_files_button_uploads_what_the_run_changed(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Writing.", "call": [ask_call("Written?", ["yes"])]}, {"say": "All written."}]}))
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", "write a report", user="UANA", channel=C1) is None
        q = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Written?"))
        root = root_of(double).ts
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root)) or ""
        record = bot.hub.query.run(run)
        assert record is not None
        (Path(record.workspace) / "report.md").write_text("# the report\n")
        await double.click(q, "yes", user="UANA")
        await bot.hub.query.wait(run)
        summary = await double.wait_for(lambda d: d.find(C1, root, lambda m: "📦 1 file changed: report.md" in m.body()
                                                         and any(b["text"]["text"] == "Files" for b in m.buttons())))
        await double.click(summary, "Files", user="UANA")
        up = await double.wait_for(lambda d: d.uploads)
        assert up[0]["name"] == "report.md" and up[0]["data"] == b"# the report\n" and up[0]["thread_ts"] == root


async def test_undo_from_the_summary_lists_checkpoints_and_restore_puts_the_file_back(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Writing.", "call": [ask_call("Written?", ["yes"])]}, {"say": "All written."}]}))
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", "write a report", user="UANA", channel=C1) is None
        q = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Written?"))
        root = root_of(double).ts
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root)) or ""
        record = bot.hub.query.run(run)
        assert record is not None
        report = Path(record.workspace) / "report.md"
        report.write_text("# draft\n")  # before the answer: the checkpoint the answer takes holds it
        await double.click(q, "yes", user="UANA")
        await double.wait_for(lambda d: len(bot.hub.query.checkpoints(run) or []) == 2)  # taken as it was answered
        report.write_text("# the report, overwritten\n")
        await bot.hub.query.wait(run)
        summary = await double.wait_for(lambda d: d.find(C1, root, lambda m: any(
            b["text"]["text"] == "Undo changes…" for b in m.buttons())))
        await double.click(summary, "Undo changes…", user="UANA")
        offer = await double.wait_for(lambda d: d.find(C1, root, lambda m: any(
            b["text"]["text"] == "Restore c2" for b in m.buttons())))
        assert "report.md" in offer.body()
        await double.click(offer, "Restore c2", user="UANA")
        await double.wait_for(lambda d: d.find(C1, root, lambda m: "Restored the workspace to checkpoint c2"
                                               in m.body()))
        assert report.read_bytes() == b"# draft\n"
