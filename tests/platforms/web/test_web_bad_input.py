"""Bad input to the web front end: each gets a clear refusal, logs no traceback, and changes nothing.

The JSON cases go through aiohttp's test client against a real Hub whose runs are records only; the
cases the HTTP parser itself refuses (a NUL byte in a header, a method it does not know) are raw
bytes on a socket to the front end started as the bot starts it, on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from adapters.hub import Hub
from adapters.platform import ThreadRef
from adapters.state import MemoryStateStore, RunRecord
from adapters.web import WebFrontend, make_app
from adapters.web.page import STATIC
from tests.support.drive import drive
from tests.support.hub_support import hub_of

JSON = {"Content-Type": "application/json"}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[WebFrontend, Hub, TestClient]]:
    front = WebFrontend(demo=True, max_body=64 * 1024, say=lambda s: None)
    hub = hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs")
    front.attach(hub)
    client = TestClient(TestServer(make_app(front), host="127.0.0.1"))
    await client.start_server()
    yield front, hub, client
    await client.close()
    await front.stop()


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info or r.exc_text or "Traceback" in r.getMessage()]


# ---- JSON bodies ----------------------------------------------------------------------------------
@pytest.mark.parametrize("body", ["[" * 5000, '{"a":' * 5000, '{"task": ' + "[" * 5000 + "]" * 5000 + "}",
                                  '{"task": ' + "[" * 950 + "]" * 950 + "}"],
                         ids=["arrays", "objects", "inside-a-field", "just-under-the-parser-limit"])
async def test_a_deeply_nested_body_is_a_400_and_no_traceback(served: tuple[WebFrontend, Hub, TestClient],
                                                              caplog: pytest.LogCaptureFixture, body: str) -> None:
    _, hub, client = served
    caplog.set_level(logging.DEBUG)
    resp = await client.post("/api/runs", data=body, headers=JSON)
    got = await resp.json()
    assert resp.status == 400, got
    assert got["ok"] is False and ("nested" in got["error"] or "must be a string" in got["error"]), got
    assert hub.query.runs(live_only=False) == []
    assert tracebacks(caplog) == []


@pytest.mark.parametrize("field", ["timeout_s", "budget_usd"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
async def test_a_number_that_is_not_finite_is_refused_naming_the_field(
        served: tuple[WebFrontend, Hub, TestClient], caplog: pytest.LogCaptureFixture, field: str, value: str) -> None:
    _, hub, client = served
    caplog.set_level(logging.DEBUG)
    resp = await client.post("/api/runs", data=f'{{"task": "paint it", "{field}": {value}}}', headers=JSON)
    got = await resp.json()
    assert resp.status == 400, got
    assert f"'{field}'" in got["error"] and "finite" in got["error"], got
    assert hub.query.runs(live_only=False) == []  # no run, not even a failed one
    assert tracebacks(caplog) == []


async def test_nan_in_a_whole_number_field_is_refused_too(served: tuple[WebFrontend, Hub, TestClient]) -> None:
    _, hub, client = served
    resp = await client.post("/api/runs", data='{"task": "paint it", "max_asks": NaN}', headers=JSON)
    got = await resp.json()
    assert resp.status == 400 and "'max_asks'" in got["error"], got
    assert hub.query.runs(live_only=False) == []


async def test_finite_numbers_still_start_a_run(served: tuple[WebFrontend, Hub, TestClient]) -> None:
    """The refusals above are not a blanket refusal of numbers (the run is started, then stopped)."""
    _, hub, client = served
    resp = await client.post("/api/runs", data='{"task": "paint it", "timeout_s": 0, "budget_usd": 2.5}',
                             headers=JSON)
    got = await resp.json()
    assert resp.status == 201, got
    await drive(hub).stop(got["id"], "web")
    await asyncio.wait_for(hub.query.wait(got["id"]), 60)


async def test_a_deeply_nested_frame_from_the_page_is_answered_and_the_page_goes_on(
        served: tuple[WebFrontend, Hub, TestClient], caplog: pytest.LogCaptureFixture) -> None:
    front, _, client = served
    caplog.set_level(logging.DEBUG)
    ws = await client.ws_connect("/ws")

    async def next_of(kind: str) -> dict[str, object]:
        while True:
            frame = await asyncio.wait_for(ws.receive_json(), 30)
            if frame["type"] == kind:
                return frame

    await next_of("runs")
    await ws.send_str("[" * 5000)
    assert "unknown frame" in str((await next_of("error"))["error"])
    await ws.send_json({"op": "watch", "run": "r-none"})  # the page still reads what it is sent
    assert "no run 'r-none'" in str((await next_of("error"))["error"])
    await ws.close()
    await asyncio.wait_for(front.stop(), 30)  # ends the server side of the socket too
    assert tracebacks(caplog) == []


# ---- methods ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("PUT", "/api/runs", {"GET", "HEAD", "POST"}),
    ("DELETE", "/api/runs/r0000001", {"GET", "HEAD"}),
    ("PATCH", "/api/runs/r0000001/answer", {"POST"}),
    ("GET", "/api/action", {"POST"}),
])
async def test_a_method_a_route_does_not_take_is_405_with_allow(served: tuple[WebFrontend, Hub, TestClient],
                                                                method: str, path: str, allowed: set[str]) -> None:
    _, _, client = served
    resp = await client.request(method, path)
    got = await resp.json()
    assert resp.status == 405, got
    assert got["ok"] is False and method in got["error"], got
    assert {m.strip() for m in resp.headers["Allow"].split(",")} == allowed


# ---- paths that name a file: too long for the file system, a NUL byte, climbing out ----------------------
LONG = "a" * 256  # one name over the file system's 255 bytes: stat() says ENAMETOOLONG
BAD_NAMES = [LONG, f"{LONG}.js", "b" * 5000, "a%00b", "app.js%00.png", "%00", "..%2f..%2fetc%2fpasswd",
             "%2e%2e/%2e%2e/pyproject.toml", "a/" * 200 + "x", "%ff%fe"]


@pytest.mark.parametrize("path", [f"/static/{n}" for n in BAD_NAMES] + ["/static/", "/static"]
                         + [f"/api/runs/r0000001/files/{n}" for n in BAD_NAMES] + [f"/api/runs/{LONG}/files/x",
                                                                                  f"/api/runs/{LONG}", "/%00"])
async def test_a_bad_file_name_in_a_path_is_a_404_and_no_traceback(served: tuple[WebFrontend, Hub, TestClient],
                                                                   caplog: pytest.LogCaptureFixture, tmp_path: Path,
                                                                   path: str) -> None:
    _, hub, client = served
    (tmp_path / "ws").mkdir()
    hub.store.save_run(RunRecord("r0000001", ThreadRef("web", "page", "t1"), "web", "a task", "done",
                                 str(tmp_path / "ws"), str(tmp_path / "run")))
    caplog.set_level(logging.DEBUG)
    resp = await client.get(path)
    assert resp.status == 404, (path, resp.status, await resp.text())
    assert tracebacks(caplog) == [], tracebacks(caplog)
    assert (await client.get("/static/app.js")).status == 200  # and the page's own files are still served


async def test_the_pages_own_files_are_served_with_their_types(served: tuple[WebFrontend, Hub, TestClient]) -> None:
    _, _, client = served
    for name, kind in [("app.js", "javascript"), ("style.css", "text/css"), ("favicon.svg", "image/svg+xml")]:
        resp = await client.get(f"/static/{name}")
        assert resp.status == 200 and kind in resp.headers["Content-Type"], (name, resp.headers)
        assert (await resp.read()) == (STATIC / name).read_bytes()
    assert (await client.head("/static/app.js")).status == 200


# ---- what the HTTP parser refuses, on a real socket ----------------------------------------------------
@pytest.fixture
async def listening(tmp_path: Path) -> AsyncIterator[WebFrontend]:
    front = WebFrontend(port=0, demo=True, say=lambda s: None)
    front.attach(hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs"))
    await front.start()
    yield front
    await asyncio.wait_for(front.stop(), 30)


async def raw_request(port: int, head: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 30)  # the server closes after a refusal
    finally:
        writer.close()


@pytest.mark.parametrize("head", [
    b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad: a\x00b\r\n\r\n",
    b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-\x00Bad: ab\r\n\r\n",
    b"FOO /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    # the second request on a connection: aiohttp logs every parse error there as an exception
    b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX: \x00\r\n\r\n",
], ids=["nul-in-value", "nul-in-name", "unknown-method", "second-request"])
async def test_a_request_the_parser_refuses_is_a_400_with_one_line_in_the_log(
        listening: WebFrontend, caplog: pytest.LogCaptureFixture, head: bytes) -> None:
    caplog.set_level(logging.DEBUG)
    answer = await raw_request(listening.port, head)
    statuses = re.findall(rb"(?m)^HTTP/1\.[01] ([0-9]{3}) ", answer)
    assert statuses and statuses[-1] == b"400", answer  # the refused one (after the good one, if any)
    assert b"\x00" not in answer
    assert tracebacks(caplog) == [], tracebacks(caplog)
    refused = [r for r in caplog.records if "malformed HTTP request" in r.getMessage()]
    assert len(refused) == 1 and refused[0].levelno <= logging.WARNING, [r.getMessage() for r in caplog.records]
    # and the server still answers the next (good) request
    good = await raw_request(listening.port, b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert good.startswith(b"HTTP/1.1 200 "), good
