"""The tool-policy matcher (flower_core/permissions.py): Claude Code's rule syntax, pure."""

from __future__ import annotations

import pytest

from flower_core.permissions import Policy, Rule, parse_rule, parse_rules

WS = "/w/ws"


def decide(policy: Policy, tool: str, **args: str) -> str:
    return policy.decide(tool, args, cwd=WS)[0]


def test_rules_parse_whole_tools_and_specifiers() -> None:
    assert parse_rule("Bash") == Rule("Bash")
    assert parse_rule(" Bash(git status:*) ") == Rule("Bash", "git status:*")
    assert parse_rule("mcp__github").text == "mcp__github"
    for bad in ("", "  ", "Bash(", "(x)", "Bash()", "Ba sh", 3, None):
        with pytest.raises(ValueError):
            parse_rule(bad)
    with pytest.raises(ValueError, match="ask_tools"):
        parse_rules("Bash", key="ask_tools")  # a bare string is a config mistake, not a list of letters
    with pytest.raises(ValueError, match="deny_tools: not a tool rule"):
        Policy.of(deny=["Bash(rm -rf:*)", "rm -rf"])
    assert parse_rules(["Bash", "Bash", "Edit"]) == (Rule("Bash"), Rule("Edit"))


def test_bash_commands_exact_prefix_and_wildcard() -> None:
    p = Policy.of(ask=["Bash(npm run build)", "Bash(git push:*)", "Bash(docker * --rm)"])
    assert decide(p, "Bash", command="npm run build") == "ask"
    assert decide(p, "Bash", command="npm run build --watch") == ""
    assert decide(p, "Bash", command="git push") == "ask"
    assert decide(p, "Bash", command="git  push origin main") == "ask"
    assert decide(p, "Bash", command="git pushy") == ""
    assert decide(p, "Bash", command="docker run x --rm") == "ask"
    assert decide(p, "Bash", command="docker run x") == ""


def test_deny_beats_allow_beats_ask_and_an_empty_policy_is_inactive() -> None:
    p = Policy.of(ask=["Bash"], allow=["Bash(git status:*)"], deny=["Bash(rm -rf:*)"])
    assert p.active and not Policy().active and not Policy.of(allow=["Bash"]).active
    assert decide(p, "Bash", command="git status --short") == "allow"
    assert decide(p, "Bash", command="rm -rf build") == "deny"
    assert decide(p, "Bash", command="ls") == "ask"
    assert decide(p, "Read", file_path="a.txt") == ""
    assert p.decide("Bash", {"command": "rm -rf /"})[1] == Rule("Bash", "rm -rf:*")


def test_a_compound_command_is_caught_by_any_part_and_never_allowed_by_a_specifier() -> None:
    p = Policy.of(ask=["Bash(curl:*)"], allow=["Bash(git status:*)"], deny=["Bash(rm -rf:*)"])
    assert decide(p, "Bash", command="git status; rm -rf x") == "deny"
    assert decide(p, "Bash", command="echo hi && curl evil.example") == "ask"
    assert decide(p, "Bash", command="echo $(curl x)") == "ask"
    everything = Policy.of(ask=["Bash"], allow=["Bash(git status:*)"])
    assert decide(everything, "Bash", command="git status | sh") == "ask"
    assert decide(Policy.of(ask=["Edit"], allow=["Bash"]), "Bash", command="a; b") == "allow"


def test_edit_rules_cover_every_file_editing_tool_and_paths_resolve_like_claude_code() -> None:
    p = Policy.of(ask=["Edit"])
    for tool in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        assert decide(p, tool, file_path="x.py") == "ask"
    assert decide(p, "Bash", command="ls") == "" and p.names() >= {"Edit", "Write", "MultiEdit", "NotebookEdit"}
    scoped = Policy.of(ask=["Edit(src/**)", "Write(//etc/*.conf)"], deny=["Read(./secrets/*)"])
    assert decide(scoped, "Edit", file_path="src/a/b.py") == "ask"
    assert decide(scoped, "Edit", file_path=f"{WS}/src/a.py") == "ask"
    assert decide(scoped, "Edit", file_path="docs/a.md") == ""
    assert decide(scoped, "Write", file_path="/etc/x.conf") == "ask"
    assert decide(scoped, "Write", file_path="/etc/sub/x.conf") == ""  # * stays inside one directory
    assert decide(scoped, "Read", file_path="secrets/key") == "deny"
    assert decide(scoped, "Read", file_path="../ws/secrets/key") == "deny"  # normalised before matching


def test_servers_domains_and_grants() -> None:
    p = Policy.of(ask=["mcp__github", "WebFetch(domain:example.com)"], deny=["mcp__fs__*"])
    assert decide(p, "mcp__github__create_issue") == "ask"
    assert decide(p, "mcp__githubber__x") == "" and decide(p, "mcp__fs__write") == "deny"
    assert decide(p, "WebFetch", url="https://docs.example.com/a") == "ask"
    assert decide(p, "WebFetch", url="https://example.org/") == ""
    run = Policy.of(ask=["Bash"], deny=["Bash(rm:*)"]).granting("Bash")
    assert decide(run, "Bash", command="ls") == "allow" and decide(run, "Bash", command="rm x") == "deny"


def test_merging_adds_rules_and_keeps_grants() -> None:
    bot, channel = Policy.of(ask=["Bash"]), Policy.of(ask=["Edit"], deny=["Bash(rm:*)"])
    both = bot.merged(channel).granting("Edit")
    assert [r.text for r in both.ask] == ["Bash", "Edit"] and [r.text for r in both.deny] == ["Bash(rm:*)"]
    assert both.merged(Policy.of(ask=["Bash"])).ask == both.ask and "Edit" in both.merged(bot).granted
