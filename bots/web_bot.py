"""`flower-bot web`: build the web front end from the bot's configuration.

Address: the `--host`/`--port` flags (or FLOWER_WEB_HOST / FLOWER_WEB_PORT, which the frame folds
into `cfg.web_host`/`cfg.web_port`), else `[web] host`/`port` in the TOML file, else 127.0.0.1:8470.
Token: FLOWER_WEB_TOKEN, else `[web] token`; off loopback without one, a token is generated and
printed once at start. The page's threads are kept in `<root>/web-threads.db`, so a restarted bot
shows them again and open pages catch up where they were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.web import WebFrontend
from bots.config import BotConfig, ConfigError, refuse_unknown
from bots.credentials import has_credentials

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "build"]

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8470
_WEB_KEYS = {"host", "port", "token"}


def build(cfg: BotConfig) -> WebFrontend:
    table = cfg.section("web")
    refuse_unknown(table, _WEB_KEYS, "[web]")
    host = _host(cfg, table)
    port = _port(cfg, table)
    token = cfg.env.get("FLOWER_WEB_TOKEN") or table.get("token") or None
    if token is not None and (not isinstance(token, str) or len(token) < 16 or any(c.isspace() for c in token)):
        raise ConfigError("web token (FLOWER_WEB_TOKEN or [web].token) must be at least 16 characters, no spaces")
    root = getattr(cfg, "root", None)
    # With --redis the workers pick the model: this process cannot say the page shows the offline demo.
    demo = cfg.redis_url is None and (bool(cfg.demo) or not has_credentials(cfg.env))
    return WebFrontend(host=host, port=port, token=token, demo=demo,
                          db_path=Path(root) / "web-threads.db" if root is not None else None)


def _host(cfg: BotConfig, table: dict[str, Any]) -> str:
    # The frame's value wins unless it is only the default and the TOML file names another.
    flag = getattr(cfg, "web_host", None)
    if flag and (flag != DEFAULT_HOST or "host" not in table or cfg.env.get("FLOWER_WEB_HOST")):
        host = flag
    else:
        host = table.get("host", DEFAULT_HOST)
    if not isinstance(host, str) or not host.strip() or any(c.isspace() or c in "/?#@" for c in host):
        raise ConfigError(f"web host must be an address like 127.0.0.1 or 0.0.0.0, got {host!r}")
    return host.strip()


def _port(cfg: BotConfig, table: dict[str, Any]) -> int:
    flag = getattr(cfg, "web_port", None)
    if flag is not None and (flag != DEFAULT_PORT or "port" not in table or cfg.env.get("FLOWER_WEB_PORT")):
        value: Any = flag
    else:
        value = table.get("port", DEFAULT_PORT)
    if isinstance(value, bool):
        raise ConfigError(f"web port must be a number, got {value!r}")
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"web port must be a number, got {value!r}") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"web port must be between 0 and 65535, got {port}")
    return port
