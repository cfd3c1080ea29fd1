"""The shape of the hub/platform seam, counted from the source (ast): ``python -m bench.seam_figures``.

Prints one line per figure (what issue 33 measures), e.g.:

    platform facade names           3
    hub members (public methods)    12
    hub modules importing Hub       0
    import circles in adapters/     0   (TYPE_CHECKING imports count)
    files reading payloads by key   1   flower_core/payloads.py
    self: Any                       0
    bare Any parameters             150
    functions with > 10 parameters  0   (outside the original's public signatures)
    functions with >= 8 parameters  9

Not a speed benchmark (it is not named bench_*, so ``python -m bench`` leaves it out).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("adapters", "flower_core", "bots")
# The original flower's public signatures keep their parameters (starter_flow, Runtime, AgentSpec).
# (tests/core/test_flower_compat.py and test_public_api.py hold them to the original's.)
ORIGINAL = {("flower_core/starter.py", "starter_flow"), ("flower_core/runtime/runtime.py", "__init__"),
            ("flower_core/spec.py", "__init__"), ("flower_core/spec.py", "build_options"),
            ("flower_core/team.py", "coordinator")}
PAYLOAD_OWNERS = {"payload", "p"}


def modules(*packages: str) -> Iterator[Path]:
    for package in packages:
        yield from sorted((ROOT / package).rglob("*.py"))


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, tree: ast.Module) -> set[str]:
    """Every module this one imports (absolute or relative), TYPE_CHECKING blocks and function bodies included."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def import_graph(package: str) -> dict[str, set[str]]:
    """Module → the modules of `package` it imports (a package's __init__ counts as the package)."""
    paths = list(modules(package))
    names = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        found = imports_of(path, parsed(path))
        graph[module_name(path)] = {n for n in found if n in names and n != module_name(path)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def payload_readers(tree: ast.Module) -> int:
    """Reads of an event payload by key: `<x>.payload.get("k")`, `<x>.payload["k"]`, `p.get("k")`, `p["k"]`."""
    def is_payload(node: ast.expr) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "payload") or (
            isinstance(node, ast.Name) and node.id in PAYLOAD_OWNERS)

    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and is_payload(node.func.value) and node.args and isinstance(node.args[0], ast.Constant):
            count += 1
        elif isinstance(node, ast.Subscript) and is_payload(node.value) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            count += 1
    return count


def functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    every = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    return [p for p in every if p.arg not in {"self", "cls"}]


def is_any(annotation: ast.expr | None) -> bool:
    return (isinstance(annotation, ast.Name) and annotation.id == "Any") or (
        isinstance(annotation, ast.Constant) and annotation.value == "Any")


def facade_size() -> int:
    sys.path.insert(0, str(ROOT))
    import adapters.hub as hub_package

    facade = getattr(hub_package, "PLATFORM_FACADE", None)
    return len(facade) if facade is not None else -1


def hub_public_methods() -> int:
    from adapters.hub import Hub

    return sum(1 for name in dir(Hub) if not name.startswith("_") and callable(getattr(Hub, name, None)))


def main() -> None:
    rows: list[tuple[str, object, str]] = [
        ("platform facade names", facade_size(), ""),
        ("hub members (public methods)", hub_public_methods(), ""),
    ]
    hub_importers = []
    for path in modules("adapters/hub"):
        found = imports_of(path, parsed(path))
        if path.name != "__init__.py" and ("adapters.hub.hub.Hub" in found or "adapters.hub.Hub" in found):
            hub_importers.append(str(path.relative_to(ROOT)))
    rows.append(("hub modules importing Hub", len(hub_importers), " ".join(hub_importers)))
    found_circles = circles(import_graph("adapters"))
    rows.append(("import circles in adapters/", len(found_circles),
                 "; ".join(f"{len(c)} modules: {', '.join(c[:4])}{'…' if len(c) > 4 else ''}" for c in found_circles)))
    readers = {}
    self_any = bare_any = 0
    over_ten: list[str] = []
    eight_plus = 0
    for path in modules(*PACKAGES):
        tree = parsed(path)
        rel = str(path.relative_to(ROOT))
        if n := payload_readers(tree):
            readers[rel] = n
        for fn in functions(tree):
            a = fn.args
            every = [*a.posonlyargs, *a.args, *a.kwonlyargs]
            self_any += sum(1 for p in every if p.arg == "self" and is_any(p.annotation))
            bare_any += sum(1 for p in parameters(fn) if is_any(p.annotation))
            n_params = len(parameters(fn))
            eight_plus += n_params >= 8
            if n_params > 10 and (rel, fn.name) not in ORIGINAL:
                over_ten.append(f"{rel}:{fn.lineno} {fn.name}({n_params})")
    rows.append(("payload reads by key", sum(readers.values()), ""))
    rows.append(("files reading payloads by key", len(readers),
                 " ".join(f"{k}({v})" for k, v in sorted(readers.items()))))
    rows.append(("self: Any", self_any, ""))
    rows.append(("bare Any parameters", bare_any, ""))
    rows.append(("functions with > 10 parameters", len(over_ten), " ".join(over_ten)))
    rows.append(("functions with >= 8 parameters", eight_plus, ""))
    for label, value, detail in rows:
        print(f"{label:<32}{value!s:<6}{detail}")


if __name__ == "__main__":
    main()
