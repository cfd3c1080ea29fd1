"""`flower-worker`: holds runs handed out by a `flower-bot --redis` front, on any machine.

    flower-worker --redis redis://host:6379/0 [--max-runs 3] [--name NAME] [--flow starter|single]

Every worker needs Redis, the model (credentials, else the offline demo model like the bot), and
the same run root as the front at the same path (a shared or network filesystem across machines):
workspaces and run records live there, session transcripts in Redis. SIGINT/SIGTERM hand the runs
back to the other workers at once, within `--stop-after` seconds whatever hangs (bots/shutdown.py); a
worker that dies is noticed when its heartbeat lapses. `--health-port` serves /healthz, /readyz (Redis
answers and the worker's loops are alive) and /metrics on 127.0.0.1 (bots/ops.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bots.config import FLOWS, LOG_FORMATS, BotConfig, ConfigError, health_port, log_format, redis_url, stop_after
from bots.logs import setup_logging
from bots.shutdown import QuietPlannedExits, StopClock

if TYPE_CHECKING:
    from adapters.transport.redis_worker import RedisWorker

EXIT_OK, EXIT_CONFIG = 0, 2
log = logging.getLogger("flower.worker")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flower-worker", description="Run the agents of a flower-bot --redis front.")
    p.add_argument("--redis", default=None, metavar="URL", help="the front's Redis (or FLOWER_REDIS_URL)")
    p.add_argument("--name", default=None, help="this worker's name in `runs` listings (default: host-pid)")
    p.add_argument("--max-runs", type=int, default=3, metavar="N",
                   help="runs with a CLI process at once on this machine (default 3; parked runs do not count)")
    p.add_argument("--max-parked", type=int, default=1000, metavar="N", help="parked runs held at most (default 1000)")
    p.add_argument("--park-after", type=float, default=20.0, metavar="SECONDS",
                   help="a question waiting this long closes its run's CLI (default 20; -1 = never)")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="where the demo model keeps its CLI settings (or FLOWER_BOT_ROOT; default ./flower-runs)")
    p.add_argument("--flow", choices=FLOWS, default="starter", help="must match the front's --flow")
    p.add_argument("--heartbeat", type=float, default=1.0, metavar="SECONDS", help=argparse.SUPPRESS)
    p.add_argument("--dead-after", type=float, default=5.0, metavar="SECONDS",
                   help="a worker silent this long is taken to be dead and its runs are claimed (default 5)")
    p.add_argument("--prefix", default="flower", help=argparse.SUPPRESS)
    p.add_argument("--demo", action="store_true", help="use the offline demo model even with credentials")
    p.add_argument("--scenario", default=None, help=argparse.SUPPRESS)
    p.add_argument("--health-port", type=int, default=None, metavar="PORT",
                   help="serve /healthz /readyz /metrics on 127.0.0.1:PORT (or FLOWER_HEALTH_PORT)")
    p.add_argument("--log-format", choices=LOG_FORMATS, default=None,
                   help="text (default) or json: one object a line, with the run id (or FLOWER_LOG_FORMAT)")
    p.add_argument("--stop-after", type=float, default=10.0, metavar="SECONDS",
                   help="after SIGTERM/SIGINT, exit within this long whatever hangs (default 10)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        url = redis_url(args.redis or os.environ.get("FLOWER_REDIS_URL"))
        if url is None:
            raise ConfigError("--redis (or FLOWER_REDIS_URL) is required: it is where the front hands out runs")
        if args.max_runs < 1 or args.max_parked < 0 or args.dead_after <= args.heartbeat:
            raise ConfigError("--max-runs must be ≥ 1, --max-parked ≥ 0, and --dead-after longer than the heartbeat")
        args.health_port = health_port(args.health_port, os.environ)
        fmt = log_format(args.log_format, os.environ)
        stop_after(args.stop_after)
    except ConfigError as exc:
        print(f"flower-worker: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    setup_logging(fmt, verbose=args.verbose, quiet=("claude_agent_sdk", "aiohttp.access"))
    clock = StopClock(args.stop_after, name="flower-worker")
    QuietPlannedExits.install(clock)
    try:
        code = asyncio.run(work(args, url, clock=clock))
        clock.mark("exiting the interpreter, after a clean stop")
        return code
    except ConfigError as exc:
        print(f"flower-worker: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return EXIT_OK


async def work(args: argparse.Namespace, url: str, *, stop: asyncio.Event | None = None,
               clock: StopClock | None = None) -> int:
    from adapters.ops.health import Health
    from adapters.ops.http import HealthServer, OpsEndpoints
    from adapters.ops.metrics import Metrics
    from adapters.platform import StartRefused
    from adapters.transport.engine import EngineKit
    from adapters.transport.redis_worker import RedisWorker
    from bots.flows import flow_factory
    from bots.model import Model
    from bots.ops import health_port, redis_probe, worker_loops_probe
    from flower_core import RedisSessionStore

    stop = stop or asyncio.Event()
    signals = clock is not None
    if signals:  # the process's own loop
        from bots.loop_errors import install_loop_errors

        install_loop_errors()
    clock = clock or StopClock(args.stop_after)  # without signals it only names the steps
    if signals:
        clock.install(stop)
    step = clock.step

    root = Path(args.root or os.environ.get("FLOWER_BOT_ROOT") or "flower-runs").expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    model = Model(BotConfig(surfaces=[], root=root, demo=bool(args.demo), demo_scenario=args.scenario or "demo",
                            env=dict(os.environ)))
    store = RedisSessionStore(url, prefix=f"{args.prefix}:ss")  # any worker can resume any session
    health, metrics = Health(), Metrics()
    endpoints = OpsEndpoints(health, metrics)
    clock.on_stop.append(lambda: setattr(health, "stopping", True))
    worker: RedisWorker | None = None
    server: HealthServer | None = None
    try:
        await model.start()
        kit = EngineKit(factory=flow_factory(args.flow), env=model.env,
                        runtime_options={"session_store": store,
                                         "partial_text": os.environ.get("FLOWER_STREAM", "") in ("1", "true", "yes")},
                        park_after_s=None if args.park_after < 0 else args.park_after)
        worker = RedisWorker(url, metrics.count_kit(kit), name=args.name, max_runs=args.max_runs,
                             max_parked=args.max_parked, prefix=args.prefix, heartbeat_s=args.heartbeat,
                             dead_after_s=args.dead_after)
        try:
            await worker.start()
            server = await health_port(endpoints, args.health_port)
        except StartRefused as exc:
            raise ConfigError(str(exc)) from None
        metrics.watch_worker(worker)
        health.add("redis", redis_probe(worker.redis))
        health.add("loops", worker_loops_probe(worker))
        if not signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, stop.set)
        log.info("flower-worker %s ready · model: %s", worker.name, model.label)
        clock.mark("serving")
        await stop.wait()
        clock.mark("shutting down")
        log.info("worker %s stopping: its runs go to the other workers", worker.name)
        return EXIT_OK
    finally:
        health.stopping = True
        if worker is not None:
            held = worker
            with step(lambda: _handing_back(held)), contextlib.suppress(Exception):
                await worker.stop()
        if server is not None:
            with step("closing the health port"):
                await server.stop()
        with step("stopping the demo model"):
            await model.stop()
        store.close()


def _handing_back(worker: RedisWorker) -> str:
    runs = list(worker.held)
    return (f"handing runs {', '.join(runs)} back through Redis" if runs
            else "leaving Redis (its last messages and heartbeat)")


if __name__ == "__main__":
    sys.exit(main())
