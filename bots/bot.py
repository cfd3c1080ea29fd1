"""`flower-bot`: one process hosting any set of front ends over one hub and one state store.

    flower-bot web [--host H] [--port P]        # the local web page (the embedded default)
    flower-bot slack discord                   # several at once (or --web --slack --discord)
    flower-bot --config bot.toml               # front ends from its [surfaces] table
    flower-bot slack --redis redis://h:6379/0  # the chat front only: runs go to flower-worker processes

Order of a life: read the configuration (a problem → one line, exit 2) → pick the model (real
credentials, else the offline demo model double, said loudly) → build each front end → one Hub
over their surfaces → attach, start, report runs the last process left behind (`recover`) →
serve until SIGINT/SIGTERM → live runs stop as on a restart (they can be woken next time) →
front ends stop in reverse order. Rendering is the front ends' business, not this module's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bots.config import FLOWS, SURFACES, BotConfig, ConfigError, load_config
from bots.frontend import Frontend

if TYPE_CHECKING:
    from adapters.transport import Transport

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
    p.add_argument("--demo", action="store_true", help="use the offline demo model even with credentials")
    p.add_argument("--redis", default=None, metavar="URL",
                   help="chat front only: hand runs to flower-worker processes over Redis (or FLOWER_REDIS_URL)")
    p.add_argument("--scenario", default=None, help=argparse.SUPPRESS)  # the demo model's script (tests)
    p.add_argument("--host", default=None, help="web page address (default 127.0.0.1; elsewhere needs a token)")
    p.add_argument("--port", default=None, help="web page port (default 8470)")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug lines")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = load_config(args, os.environ)
    except ConfigError as exc:
        print(f"flower-bot: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    logging.basicConfig(level=logging.DEBUG if cfg.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Library chatter (HTTP clients, websockets) stays at warnings unless asked for.
    for noisy in ("aiohttp.access", "slack_bolt", "slack_sdk", "discord", "websockets", "claude_agent_sdk"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if cfg.verbose else logging.WARNING)
    try:
        return asyncio.run(serve(cfg))
    except ConfigError as exc:
        print(f"flower-bot: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return EXIT_OK


def build_frontends(cfg: BotConfig) -> list[Frontend]:
    """Each named front end from its `bots.<name>_bot.build(cfg)`; a ConfigError names what is missing."""
    out = []
    for name in cfg.surfaces:
        module = importlib.import_module(f"bots.{name}_bot")
        out.append(module.build(cfg))
    return out


async def serve(cfg: BotConfig, *, ready: asyncio.Event | None = None, stop: asyncio.Event | None = None) -> int:
    from adapters.hub import Hub
    from adapters.state import ChannelPolicy, SQLiteStateStore
    from adapters.surface import StartRefused
    from bots.flows import flow_factory
    from bots.model import Model

    frontends = build_frontends(cfg)  # before anything starts: bad configuration costs nothing
    cfg.root.mkdir(parents=True, exist_ok=True)
    store = SQLiteStateStore(cfg.root / "bot-state.db")
    model = Model(cfg, remote=cfg.redis_url is not None)
    stop = stop or asyncio.Event()
    started: list[Frontend] = []
    hub: Hub | None = None
    try:
        await model.start()
        for ch in cfg.channels:
            store.set_channel_policy(ch.channel, ChannelPolicy(ch.starters, ch.responders, ch.admins))
        hub = Hub({f.name: f.surface for f in frontends}, store, root=cfg.root,
                  workspaces={c.channel: c.workspace for c in cfg.channels if c.workspace is not None},
                  factory=flow_factory(cfg.flow), env=model.env, max_runs=cfg.max_runs, timeout_s=cfg.timeout_s,
                  max_asks=cfg.max_asks, budget_usd=cfg.budget_usd, dm_after_s=cfg.dm_after_s,
                  park_after_s=cfg.park_after_s, max_parked=cfg.max_parked,
                  budget_ceilings={c.channel: c.max_budget_usd for c in cfg.channels if c.max_budget_usd is not None},
                  transport=_transport(cfg))
        try:
            await hub.open()
        except StartRefused as exc:  # Redis is not there
            raise ConfigError(str(exc)) from None
        for f in frontends:
            f.attach(hub)
        for f in frontends:
            try:
                await f.start()
            except StartRefused as exc:  # a refused token, a switched-off intent, a taken port
                raise ConfigError(str(exc)) from None
            started.append(f)
        died = await hub.recover()
        if died:
            log.info("%d run(s) stopped with the last bot process; their threads were told: %s",
                     len(died), ", ".join(died))
        _install_signals(stop)
        log.info("flower-bot ready: %s · model: %s · runs in %s", ", ".join(cfg.surfaces), model.label, cfg.root)
        if ready is not None:
            ready.set()
        await stop.wait()
        log.info("shutting down: %s", "runs go on on their workers" if cfg.redis_url else
                 "live runs stop now and can be woken by the next process")
        return EXIT_OK
    finally:
        if hub is not None:
            with contextlib.suppress(Exception):
                await hub.close()
        for f in reversed(started):
            try:
                await f.stop()
            except Exception as exc:  # one front end failing to stop must not keep the others up
                log.warning("front end %s did not stop cleanly: %r", f.name, exc)
        await model.stop()
        store.close()


def _transport(cfg: BotConfig) -> Transport | None:
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
