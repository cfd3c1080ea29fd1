"""The model double: a local Anthropic Messages API that plays a scenario.

The real Claude Code CLI (bundled with claude-agent-sdk) talks to it through
``ANTHROPIC_BASE_URL``, so the whole SDK stack runs offline, for free, deterministically.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiohttp import web

import flower_core.devmodel.request as rq

from .scenario import Conversation, Scenario, Turn, load_scenario
from .sse import error_body, tool_use_id, turn_events, turn_frames

MODEL_NAME = "claude-devmodel"


@dataclass
class RecordedRequest:
    """One request the double received, and what it served."""

    path: str
    body: dict[str, Any]
    conversation: str = ""
    turn: int = -1
    served: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    received_at: float = field(default_factory=time.perf_counter)  # for latency figures in bench/
    # What was served, whether or not the client read it to the end: a kept reply in a later request's
    # history names the request it answered by these (tool_use ids are fresh per reply).
    reply_text: str = ""
    reply_tool_ids: tuple[str, ...] = ()
    first_text_at: float | None = None  # when the reply's first words went out (perf_counter), for bench/

    @property
    def first_user_text(self) -> str:
        return rq.first_user_text(self.body)

    @property
    def last_user_text(self) -> str:
        return rq.last_user_text(self.body)

    @property
    def last_tool_result(self) -> str:
        return rq.last_tool_result(self.body)


def cli_env(base_url: str, config_dir: str | Path, *, max_retries: int = 0) -> dict[str, str]:
    """Environment for the bundled CLI so it talks only to the double and writes only to config_dir.

    ``CLAUDE_CODE_MAX_RETRIES`` bounds the CLI's own retry loop; 0 makes fault tests fast and
    lets the engine's resilience be the one that retries.
    """
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "devmodel-offline",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


class ModelDouble:
    """Serve a scenario on 127.0.0.1; use as ``async with ModelDouble("demo") as md``."""

    def __init__(self, scenario: Scenario | str | Path, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self.host = host
        self.port = port
        self.requests: list[RecordedRequest] = []
        self._faults_served: dict[tuple[str, int], int] = {}
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> ModelDouble:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_route("*", "/{tail:.*}", self._other)
        # A reply held back (delay_s) for a CLI that was killed meanwhile must not hold stop() for aiohttp's 60 s.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ModelDouble:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self, config_dir: str | Path, *, max_retries: int = 0) -> dict[str, str]:
        return cli_env(self.base_url, config_dir, max_retries=max_retries)

    # -- assertions helpers ----------------------------------------------------------------
    def model_requests(self, conversation: str | None = None) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/v1/messages"
                and (conversation is None or r.conversation == conversation)]

    async def wait_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 30.0) -> None:
        """Wait until ``predicate(self.requests)`` holds; raises TimeoutError otherwise."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self.requests)), timeout)

    async def _record(self, rec: RecordedRequest) -> None:
        self.requests.append(rec)
        async with self._changed:
            self._changed.notify_all()

    # -- handlers --------------------------------------------------------------------------
    async def _other(self, request: web.Request) -> web.Response:
        await self._record(RecordedRequest(path=request.path, body={}, served="404"))
        return web.json_response(error_body(404, f"devmodel: no route {request.method} {request.path}"),
                                 status=404)

    async def _count_tokens(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        await self._record(RecordedRequest(path=request.path, body=body, served="count_tokens"))
        return web.json_response({"input_tokens": max(1, len(json.dumps(body)) // 4)})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await _json_body(request)
        conv = self.scenario.route(rq.first_user_text(body), rq.system_text(body))
        index = rq.assistant_count(body)
        again, filled = (conv.again if conv else None), None
        if again is not None:
            results = rq.tool_results(body)
            filled = again.groups(results[-1]) if results else None
            index -= sum(1 for r in results if again.groups(r) is not None)  # sent-back turns do not advance
        rec = RecordedRequest(path=request.path, body=body, conversation=conv.name if conv else "",
                              turn=index, headers={k: v for k, v in request.headers.items()
                                                   if k.lower().startswith("anthropic")})
        asked = str(body.get("model") or "")
        if self.scenario.models and asked not in self.scenario.models:
            rec.served = "fault:model"
            await self._record(rec)
            return web.json_response(error_body(404, f"model: {asked}"), status=404)
        turn = again.turn if again is not None and filled is not None else self._pick_turn(conv, index)
        fault = turn.fault
        if fault is not None and conv is not None:
            key = (conv.name, index)
            served = self._faults_served.get(key, 0)
            if fault.times < 0 or served < fault.times:
                self._faults_served[key] = served + 1
                rec.served = f"fault:{fault.kind}:{fault.status}" if fault.kind == "http" else f"fault:{fault.kind}"
                await self._record(rec)
                return await self._serve_fault(request, fault, turn)
        rec.served = ("again" if filled is not None
                      else "turn" if conv is not None and index < len(conv.turns) else "fallback")
        text = rq.render(turn.say, body, filled)
        if any("{" in json.dumps(call.input) for call in turn.calls):
            turn = replace(turn, calls=tuple(replace(call, input=rq.render_input(call.input, body, filled))
                                             for call in turn.calls))
        rec.reply_text, rec.reply_tool_ids = text, tuple(call.id or tool_use_id() for call in turn.calls)
        await self._record(rec)
        if turn.delay_s > 0:
            await asyncio.sleep(turn.delay_s)
        model = str(body.get("model") or MODEL_NAME)
        if not body.get("stream"):
            return web.json_response(_whole_message(turn, model, text, rec.reply_tool_ids))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        try:
            await resp.prepare(request)
            for chunk in turn_frames(turn, model, text, rec.reply_tool_ids):
                if isinstance(chunk, bytes):
                    await resp.write(chunk)
                    if rec.first_text_at is None and b'"text_delta"' in chunk:
                        rec.first_text_at = time.perf_counter()
                else:
                    await asyncio.sleep(chunk)
            await resp.write_eof()
        except ConnectionResetError:
            pass  # the CLI went away mid-reply (killed, interrupted): the request is recorded, nobody reads on
        return resp

    def _pick_turn(self, conv: Conversation | None, index: int) -> Turn:
        if conv is None:
            return Turn(say="(devmodel: no conversation of this scenario matches this request)")
        if index < len(conv.turns):
            return conv.turns[index]
        return Turn(say=conv.after_end)

    async def _serve_fault(self, request: web.Request, fault: Any, turn: Turn) -> web.StreamResponse:
        if fault.kind == "overflow":
            msg = fault.message or "prompt is too long: 210000 tokens > 200000 maximum"
            return web.json_response(error_body(400, msg), status=400)
        if fault.kind == "drop":
            # Start a reply, then cut the connection mid-stream.
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            first = next(iter(turn_events(turn, MODEL_NAME, "partial")))
            await resp.write(first)
            if request.transport is not None:
                request.transport.abort()
            return resp
        return web.json_response(error_body(fault.status, fault.message), status=fault.status)


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _whole_message(turn: Turn, model: str, text: str, ids: tuple[str, ...]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for tool_id, call in zip(ids, turn.calls, strict=True):
        content.append({"type": "tool_use", "id": tool_id, "name": call.tool, "input": call.input})
    return {"id": "msg_whole", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if turn.calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20, **turn.usage}}


def isolated_env(base_url: str, home: str | Path) -> dict[str, str]:
    """cli_env plus a HOME of its own, for processes started outside tests."""
    env = cli_env(base_url, Path(home) / ".claude")
    env["HOME"] = os.fspath(home)
    return env
