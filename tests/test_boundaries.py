"""Layer boundaries, checked by walking the import graph of every module (ast, not grep)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UI_LIBS = {"slack_bolt", "slack_sdk", "discord", "adapters", "bots"}


def imported_roots(path: Path) -> set[str]:
    """Top-level package names a module imports (absolute imports only; relative stay inside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
                "import_module", "__import__"} and node.args and isinstance(node.args[0], ast.Constant):
            roots.add(str(node.args[0].value).split(".")[0])
    return roots


def reads_event_raw(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "raw"]


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_packages_exist() -> None:
    assert modules("flower_core"), "flower_core has no modules"


@pytest.mark.parametrize("path", modules("flower_core"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_no_ui(path: Path) -> None:
    bad = imported_roots(path) & UI_LIBS
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", modules("adapters") or [None], ids=str)
def test_adapters_do_not_touch_the_sdk(path: Path | None) -> None:
    if path is None:
        pytest.skip("no adapters yet")
    rel = path.relative_to(ROOT)
    assert "claude_agent_sdk" not in imported_roots(path), f"{rel} imports claude_agent_sdk"
    assert "bots" not in imported_roots(path), f"{rel} imports bots"
    assert not reads_event_raw(path), f"{rel} reads .raw at lines {reads_event_raw(path)}"


def test_the_checker_catches_violations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import slack_sdk\nfrom discord.ext import commands\nfrom claude_agent_sdk import query\n"
                   "x = ev.raw\nimport importlib\nimportlib.import_module('adapters.hub')\n")
    assert {"slack_sdk", "discord", "claude_agent_sdk", "adapters"} <= imported_roots(bad)
    assert reads_event_raw(bad) == [4]


def imported_modules(path: Path) -> set[str]:
    """Dotted module names a module imports (absolute imports only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


PLATFORM_PACKAGES = ("adapters.slack", "adapters.discord_bridge", "adapters.web", "adapters.terminal")
PLATFORM_LIBS = ("slack_bolt", "slack_sdk", "discord", "aiohttp")
# The layers under the platforms: none of them may know one (the hub drives surfaces through the contract).
CHAT_AGNOSTIC = ["adapters/hub", "adapters/transport", "adapters/view", "adapters/platform", "adapters/state"]


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


@pytest.mark.parametrize("path", [p for pkg in CHAT_AGNOSTIC for p in modules(pkg)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_chat_agnostic_layers_import_no_platform(path: Path) -> None:
    bad = {n for n in imported_modules(path) if _under(n, PLATFORM_PACKAGES + PLATFORM_LIBS)}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", modules("adapters/transport"), ids=lambda p: str(p.relative_to(ROOT)))
def test_transport_does_not_import_the_hub(path: Path) -> None:
    bad = {n for n in imported_modules(path) if _under(n, ("adapters.hub",))}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_module_checker_catches_violations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from adapters.slack.render import x\nimport adapters.hub.runs\nfrom . import sibling\n")
    names = imported_modules(bad)
    assert names == {"adapters.slack.render", "adapters.hub.runs"}
    assert _under("adapters.slack.render", PLATFORM_PACKAGES) and not _under("adapters.slackish", PLATFORM_PACKAGES)
