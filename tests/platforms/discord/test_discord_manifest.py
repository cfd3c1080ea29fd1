"""manifest/: the /flower command definitions and the notes on intents, permissions and the invite URL
match what the bot actually registers and asks for."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.discord_bridge.client import FlowerClient, intents, invite_url, permissions
from adapters.discord_bridge.context import DiscordContext

MANIFEST = Path(__file__).resolve().parents[3] / "manifest" / "discord-commands.json"


def test_the_manifest_is_exactly_what_the_bot_syncs() -> None:
    client = FlowerClient(DiscordContext())
    synced = [cmd.to_dict(client.tree) for cmd in client.tree.get_commands()]
    assert json.loads(MANIFEST.read_text(encoding="utf-8")) == json.loads(json.dumps(synced))
    [flower] = synced
    assert flower["name"] == "flower" and flower["contexts"] == [0]  # guilds only: runs live in threads
    subs = {o["name"]: o for o in flower["options"]}
    assert list(subs) == ["run", "plan", "stop", "end", "model", "effort", "status", "runs", "follow", "resume",
                          "unfollow", "wake", "help", "routine"]
    assert [o["name"] for o in subs["run"]["options"]] == ["task", "timeout", "asks", "budget", "approve", "model",
                                                           "effort", "plan"]
    assert subs["run"]["options"][-1]["type"] == 5  # a boolean
    assert [o["name"] for o in subs["plan"]["options"]] == [o["name"] for o in subs["run"]["options"]][:-1]
    assert [c["value"] for c in subs["effort"]["options"][0]["choices"]] == ["low", "medium", "high", "xhigh", "max"]
    assert all(len(o["description"]) <= 100 for o in flower["options"])
    routine = {o["name"]: o for o in subs["routine"]["options"]}  # a subcommand group (type 2)
    assert subs["routine"]["type"] == 2 and list(routine) == ["add", "list", "pause", "resume", "delete", "run"]
    assert [o["name"] for o in routine["add"]["options"]] == ["schedule", "task", "name", "timezone", "overlap",
                                                              "catch_up", "plan"]
    assert all(len(o["description"]) <= 100 for o in subs["routine"]["options"] for o in [o, *o.get("options", [])])


def test_the_manifest_notes_name_the_intents_permissions_and_invite_the_bot_uses() -> None:
    notes = (MANIFEST.parent / "discord.md").read_text(encoding="utf-8")
    assert f"Intent value: `{intents().value}`" in notes
    assert f"Permission integer: `{permissions().value}`" in notes
    url = invite_url(42).replace("client_id=42", "client_id=<APPLICATION_ID>")
    assert url in notes and "scope=bot+applications.commands" in url
    named = ["View Channel", "Send Messages", "Embed Links", "Create Public Threads", "Send Messages in Threads",
             "Add Reactions", "Read Message History"]
    assert all(f"| {name} |" in notes for name in named)
