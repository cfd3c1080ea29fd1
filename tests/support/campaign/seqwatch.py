"""Event sequence numbers over the run WebSocket, across the bot's deaths.

One watcher per run keeps the newest `seq` it saw and reconnects with `?after=<that seq>` whenever the
socket drops (the bot died) — what the web page does. A violation is an event whose seq is not above
the newest one already seen: a repeat or a step back. It stops once the stream says the run has
ended and is no longer live, or when the campaign ends.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import aiohttp

ENDED = ("done", "failed", "stopped")
RETRY_S = 0.2  # the bot is down: try again shortly (it restarts at once)


@dataclass
class SeqStats:
    connects: int = 0  # successful WebSocket opens, over all runs
    runs: int = 0  # runs watched
    events: int = 0
    violations: int = 0

    @property
    def reconnects(self) -> int:
        return self.connects - self.runs


async def watch(session: aiohttp.ClientSession, base: str, run_id: str, stats: SeqStats) -> None:
    stats.runs += 1
    newest = 0
    while True:
        try:
            async with session.ws_connect(f"{base}/api/runs/{run_id}/ws?after={newest}", origin=base,
                                          heartbeat=None, timeout=aiohttp.ClientWSTimeout(ws_close=2)) as ws:
                stats.connects += 1
                async for msg in ws:
                    if msg.type != aiohttp.WSMsgType.TEXT:
                        break
                    frame = json.loads(msg.data)
                    for event in frame.get("events", []):
                        stats.events += 1
                        if int(event["seq"]) <= newest:
                            stats.violations += 1
                        newest = max(newest, int(event["seq"]))
                    if frame.get("status") in ENDED and not frame.get("live"):
                        return
        except (aiohttp.ClientError, TimeoutError, ConnectionError, ValueError):
            pass
        await asyncio.sleep(RETRY_S)
