"""The run's files over HTTP (adapters/web/files.py): upload, list, download — aiohttp's test client.

The upload test drives a real run (SDK + CLI on the model double): the file lands in the workspace and
the model's next inbox read names it. The refusals are checked on the disk: nothing written, nothing read.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestClient, TestServer

from adapters.hub import UploadLimits, default_factory
from adapters.state import MemoryStateStore
from adapters.web import WebFrontend, make_app
from tests.conftest import scenario_of
from tests.support.files_support import every_file, found_anywhere
from tests.support.hub_support import INBOX, ask_call, make_hub


def raw_named(name: str, body: bytes) -> aiohttp.MultipartWriter:
    """A multipart body whose file name goes out exactly as given (FormData keeps only its last part)."""
    writer = aiohttp.MultipartWriter("form-data")
    part = writer.append(body, {"Content-Type": "text/plain"})
    part.headers["Content-Disposition"] = f'form-data; name="file"; filename="{name}"'
    return writer


def form(*files: tuple[str, bytes, str], text: str | None = None) -> aiohttp.FormData:
    data = aiohttp.FormData(default_to_multipart=True)
    for name, body, kind in files:
        data.add_field("file", body, filename=name, content_type=kind)
    if text is not None:
        data.add_field("text", text)
    return data


async def test_upload_list_download_and_every_refusal(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Waiting.", "call": [ask_call("Ready?", ["yes"])]},
        {"say": "Reading.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}"},
    ]}))
    front = WebFrontend(say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, MemoryStateStore(),  # type: ignore[arg-type]
                   uploads=UploadLimits(max_file_bytes=400_000, max_run_bytes=700_000))
    front.attach(hub)
    client = TestClient(TestServer(make_app(front), host="127.0.0.1"))
    await client.start_server()
    try:
        run = (await (await client.post("/api/runs", json={"task": "read my file"})).json())["id"]
        record = hub.query.run(run)
        assert record is not None
        ws = Path(record.workspace)
        (tmp_path / "secret.txt").write_text("not yours")
        await asyncio.wait_for(_until_asked(client, run), 60)

        before = every_file(ws)
        refusals = [
            (await client.post(f"/api/runs/{run}/files", data=form(("big.bin", b"x" * 450_000, "application/x")))),
            (await client.post(f"/api/runs/{run}/files", data=form(("a.bin", b"x" * 390_000, "application/x"),
                                                                   ("b.bin", b"x" * 390_000, "application/x")))),
            (await client.post(f"/api/runs/{run}/files", data=form(("empty.txt", b"", "text/plain")))),
            (await client.post(f"/api/runs/{run}/files", data=raw_named("../../x.txt", b"x"))),
            (await client.post(f"/api/runs/{run}/files", data=form(text="no file"))),
            (await client.post(f"/api/runs/{run}/files", json={"text": "not multipart"})),
            (await client.post("/api/runs/rnope/files", data=form(("a.txt", b"a", "text/plain")))),
        ]
        assert [r.status for r in refusals] == [413, 413, 400, 400, 400, 415, 404]
        for r in refusals:
            body = await r.json()
            assert body["ok"] is False and body["error"], body
        assert "empty" in (await refusals[2].json())["error"]
        assert "outside the inbox" in (await refusals[3].json())["error"]
        assert every_file(ws) == before and not found_anywhere(tmp_path, "x.txt")  # nothing saved by any refusal

        bulky = b"y" * 300_000  # over the API's 256 KB JSON body limit: uploads are read part by part
        up = await client.post(f"/api/runs/{run}/files", data=form(("notes.md", b"# my notes\n", "text/markdown"),
                                                                   ("bulky.bin", bulky, "application/x"),
                                                                   text="read these"))
        assert up.status == 201, await up.text()
        body = await up.json()
        assert body["ok"] and body["files"] == [{"name": "notes.md", "path": "inbox/notes.md", "size": 11},
                                                {"name": "bulky.bin", "path": "inbox/bulky.bin", "size": 300_000}]
        assert (ws / "inbox" / "bulky.bin").read_bytes() == bulky
        assert (ws / "inbox" / "notes.md").read_bytes() == b"# my notes\n"

        ask = (await (await client.get(f"/api/runs/{run}/asks")).json())[0]["id"]
        assert (await client.post(f"/api/runs/{run}/answer", json={"ask_id": ask, "text": "yes"})).status == 200
        await hub.query.wait(run)
        read = md.model_requests("main")[2].last_tool_result
        assert "📎 web attached inbox/notes.md (11 B, text/markdown)" in read and "read these" in read

        (ws / "report.txt").write_text("the agent's report")
        (ws / "out").symlink_to(tmp_path / "secret.txt")
        listed = {f["path"]: f for f in (await (await client.get(f"/api/runs/{run}/files")).json())["files"]}
        assert listed["inbox/notes.md"] == {"path": "inbox/notes.md", "size": 11, "changed": True}
        assert "report.txt" in listed and "out" not in listed

        got = await client.get(f"/api/runs/{run}/files/report.txt")
        assert got.status == 200 and await got.read() == b"the agent's report"
        assert got.headers["Content-Disposition"].startswith("attachment")
        assert got.headers["Content-Type"] == "application/octet-stream"  # never rendered as the page
        for bad in ("out", "%2E%2E/secret.txt", "inbox/%2E%2E/%2E%2E/secret.txt", "%2Fetc%2Fpasswd", "nope", "inbox"):
            r = await client.get(f"/api/runs/{run}/files/{bad}")
            assert r.status == 404, (bad, r.status)
            assert b"not yours" not in await r.read()
    finally:
        await hub.close()
        await client.close()
        await front.stop()


async def _until_asked(client: TestClient, run: str) -> None:
    while not await (await client.get(f"/api/runs/{run}/asks")).json():
        await asyncio.sleep(0.05)  # polling the API's own answer: there is no event to wait on here


async def test_a_demo_run_reports_the_agents_files_not_the_frameworks(double_factory: Any, cli_home: Path,
                                                                     tmp_path: Path) -> None:
    """The demo scenario through the starter workflow: its desk (.flower/: brief, goal, Q&A log, INDEX.md)
    is the framework's; only notes.md is the agent's work. `?all=1` still lists the desk."""
    md = await double_factory("demo")
    front = WebFrontend(say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, MemoryStateStore(),  # type: ignore[arg-type]
                   factory=default_factory)
    front.attach(hub)
    client = TestClient(TestServer(make_app(front), host="127.0.0.1"))
    await client.start_server()
    try:
        run = (await (await client.post("/api/runs", json={"task": "Write a greeting note."})).json())["id"]
        await asyncio.wait_for(_until_asked(client, run), 60)
        ask = (await (await client.get(f"/api/runs/{run}/asks")).json())[0]
        assert (await client.post(f"/api/runs/{run}/answer", json={"ask_id": ask["id"], "text": "Hello"})).status == 200
        await asyncio.wait_for(hub.query.wait(run), 120)
        record = hub.query.run(run)
        assert record is not None
        ws = Path(record.workspace)
        desk = {p for p in every_file(ws) if p.startswith(".flower/")}
        assert len(desk) >= 3, every_file(ws)  # the run did write its bookkeeping into the workspace

        summary = next(m for m in front.surface.changes(record.thread) if m["kind"] == "summary")
        assert "📦 1 file changed: notes.md" in summary["text"], summary["text"]
        files_button = next(b["action_id"] for b in summary["buttons"] if b["label"] == "Files")

        listed = (await (await client.get(f"/api/runs/{run}/files")).json())["files"]
        assert listed == [{"path": "notes.md", "size": len("Hello from the flower demo.\n"), "changed": True}]
        every = {f["path"]: f for f in (await (await client.get(f"/api/runs/{run}/files?all=1")).json())["files"]}
        assert set(every) == {"notes.md"} | desk
        assert [p for p, f in every.items() if f["changed"]] == ["notes.md"]  # the desk is listed, never "changed"
        assert (await client.get(f"/api/runs/{run}/files?all=yes")).status == 400
        assert (await client.get(f"/api/runs/{run}/files?all=0")).status == 200

        clicked = await client.post("/api/action", json={"action_id": files_button, "delivery_id": "files-1"})
        assert clicked.status == 200, await clicked.text()
        posted = [m["file"]["path"] for m in front.surface.changes(record.thread) if m.get("file")]
        assert posted == ["notes.md"]
    finally:
        await hub.close()
        await client.close()
        await front.stop()
