"""`flower-bot`: one process hosting any set of front ends over one hub and one state store.

    flower-bot web [--host H] [--port P]        # the local web page (the embedded default)
    flower-bot slack discord                   # several at once (or --web --slack --discord)
    flower-bot --config bot.toml               # front ends from its [surfaces] table
    flower-bot slack --redis redis://h:6379/0  # the chat front only: runs go to flower-worker processes

Order of a life: read the configuration (a problem → one line, exit 2) → pick the model (real
credentials, else the offline demo model double, said loudly) → build each front end → one Hub
over their surfaces → attach, start, report runs the last process left behind (`recover`) →
serve until SIGINT/SIGTERM → live runs stop as on a restart (they can be woken next time) →
front ends stop in reverse order, all within `--stop-after` seconds (bots/shutdown.py). Health,
readiness and metrics (bots/ops.py) are on the web page's port and on `--health-port`. Rendering is
the front ends' business, not this module's.
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
from typing import TYPE_CHECKING

from bots.config import FLOWS, LOG_FORMATS, SURFACES, BotConfig, ConfigError, load_config
from bots.frontend import Frontend
from bots.logs import setup_logging
from bots.platforms import PLATFORMS
from bots.shutdown import QuietPlannedExits, StopClock

if TYPE_CHECKING:
    from adapters.hub import Hub, HubSettings
    from adapters.transport.redis_front import RedisTransport

EXIT_OK, EXIT_CONFIG = 0, 2
log = logging.getLogger("flower.bot")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flower-bot", description="Run flower's chat front ends (web page, Slack, Discord) over one hub.",
        epilog="With no front end named, the [surfaces] table of the config decides, else the web page. With no "
               "model credentials (ANTHROPIC_API_KEY, ...), runs use the offline demo model.")
    p.add_argument("surfaces", nargs="*", metavar="SURFACE", help=f"front ends to run: {', '.join(SURFACES)}")
    for s in SURFACES:
        p.add_argument(f"--{s}", dest=f"with_{s}", action="store_true", help=f"run the {s} front end")
    p.add_argument("-c", "--config", default=None, metavar="FILE", help="TOML config (or FLOWER_BOT_CONFIG)")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="where runs and the bot's state live (or FLOWER_BOT_ROOT; default ./flower-runs)")
    p.add_argument("--flow", choices=FLOWS, default=None,
                   help="starter = clarify → goal → judged work (default); single = one interactive agent step")
    p.add_argument("--max-runs", type=int, default=None, metavar="N", help="runs going at once (default 3)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="how long a question waits (default 1800; 0 = unattended)")
    p.add_argument("--asks", type=int, default=None, metavar="N", help="question quota per run (default: none)")
    p.add_argument("--budget", type=float, default=None, metavar="USD", help="default cost cap per run")
    p.add_argument("--lang", default=None, metavar="LANG",
                   help="what the agents are told things in: en (default) or zh, the original flower's texts")
    p.add_argument("--demo", action="store_true", help="use the offline demo model even with credentials")
    p.add_argument("--redis", default=None, metavar="URL",
                   help="chat front only: hand runs to flower-worker processes over Redis (or FLOWER_REDIS_URL)")
    p.add_argument("--scenario", default=None, help=argparse.SUPPRESS)  # the demo model's script (tests)
    p.add_argument("--host", default=None, help="web page address (default 127.0.0.1; elsewhere needs a token)")
    p.add_argument("--port", default=None, help="web page port (default 8470)")
    p.add_argument("--health-port", type=int, default=None, metavar="PORT",
                   help="serve /healthz /readyz /metrics on 127.0.0.1:PORT (or FLOWER_HEALTH_PORT)")
    p.add_argument("--log-format", choices=LOG_FORMATS, default=None,
                   help="text (default) or json: one object a line, with the run id (or FLOWER_LOG_FORMAT)")
    p.add_argument("--stop-after", type=float, default=None, metavar="SECONDS",
                   help="after SIGTERM/SIGINT, exit within this long whatever hangs (default 10)")
    p.add_argument("--no-wake", action="store_true",
                   help="runs the last process left live stay asleep until a person wakes them")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug lines")
    return p


# Library chatter (HTTP clients, websockets) stays at warnings unless asked for.
QUIET = ("aiohttp.access", "slack_bolt", "slack_sdk", "discord", "websockets", "claude_agent_sdk")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = load_config(args, os.environ)
    except ConfigError as exc:
        print(f"flower-bot: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    setup_logging(cfg.log_format, verbose=cfg.verbose, quiet=QUIET)
    clock = StopClock(cfg.stop_after_s, name="flower-bot")
    QuietPlannedExits.install(clock)
    try:
        code = asyncio.run(serve(cfg, clock=clock))
        clock.mark("exiting the interpreter, after a clean stop")
        return code
    except ConfigError as exc:
        print(f"flower-bot: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return EXIT_OK


def build_frontends(cfg: BotConfig) -> list[Frontend]:
    """Each named front end built by its registry entry (bots/platforms.py); a ConfigError names what is
    missing. The names were checked against the registry when the configuration was read."""
    return [PLATFORMS[name].build(cfg) for name in cfg.surfaces]


async def serve(cfg: BotConfig, *, ready: asyncio.Event | None = None, stop: asyncio.Event | None = None,
                clock: StopClock | None = None) -> int:
    """`clock`: signals end the process within its deadline (the process's own main); without one (a
    test serving in its own loop), SIGINT/SIGTERM only set `stop`."""
    from adapters.hub import Hub
    from adapters.ops.health import Health
    from adapters.ops.http import HealthServer, OpsEndpoints
    from adapters.ops.metrics import Metrics
    from adapters.platform import StartRefused
    from adapters.state import ChannelPolicy, SQLiteStateStore
    from adapters.transport.engine import EngineKit
    from adapters.web import WebFrontend
    from bots.flows import flow_factory
    from bots.loop_errors import install_loop_errors
    from bots.model import Model
    from bots.ops import health_port, redis_probe

    stop = stop or asyncio.Event()
    signals = clock is not None
    if signals:  # the process's own loop (a test serving in its own loop keeps its handler)
        install_loop_errors()
    clock = clock or StopClock(cfg.stop_after_s)  # without signals it only names the steps
    if signals:
        clock.install(stop)  # first: a signal while the front ends connect is bounded too
    frontends = build_frontends(cfg)  # before anything starts: bad configuration costs nothing
    cfg.root.mkdir(parents=True, exist_ok=True)
    store = SQLiteStateStore(cfg.root / "bot-state.db")
    model = Model(cfg, remote=cfg.redis_url is not None)
    health, metrics = Health(), Metrics()
    endpoints = OpsEndpoints(health, metrics)
    step = clock.step
    clock.on_stop.append(lambda: setattr(health, "stopping", True))
    started: list[Frontend] = []
    hub: Hub | None = None
    server: HealthServer | None = None
    try:
        await model.start()
        for ch in cfg.channels:
            store.set_channel_policy(ch.channel, ChannelPolicy(ch.starters, ch.responders, ch.admins))
        surfaces = metrics.count_surfaces({f.name: f.surface for f in frontends})
        kit = EngineKit(factory=flow_factory(cfg.flow), env=model.env, runtime_options={"partial_text": cfg.stream})
        hub = Hub(surfaces, store, hub_settings(cfg), kit=kit, transport=(transport := _transport(cfg)))
        declare_routines(hub, cfg)
        hub.scheduler.hold = routine_hold(cfg.env.get("FLOWER_ROUTINE_HOLD", ""))
        try:
            await hub.open()
        except StartRefused as exc:  # Redis is not there
            raise ConfigError(str(exc)) from None
        metrics.watch_hub(hub)
        metrics.intents_pending = hub.pending_inputs  # accepted, not yet carried out
        for f in frontends:
            health.add(f.name, getattr(f, "health", None) or _unknown)
            if isinstance(f, WebFrontend):
                f.ops = endpoints
                f.keep_events_in(store)  # run event logs outlive the process (front of a fleet too)
        if cfg.redis_url is not None:
            health.add("redis", redis_probe(transport.redis if transport is not None else None))
        for f in frontends:
            f.attach(hub)
        try:
            server = await health_port(endpoints, cfg.health_port)
        except StartRefused as exc:
            raise ConfigError(str(exc)) from None
        for f in frontends:
            try:
                with step(f"starting front end {f.name}"):
                    await f.start()
            except StartRefused as exc:  # a refused token, a switched-off intent, a taken port
                raise ConfigError(str(exc)) from None
            started.append(f)
        died = await hub.recover()
        if died:
            log.info("%d run(s) stopped with the last bot process; their threads were told: %s",
                     len(died), ", ".join(died))
        if not signals:
            _install_signals(stop)
        log.info("flower-bot ready: %s · model: %s · runs in %s", ", ".join(cfg.surfaces), model.label, cfg.root)
        if ready is not None:
            ready.set()
        clock.mark("serving")
        await stop.wait()
        clock.mark("shutting down")
        log.info("shutting down: %s", "runs go on on their workers" if cfg.redis_url else
                 "live runs stop now and can be woken by the next process")
        return EXIT_OK
    finally:
        health.stopping = True
        if hub is not None:
            with step(lambda: _runs_stopping(hub)), contextlib.suppress(Exception):
                await hub.close()
        for f in reversed(started):
            try:
                with step(f"stopping front end {f.name}"):
                    await f.stop()
            except Exception as exc:  # one front end failing to stop must not keep the others up
                log.warning("front end %s did not stop cleanly: %r", f.name, exc)
        if server is not None:
            with step("closing the health port"):
                await server.stop()
        with step("stopping the demo model"):
            await model.stop()
        store.close()


async def _unknown() -> str:
    return "unknown"  # a front end that cannot say its health (see Frontend.health) is never "ready"


def _runs_stopping(hub: Hub) -> str:
    runs = [r.run_id for r in hub.query.runs()]
    return f"stopping runs {', '.join(runs)}" if runs else "closing the run transport"


def declare_routines(hub: Hub, cfg: BotConfig) -> None:
    """The file's [[routines]], as code: kept under stable ids, updated in place, gone when gone from the file."""
    from adapters.hub import AddRoutine, RunOptions
    from adapters.platform import ThreadRef

    declared = []
    for r in cfg.routines:
        o = r.options
        options = RunOptions(timeout_s=o.get("timeout_s"), max_asks=o.get("max_asks"), budget_usd=o.get("budget_usd"),
                             approve=tuple(o["approve"]) if "approve" in o else None)
        platform, _, channel = r.place.partition(":")
        place = ThreadRef("web", "page") if r.place == "web" else ThreadRef(platform, channel)
        declared.append((AddRoutine(r.task, r.schedule, r.timezone, r.name, options, r.overlap, r.catch_up), place,
                         r.owner))
    try:
        hub.routines.declare(declared)
    except ValueError as exc:
        raise ConfigError(f"config: [[routines]] {exc}") from None


