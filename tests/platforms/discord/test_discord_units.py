"""Pure pieces of the Discord bridge: rendering, error mapping, reply wording, the bot's configuration."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import aiohttp
import discord
import pytest

from adapters.discord_bridge.errors import translate
from adapters.discord_bridge.render import ActionButton, context_bar, render
from adapters.discord_bridge.reply import names_as_mentions
from adapters.ids import encode
from adapters.platform import Button, OutMessage, PermanentSurfaceError, TransientSurfaceError
from bots.config import ConfigError
from bots.discord_bot import settings_from

TOKEN = "MTIz.secret-token-value"


def test_titled_messages_become_embeds_and_buttons_route_by_action_id() -> None:
    ids = [encode("ans", "r1", "1-q1", i) for i in range(22)] + [encode("dec", "r1", "1-q1")]
    buttons = [Button("x" * 100, ids[0], "primary")] + [Button(f"o{i}", a) for i, a in enumerate(ids[1:])]
    msg = OutMessage("ask:1-q1", "ask", "Which one?", title="❓ Question from the agent", buttons=buttons)
    r = render(msg)
    assert r.content is None and r.embed is not None and r.embed.description == "Which one?"
    assert r.embed.colour is not None and r.embed.colour.value == 0x5865F2
    assert r.view is not None
    items = list(r.view.children)
    assert all(isinstance(i, ActionButton) for i in items) and [i.action_id for i in items] == ids  # type: ignore
    rows = r.view.to_components()
    assert len(rows) == 5 and all(len(row["components"]) <= 5 for row in rows)
    first = rows[0]["components"][0]
    assert len(first["label"]) == 80 and first["style"] == discord.ButtonStyle.primary.value
    edit = r.edit_kwargs()
    assert edit["content"] is None and edit["allowed_mentions"].to_dict() == {"parse": []}


def test_plain_messages_are_content_and_edits_clear_what_is_gone() -> None:
    r = render(OutMessage("prose:1", "prose", "Hello **there**"))
    assert r.content == "Hello **there**" and r.embed is None and r.view is None
    assert r.edit_kwargs()["embeds"] == [] and r.edit_kwargs()["view"] is None
    assert render(OutMessage("n", "notice", "  ")).content == "…"  # Discord refuses an empty message


def test_status_fields_get_a_context_bar_and_a_footer() -> None:
    msg = OutMessage("status", "status", "Task: x", title="▶️ Running",
                     fields=[("Step", "1/3 clarify"), ("Context", "80.2K / 200K (40%)"), ("Cost", "$0.0100")])
    r = render(msg, footer="run r1 · started by Ana")
    assert r.embed is not None and r.embed.fields[1].value == "80.2K / 200K (40%)\n▰▰▰▰▱▱▱▱▱▱"
    assert r.embed.footer.text == "run r1 · started by Ana"
    assert context_bar("— / 1M") == "" and context_bar("(100%)") == "▰" * 10


def test_discord_errors_map_to_transient_or_permanent() -> None:
    def http(cls: Any, status: int, code: int = 0, headers: dict[str, str] | None = None) -> Any:
        response = SimpleNamespace(status=status, reason="x", headers=headers or {})
        return cls(response, {"message": "m", "code": code})

    limited = translate(discord.RateLimited(45.0), "post")
    assert isinstance(limited, TransientSurfaceError) and limited.retry_after == 45.0
    too_many = translate(http(discord.HTTPException, 429, headers={"Retry-After": "2.5"}), "post")
    assert isinstance(too_many, TransientSurfaceError) and too_many.retry_after == 2.5
    assert isinstance(translate(http(discord.DiscordServerError, 503), "edit"), TransientSurfaceError)
    assert isinstance(translate(aiohttp.ClientConnectionError("reset"), "post"), TransientSurfaceError)
    assert isinstance(translate(TimeoutError(), "post"), TransientSurfaceError)
    gone = translate(http(discord.NotFound, 404, 10008), "edit status")
    assert isinstance(gone, PermanentSurfaceError) and "10008" in str(gone) and "edit status" in str(gone)
    assert isinstance(translate(http(discord.Forbidden, 403, 50013), "post"), PermanentSurfaceError)
    assert isinstance(translate(ValueError("too many components"), "post"), PermanentSurfaceError)


def test_user_ids_in_replies_show_as_names_without_touching_other_numbers() -> None:
    text = "That question is already settled (answered by 123456789012345678). <#223456789012345678> r12345678"
    assert names_as_mentions(text) == ("That question is already settled (answered by <@123456789012345678>). "
                                       "<#223456789012345678> r12345678")


def test_configuration_checks_name_the_variable_and_never_echo_the_token() -> None:
    env = {"DISCORD_TOKEN": TOKEN, "DISCORD_GUILD_IDS": "111, 222", "DISCORD_API_BASE": "http://127.0.0.1:9/api/v10"}
    s = settings_from(env, {})
    assert list(s.guild_ids) == [111, 222] and s.api_base == env["DISCORD_API_BASE"] and s.gateway_url is None
    assert TOKEN not in repr(s)
    from_file = settings_from({"DISCORD_TOKEN": TOKEN}, {"guild_ids": [333], "gateway_url": "wss://gw.example/"})
    assert list(from_file.guild_ids) == [333] and from_file.gateway_url == "wss://gw.example/"
    cases = [
        ({}, {}, "DISCORD_TOKEN is not set"),
        ({"DISCORD_TOKEN": f"Bot {TOKEN}"}, {}, "DISCORD_TOKEN is malformed"),
        ({"DISCORD_TOKEN": TOKEN, "DISCORD_GUILD_IDS": "111,general"}, {}, "DISCORD_GUILD_IDS must be"),
        ({"DISCORD_TOKEN": TOKEN, "DISCORD_API_BASE": "discord.com/api"}, {}, "DISCORD_API_BASE must be"),
        ({"DISCORD_TOKEN": TOKEN, "DISCORD_GATEWAY_URL": "http://x"}, {}, "DISCORD_GATEWAY_URL must be"),
        ({"DISCORD_TOKEN": TOKEN}, {"token": "x"}, "unknown key [discord].token"),
        ({"DISCORD_TOKEN": TOKEN}, {"guild_ids": "123"}, "[discord].guild_ids must be a list"),
    ]
    for env_, table, needle in cases:
        with pytest.raises(ConfigError) as err:
            settings_from(env_, table)
        message = str(err.value)
        assert needle in message and "\n" not in message and TOKEN not in message and "secret" not in message


@pytest.mark.skipif("tone" not in OutMessage.__dataclass_fields__, reason="OutMessage.tone not in this tree yet")
def test_a_warning_tone_colours_the_embed() -> None:
    warm = OutMessage("status", "status", "Task: x", title="▶️ Running", tone="warning")  # type: ignore[call-arg]
    r = render(warm)
    assert r.embed is not None and r.embed.colour is not None and r.embed.colour.value == 0xE67E22
