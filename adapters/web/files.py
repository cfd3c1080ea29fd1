"""The run's files over HTTP: attach files to a run, list its workspace, download one file.

=========================================  =============================================================
route                                      body → answer
=========================================  =============================================================
POST /api/runs/{id}/files                  multipart: one or more `file` fields, optional `text` →
                                           201 {"ok": true, "files": [{"name", "path", "size"}], "message"}
GET  /api/runs/{id}/files[?all=1]          → {"files": [{"path", "size", "changed"}]} (relative paths; the
                                           framework's bookkeeping, .flower/, only with all=1, never changed)
GET  /api/runs/{id}/files/{path}           → the bytes, as an attachment
GET  /api/runs/{id}/beside/{folder}/{name}  → a file the framework wrote beside the run and linked from its
                                           thread (folder: plans, a whole plan; approvals, a whole diff)
=========================================  =============================================================

An upload is read part by part and stops as soon as a file passes the run's `max_upload_mb` (or all of
them its `max_run_upload_mb`): 413, nothing saved. No file, an empty one or a bad name: 400; an unknown
run or a path outside the workspace (`..`, absolute, a symlink out, nothing there): 404 and nothing read.
The hub saves the files and mails the run (`Hub.attach`); this module only reads the request.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

from aiohttp import BodyPartReader, web

from adapters.hub import Attach, Bookkeeping, Incoming, inside, workspace_files
from adapters.platform.limits import WEB
from adapters.web.context import WEB_USER, context_of, record_of
from adapters.web.errors import ApiError
from adapters.web.inbound import show_all
from adapters.web.render import attached_json

__all__ = ["routes"]

CHUNK = 64 * 1024
BESIDE_FOLDERS = ("plans", "approvals")  # where the whole plan and the whole diff of a card are written


async def _read_file(part: BodyPartReader, room: int, limit_text: str) -> bytes:
    """A part's bytes, refused with 413 the moment they pass `room`."""
    data = bytearray()
    while chunk := await part.read_chunk(CHUNK):
        data += chunk
        if len(data) > room:
            raise ApiError(413, f"{part.filename or 'a file'!r} is over {limit_text}; nothing was saved")
    return bytes(data)


async def attach(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    if not request.content_type.startswith("multipart/"):
        raise ApiError(415, f"send multipart/form-data with `file` fields (got {request.content_type!r})")
    where = ctx.where(record)
    limits = ctx.hub.query.upload_limits(record.run_id, where)
    files: list[Incoming] = []
    text, total = "", 0
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise ApiError(400, "nested multipart bodies are not taken")
            if part.name == "text":  # read with a bound too: a text field is no way round the limits
                raw = await _read_file(part, WEB.input_max * 4, f"the {WEB.input_max} character limit for 'text'")
                text = raw.decode("utf-8", "replace")
                if len(text) > WEB.input_max:
                    raise ApiError(400, f"'text' is {len(text)} characters, over the {WEB.input_max} limit")
            elif part.name == "file":
                room = min(limits.max_file_bytes, limits.max_run_bytes - total)
                mb = f"the {limits.max_file_bytes / 2**20:g} MB limit for one file" \
                    if room == limits.max_file_bytes else f"the run's {limits.max_run_bytes / 2**20:g} MB limit"
                data = await _read_file(part, room, mb)
                total += len(data)
                files.append(Incoming(part.filename or "", data, part.headers.get("Content-Type", "")))
            else:
                raise ApiError(400, f"unknown field {part.name!r} (known: file, text)")
    except (ValueError, AssertionError) as exc:  # aiohttp's own complaints about a broken body
        raise ApiError(400, f"malformed multipart body: {exc}") from None
    if not files:
        raise ApiError(400, "no `file` field: attach at least one file")
    result = await ctx.hub.submit(Attach(record.run_id, tuple(files), text), WEB_USER, where=where)
    body, status = attached_json(result)
    return web.json_response(body, status=status)


async def listing(request: web.Request) -> web.Response:
    record = record_of(request)
    everything = show_all(request.query.get("all", ""))
    workspace = Path(record.workspace)
    listed = await asyncio.to_thread(workspace_files, workspace, record.created_at,
                                     rule=Bookkeeping.of(workspace, record.run_dir), show_all=everything)
    return web.json_response({"files": listed})


async def download(request: web.Request) -> web.StreamResponse:
    record = record_of(request)
    rel = request.match_info["path"]
    found = inside(Path(record.workspace), rel)
    if found is None:
        raise ApiError(404, f"run {record.run_id} has no file {rel[:200]!r}")
    return _attachment(found)


async def beside(request: web.Request) -> web.StreamResponse:
    """A whole plan or a whole diff a card links to: only a file in one of the run's BESIDE_FOLDERS."""
    record = record_of(request)
    folder, name = request.match_info["folder"], request.match_info["name"]
    found = inside(Path(record.run_dir) / folder, name) if folder in BESIDE_FOLDERS and "/" not in name else None
    if found is None:
        raise ApiError(404, f"run {record.run_id} has no file {folder[:50]}/{name[:200]!r} beside it")
    return _attachment(found)


def _attachment(found: Path) -> web.FileResponse:
    # Always a download, never rendered: a file the agent or a person wrote must not run as this page.
    return web.FileResponse(found, headers={"Content-Type": "application/octet-stream",
                                            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(found.name)}"})


def routes() -> list[web.RouteDef]:
    return [
        web.post("/api/runs/{run_id}/files", attach),
        web.get("/api/runs/{run_id}/files", listing),
        web.get("/api/runs/{run_id}/files/{path:.+}", download),
        web.get("/api/runs/{run_id}/beside/{folder}/{name}", beside),
    ]