def routine_hold(value: str) -> dict[str, float]:
    """FLOWER_ROUTINE_HOLD="opened=30": a test seam (crash tests) that makes a firing stand still at a moment."""
    hold = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        moment, _, seconds = part.partition("=")
        try:
            hold[moment.strip()] = float(seconds)
        except ValueError:
            raise ConfigError(f"FLOWER_ROUTINE_HOLD: expected moment=seconds, got {part!r}") from None
    return hold


def hub_settings(cfg: BotConfig) -> HubSettings:
    """What the hub takes from the bot's configuration."""
    from adapters.hub import HubSettings, UploadLimits

    return HubSettings(root=cfg.root, workspaces={c.channel: c.workspace for c in cfg.channels if c.workspace},
                       max_runs=cfg.max_runs, max_parked=cfg.max_parked, timeout_s=cfg.timeout_s,
                       max_asks=cfg.max_asks, budget_usd=cfg.budget_usd, dm_after_s=cfg.dm_after_s,
                       park_after_s=cfg.park_after_s, warm_pool=cfg.warm_pool, wake_on_start=cfg.wake_on_start,
                       language=cfg.language,
                       budget_ceilings={c.channel: c.max_budget_usd for c in cfg.channels
                                        if c.max_budget_usd is not None},
                       uploads=UploadLimits.of_mb(cfg.max_upload_mb, cfg.max_run_upload_mb),
                       channel_uploads={c.channel: UploadLimits.of_mb(c.max_upload_mb if c.max_upload_mb is not None
                                                                      else cfg.max_upload_mb,
                                                                      c.max_run_upload_mb
                                                                      if c.max_run_upload_mb is not None
                                                                      else cfg.max_run_upload_mb)
                                        for c in cfg.channels
                                        if c.max_upload_mb is not None or c.max_run_upload_mb is not None},
                       timezone=cfg.timezone, approvals=cfg.approvals,
                       channel_approvals={c.channel: c.approvals for c in cfg.channels if c.approvals},
                       model=cfg.model, effort=cfg.effort, models=cfg.models,
                       channel_models={c.channel: c.models for c in cfg.channels if c.models})


def _transport(cfg: BotConfig) -> RedisTransport | None:
    """Redis when configured (this process is then the chat front only), else runs stay in this process."""
    if cfg.redis_url is None:
        return None
    from adapters.transport.redis_front import RedisTransport

    return RedisTransport(cfg.redis_url)


def _install_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)


if __name__ == "__main__":
    sys.exit(main())
