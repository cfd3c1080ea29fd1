"""The hub/platform seam, checked by walking every platform module (ast): a platform package uses only
the hub's facade (adapters.hub.PLATFORM_FACADE), imports only the hub package's public names, and never
names another platform."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from adapters.hub import PLATFORM_FACADE, Hub

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = {"slack": "slack", "discord_bridge": "discord", "web": "web", "terminal": "terminal"}
# Plain data a platform may import beside the hub package itself (records the facade hands out).
ALLOWED_FROM = {"adapters.hub", "adapters.state", "adapters.state.base"}
INTERNAL = ("adapters.hub.", "adapters.transport", "adapters.access", "adapters.people")


def platform_modules() -> list[Path]:
    return sorted(p for name in PLATFORMS for p in (ROOT / "adapters" / name).rglob("*.py"))


def hub_members_used(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, member) of every `<x>.hub.<member>` / `hub.<member>` / `self._hub.<member>` access."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        is_hub = (isinstance(owner, ast.Name) and owner.id in {"hub", "_hub"}) or (
            isinstance(owner, ast.Attribute) and owner.attr in {"hub", "_hub"})
        if is_hub:
            out.append((node.lineno, node.attr))
    return out


def forbidden_imports(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mod = node.module
            if mod.startswith(INTERNAL) and mod not in ALLOWED_FROM:
                out.append((node.lineno, mod))
            if mod == "adapters.state":
                out += [(node.lineno, f"adapters.state.{a.name}") for a in node.names if a.name != "RunRecord"]
    return out


def other_platforms(tree: ast.AST, own: str) -> list[tuple[int, str]]:
    """Imports of another platform package, and string constants that are another platform's name."""
    names = {v for k, v in PLATFORMS.items() if k != own} | {"memory"}
    packages = {f"adapters.{k}" for k in PLATFORMS if k != own}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[:2] and \
                ".".join(node.module.split(".")[:2]) in packages:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            out.append((node.lineno, node.value))
    return out


def test_the_facade_names_real_hub_members() -> None:
    missing = {name for name in PLATFORM_FACADE if not hasattr(Hub, name)}
    assert not missing, f"PLATFORM_FACADE names what Hub lacks: {sorted(missing)}"


@pytest.mark.parametrize("path", platform_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_platforms_use_only_the_hub_facade(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = path.relative_to(ROOT)
    own = rel.parts[1]
    beyond = [(line, m) for line, m in hub_members_used(tree) if m not in PLATFORM_FACADE]
    assert not beyond, f"{rel} touches hub members outside its facade: {beyond}"
    assert not forbidden_imports(tree), f"{rel} imports hub internals: {forbidden_imports(tree)}"
    assert not other_platforms(tree, own), f"{rel} names another platform: {other_platforms(tree, own)}"


def test_the_facade_checker_catches_violations() -> None:
    tree = ast.parse("x = self.hub.store.get_run('r')\ny = bridge.hub.live\nz = hub.run('r')\n"
                     "from adapters.hub.cards import CardRules\nfrom adapters.state import StateStore\n"
                     "from adapters.slack.text import x\nname = 'discord'\n")
    assert sorted(hub_members_used(tree)) == [(1, "store"), (2, "live"), (3, "run")]
    assert sorted(forbidden_imports(tree)) == [(4, "adapters.hub.cards"), (5, "adapters.state.StateStore")]
    assert sorted(other_platforms(tree, "web")) == [(6, "adapters.slack.text"), (7, "discord")]
