"""`flower-bot slack`: build the Slack front end from the bot's configuration.

Environment (wins over the TOML file's `[slack]` table; the tokens come from the environment only):

    SLACK_BOT_TOKEN       xoxb-… (OAuth & Permissions → Bot User OAuth Token); always needed
    SLACK_APP_TOKEN       xapp-… (Basic Information → App-Level Tokens, scope connections:write);
                          Socket Mode, the default
    SLACK_SIGNING_SECRET  Basic Information → App Credentials → Signing Secret; HTTP mode only
    SLACK_API_URL         Web API base URL (default https://slack.com/api/): GovSlack, a proxy, a test
                          double. In Socket Mode the WebSocket URL comes from its apps.connections.open.

    [slack]
    mode = "socket"              # or "http": Slack POSTs to http://host:port/path (Events API)
    host = "127.0.0.1"           # http mode: where to listen (put a TLS proxy or tunnel in front)
    port = 3000                  # http mode
    path = "/slack/events"       # http mode: the Request URL's path
    api_url = "https://slack.com/api/"
    agent_sessions = true        # drive Slack agent sessions where the app is declared as an agent

Anything missing or malformed is a `ConfigError` naming the variable or key; a token Slack refuses is
one too (raised by `start()`), so the bot exits with one line and code 2. Token values never appear
in messages or logs.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from adapters.slack import DEFAULT_API_URL, SlackFrontend, SlackSettings
from bots.config import BotConfig, ConfigError, refuse_unknown

__all__ = ["SlackBot", "build", "settings_from"]

_KEYS = {"mode", "host", "port", "path", "api_url", "agent_sessions"}


class SlackBot(SlackFrontend):
    """The Slack front end as the bot runs it: plus its health, from slack-sdk's own connection state."""

    async def health(self) -> str:
        if self.settings.mode == "http":
            return "listening" if self.port is not None else "stopped"
        handler = self.handler
        if handler is None:
            return "disconnected"
        return "connected" if await handler.client.is_connected() else "connecting"


def build(cfg: BotConfig) -> SlackBot:
    return SlackBot(settings_from(cfg.env, cfg.section("slack")))


def settings_from(env: dict[str, str], table: dict[str, Any]) -> SlackSettings:
    refuse_unknown(table, _KEYS, "[slack]", "; tokens come from SLACK_BOT_TOKEN, SLACK_APP_TOKEN, "
                   "SLACK_SIGNING_SECRET only")
    mode = _str(table, "mode") or "socket"
    if mode not in ("socket", "http"):
        raise ConfigError(f'config: [slack].mode must be "socket" or "http", got {mode!r}')
    bot_token = _token(env, "SLACK_BOT_TOKEN", "xoxb-", "OAuth & Permissions → Bot User OAuth Token")
    app_token = secret = ""
    if mode == "socket":
        app_token = _token(env, "SLACK_APP_TOKEN", "xapp-",
                           "Basic Information → App-Level Tokens, with the connections:write scope")
    else:
        secret = env.get("SLACK_SIGNING_SECRET", "").strip()
        if not secret:
            raise ConfigError("SLACK_SIGNING_SECRET is not set: HTTP mode needs it (Basic Information → App "
                              "Credentials → Signing Secret)")
    api_url = env.get("SLACK_API_URL") or _str(table, "api_url") or DEFAULT_API_URL
    where = "SLACK_API_URL" if env.get("SLACK_API_URL") else "[slack].api_url"
    parts = urlsplit(api_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where} must be an http(s) URL like https://slack.com/api/, got {api_url!r}")
    port = table.get("port", 3000)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"config: [slack].port must be a number from 0 to 65535, got {port!r}")
    sessions = table.get("agent_sessions", True)
    if not isinstance(sessions, bool):
        raise ConfigError(f"config: [slack].agent_sessions must be true or false, got {sessions!r}")
    path = _str(table, "path") or "/slack/events"
    if not path.startswith("/"):
        raise ConfigError(f"config: [slack].path must start with '/', got {path!r}")
    return SlackSettings(bot_token=bot_token, app_token=app_token, signing_secret=secret, mode=mode,
                         api_url=api_url, host=_str(table, "host") or "127.0.0.1", port=port, path=path,
                         agent_sessions=sessions)


def _token(env: dict[str, str], name: str, prefix: str, where: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is not set: put the app's token ({where}) in the environment")
    if not value.startswith(prefix) or any(c.isspace() for c in value):
        raise ConfigError(f"{name} is malformed: it should start with {prefix} and hold no spaces")
    return value


def _str(table: dict[str, Any], key: str) -> str:
    value = table.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"config: [slack].{key} must be a string, got {value!r}")
    return value.strip()
