"""Discord: attachments of a message in a run's thread reach its workspace and the model's next inbox read.

Real discord.py against the Discord double (which serves attachment CDN links), the real SDK + CLI
against the model double. Refusals are checked on the disk: nothing is written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adapters.hub import UploadLimits
from adapters.state import MemoryStateStore, RunRecord
from tests.conftest import scenario_of
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, open_card, option_flow, start_bot, stop_bot
from tests.support.files_support import every_file, found_anywhere
from tests.support.hub_support import INBOX, ask_call

__all__ = ["discord_double"]

REPORT = "\n".join(f"line {i:04d} of a long report" for i in range(500))  # ~13,000 chars: 7 messages



def told(d: DiscordDouble, words: str) -> bool:
    """Whether the bot said `words` anywhere (a DM to the person, or a line in the thread)."""
    return any(words in d.text(m) for m in d.messages.values() if m["author"]["id"] == str(d.bot.id))


async def test_attachments_reach_the_workspace_and_bad_ones_save_nothing(double_factory: Any, cli_home: Path,
                                                                        tmp_path: Path,
                                                                        discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Send me the data.", "call": [ask_call("Ready?", ["yes"])]},
        {"say": "Reading.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}"},
    ]}))
    ana = d.person("ana")
    store = MemoryStateStore()
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store, factory=option_flow(),
                                  uploads=UploadLimits(max_file_bytes=4096))
    try:
        started = await d.slash(ana, "run", task="read my data", timeout=300)
        await d.until(lambda _: any("Started run" in t for t in started.texts()))
        m = re.search(r"`(r\w+)`", started.texts()[-1])
        assert m is not None
        run_id = m.group(1)
        thread = int(next(msg for msg in d.bot_messages(d.channel_id) if "thread" in msg)["id"])
        q1 = await d.until(lambda _: open_card(d, thread, "Ready?"))
        record = store.get_run(run_id)
        assert record is not None
        workspace = Path(record.workspace)

        before = every_file(workspace)
        bad = [
            ([d.attachment(thread, "huge.bin", b"x" * 5000)], "over the 4.0 KB limit"),
            ([d.attachment(thread, "liar.bin", b"x" * 5000, size=10)], "over the 4.0 KB limit"),
            ([d.attachment(thread, "empty.txt", b"")], "empty (0 bytes)"),
            ([d.attachment(thread, "../../escape.txt", b"x")], "outside the inbox"),
        ]
        for files, words in bad:
            await d.say(ana, thread, "", attachments=files)
            await d.until(lambda _, words=words: told(d, words))
        assert every_file(workspace) == before and not found_anywhere(tmp_path, "escape.txt")
        assert not any("huge.bin" in p for p in d.fetched)  # refused from its announced size, never fetched

        rows = b"id,value\n" + b"1,2\n" * 200
        mid = await d.say(ana, thread, "the numbers", attachments=[d.attachment(thread, "data.csv", rows, "text/csv")])
        await d.until(lambda _: d.reactions_on(mid))  # the receipt, as for any mail
        assert (workspace / "inbox" / "data.csv").read_bytes() == rows

        await d.click(ana, int(q1["id"]), label="yes")
        await hub.query.wait(run_id)
        read = md.model_requests("main")[2].last_tool_result
        assert "📎 ana attached inbox/data.csv (809 B, text/csv)" in read and "the numbers" in read
    finally:
        await stop_bot(bridge, hub)


async def test_a_file_the_agent_shares_is_posted_as_an_attachment(double_factory: Any, cli_home: Path,
                                                                  tmp_path: Path,
                                                                  discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Writing it.", "call": [ask_call("Go?", ["go"])]},
        {"say": "Here.", "call": [{"tool": "mcp__human__share", "input": {"path": "notes.md", "note": "my notes"}}]},
        {"say": REPORT},
    ]}))
    ana = d.person("ana")
    store = MemoryStateStore()
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store, factory=option_flow())
    try:
        run_id, thread, q, record = await notes_run_asking(d, ana, store)
        (Path(record.workspace) / "notes.md").write_bytes(b"# notes\n")
        await d.click(ana, int(q["id"]), label="go")
        posted = await d.until(lambda _: next((msg for msg in d.bot_messages(thread) if msg["attachments"]), None))
        assert [a["filename"] for a in posted["attachments"]] == ["notes.md"]
        assert d.files[int(posted["attachments"][0]["id"])] == b"# notes\n"
        assert "notes.md" in d.text(posted) and "my notes" in d.text(posted)
        await hub.query.wait(run_id)
        # Long output: one .md attachment with a preview, not a wall of split messages.
        long = await d.until(lambda _: next((msg for msg in d.bot_messages(thread) if msg["attachments"]
                                             and msg["attachments"][0]["filename"].endswith(".md")
                                             and msg["attachments"][0]["filename"] != "notes.md"), None))
        assert d.files[int(long["attachments"][0]["id"])].decode() == REPORT
        assert "line 0000" in d.text(long) and not any("line 0400" in d.text(m) for m in d.bot_messages(thread))

        # The summary names notes.md (the run's workspace changed); its Files button posts it again.
        summary = await d.until(lambda _: next((msg for msg in d.bot_messages(thread)
                                                if "📦 1 file changed: notes.md" in d.text(msg)), None))
        assert "Files" in d.labels(summary)
        await d.click(ana, int(summary["id"]), label="Files")
        await d.until(lambda _: len([msg for msg in d.bot_messages(thread) if msg["attachments"]
                                     and msg["attachments"][0]["filename"] == "notes.md"]) == 2)
    finally:
        await stop_bot(bridge, hub)


async def test_undo_from_the_summary_puts_the_file_back(double_factory: Any, cli_home: Path, tmp_path: Path,
                                                        discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Writing it.", "call": [ask_call("Go?", ["go"])]}, {"say": "Written."}]}))
    ana = d.person("ana")
    store = MemoryStateStore()
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store, factory=option_flow())
    try:
        run_id, thread, q, record = await notes_run_asking(d, ana, store)
        notes = Path(record.workspace) / "notes.md"
        notes.write_bytes(b"# draft\n")
        await d.click(ana, int(q["id"]), label="go")
        await d.until(lambda _: len(hub.query.checkpoints(run_id) or []) == 2)  # taken as it was answered
        notes.write_bytes(b"# overwritten\n")
        await hub.query.wait(run_id)
        summary = await d.until(lambda _: next((msg for msg in d.bot_messages(thread)
                                                if "Undo changes…" in d.labels(msg)), None))
        await d.click(ana, int(summary["id"]), label="Undo changes…")
        offer = await d.until(lambda _: next((msg for msg in d.bot_messages(thread)
                                              if "Restore c2" in d.labels(msg)), None))
        assert "notes.md" in d.text(offer)
        await d.click(ana, int(offer["id"]), label="Restore c2")
        await d.until(lambda _: notes.read_bytes() == b"# draft\n")
        await d.until(lambda _: any("Restored the workspace to checkpoint c2" in d.text(msg)
                                    for msg in d.bot_messages(thread)))
    finally:
        await stop_bot(bridge, hub)


async def notes_run_asking(d: DiscordDouble, ana: Any, store: MemoryStateStore) -> tuple[str, int, Any, RunRecord]:
    """`/flower run task:write notes` by ana: the run's id, its thread, its open "Go?" card and its record."""
    started = await d.slash(ana, "run", task="write notes", timeout=300)
    await d.until(lambda _: any("Started run" in t for t in started.texts()))
    m = re.search(r"`(r\w+)`", started.texts()[-1])
    assert m is not None
    run_id = m.group(1)
    thread = int(next(msg for msg in d.bot_messages(d.channel_id) if "thread" in msg)["id"])
    q = await d.until(lambda _: open_card(d, thread, "Go?"))
    record = store.get_run(run_id)
    assert record is not None
    return run_id, thread, q, record
