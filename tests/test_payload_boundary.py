"""Event payloads are read by key in one module only (flower_core/payloads.py): everything else uses its
typed readers, so a renamed key is one change in one place. Checked by walking every module (ast)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
READERS_MODULE = "flower_core/payloads.py"
# By convention (bench/seam_figures.py counts the same): a name that holds an event payload.
PAYLOAD_NAMES = {"payload", "p"}


def _is_key(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _aliases(tree: ast.Module) -> set[str]:
    """Names bound to an expression that reads ``<x>.payload`` (``p = ev.payload if … else {}``)."""
    names = set(PAYLOAD_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            if any(isinstance(n, ast.Attribute) and n.attr == "payload" for n in ast.walk(node.value)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def payload_reads(tree: ast.Module) -> list[int]:
    """Lines that read an event payload by key: ``<x>.payload["k"]`` / ``.get("k")`` / ``"k" in <x>.payload``,
    the same on a name holding a payload, and on a stored event's ``["payload"]``. Writes are not reads."""
    aliases = _aliases(tree)

    def is_payload(node: ast.expr) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr == "payload")
                or (isinstance(node, ast.Name) and node.id in aliases)
                or (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                    and node.slice.value == "payload"))

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_key(node.slice) \
                and is_payload(node.value):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and _is_key(node.args[0]) and is_payload(node.func.value):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and _is_key(node.left) and any(
                isinstance(op, ast.In | ast.NotIn) for op in node.ops) and any(map(is_payload, node.comparators)):
            lines.append(node.lineno)
    return sorted(lines)


def modules() -> list[Path]:
    return [p for package in ("flower_core", "adapters", "bots") for p in sorted((ROOT / package).rglob("*.py"))]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_payloads_are_read_through_their_readers(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    if rel == READERS_MODULE:
        return
    found = payload_reads(ast.parse(path.read_text(encoding="utf-8"), filename=rel))
    assert not found, f"{rel} reads event payloads by key at lines {found}: use flower_core.payloads"


def test_the_readers_module_is_where_the_keys_are_read() -> None:
    assert payload_reads(ast.parse((ROOT / READERS_MODULE).read_text(encoding="utf-8")))


def test_the_payload_checker_catches_violations() -> None:
    tree = ast.parse(
        'a = ev.payload.get("subagent")\n'
        'b = ev.payload["id"]\n'
        'data = ev.payload if isinstance(ev.payload, dict) else {}\n'
        'c = data.get("state")\n'
        'd = "kind" in ev.payload\n'
        'e = record["payload"].get("subagent")\n'
        'f = p["phase"]\n'
        'if (q := ev.payload) and q.get("x"): pass\n'
        'payload["restored"] = True\n'  # a writer: not a read
        'g = AskPayload.of(ev).state\n'
        'h = options.get("state")\n'
        'i = ev.payload\n'  # the whole payload (to the wire, to a log): not a read by key
    )
    assert payload_reads(tree) == [1, 2, 4, 5, 6, 7, 8]
