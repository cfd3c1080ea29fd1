"""`flower-bot slack` configuration: environment and the [slack] table into SlackSettings, and one
clear line naming the variable or key for everything missing or malformed (never a token's value)."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.slack import DEFAULT_API_URL
from bots.config import ConfigError
from bots.slack_bot import settings_from

ENV = {"SLACK_BOT_TOKEN": "xoxb-1-abc", "SLACK_APP_TOKEN": "xapp-1-def"}


def test_socket_mode_from_the_environment_by_default() -> None:
    s = settings_from(ENV, {})
    assert (s.mode, s.bot_token, s.app_token, s.api_url) == ("socket", "xoxb-1-abc", "xapp-1-def", DEFAULT_API_URL)
    assert "xoxb" not in repr(s) and "xapp" not in repr(s)
    s = settings_from({**ENV, "SLACK_API_URL": "http://127.0.0.1:9/api/"}, {"api_url": "https://other/api/"})
    assert s.api_url == "http://127.0.0.1:9/api/"  # the environment wins over the file


def test_http_mode_needs_the_signing_secret_not_the_app_token() -> None:
    s = settings_from({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "sec"},
                      {"mode": "http", "port": 8080, "host": "0.0.0.0", "path": "/slack"})
    assert (s.mode, s.signing_secret, s.port, s.host, s.path, s.app_token) == ("http", "sec", 8080, "0.0.0.0",
                                                                              "/slack", "")


@pytest.mark.parametrize(("env", "table", "starts"), [
    ({}, {}, "SLACK_BOT_TOKEN is not set"),
    ({"SLACK_BOT_TOKEN": "xoxb-1"}, {}, "SLACK_APP_TOKEN is not set"),
    ({**ENV, "SLACK_BOT_TOKEN": "xoxp-user"}, {}, "SLACK_BOT_TOKEN is malformed"),
    ({**ENV, "SLACK_APP_TOKEN": "xapp-1 2"}, {}, "SLACK_APP_TOKEN is malformed"),
    ({"SLACK_BOT_TOKEN": "xoxb-1"}, {"mode": "http"}, "SLACK_SIGNING_SECRET is not set"),
    (ENV, {"mode": "webhook"}, 'config: [slack].mode must be "socket" or "http"'),
    (ENV, {"token": "xoxb-in-a-file"}, "config: unknown key [slack].token"),
    (ENV, {"port": "80"}, "config: [slack].port must be a number"),
    (ENV, {"port": 70000}, "config: [slack].port must be a number"),
    (ENV, {"agent_sessions": "yes"}, "config: [slack].agent_sessions must be true or false"),
    (ENV, {"path": "slack"}, "config: [slack].path must start with '/'"),
    ({**ENV, "SLACK_API_URL": "slack.com/api"}, {}, "SLACK_API_URL must be an http(s) URL"),
    (ENV, {"api_url": "ftp://x/"}, "[slack].api_url must be an http(s) URL"),
])
def test_problems_are_one_line_naming_the_variable_or_key(env: dict[str, str], table: dict[str, Any],
                                                          starts: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from(env, table)
    line = str(err.value)
    assert line.startswith(starts) and "\n" not in line
    assert "xoxp-user" not in line and "xoxb-in-a-file" not in line
