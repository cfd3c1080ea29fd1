"""No import circles inside a package, TYPE_CHECKING imports and function bodies included (ast, not grep).

The graph and the circle finder are bench/seam_figures.py's (`import_graph`, `circles`), so the test and
the figure issue 33 reports count the same thing. A package joins `CLEAN` once its circles are gone;
`KNOWN` holds the circles a package still has, exactly, so a new one fails and a fixed one must be struck off.
"""

from __future__ import annotations

import ast

import pytest

from bench.seam_figures import ROOT, circles, import_graph, imports_of

# Packages (as paths under the repository) that must have no circle at all: the whole chat side.
CLEAN = ["adapters"]

# Packages with circles left, and exactly which (each sorted, as `circles` gives them). flower_core's
# graph covers its subpackages (human, runtime, devmodel…).
KNOWN: dict[str, list[list[str]]] = {
    "flower_core": [
        # events.normalize is a lazy re-export of sdk_events.normalize (tests and the original import it there).
        ["flower_core.events", "flower_core.sdk_events"],
    ],
}


@pytest.mark.parametrize("package", CLEAN)
def test_no_import_circle(package: str) -> None:
    found = circles(import_graph(package))
    assert found == [], f"import circles in {package}: {found}"


@pytest.mark.parametrize("package", sorted(KNOWN))
def test_only_the_known_circles_are_left(package: str) -> None:
    assert sorted(circles(import_graph(package))) == sorted(KNOWN[package])


def test_type_checking_imports_and_imports_through_the_package_count() -> None:
    source = ("from typing import TYPE_CHECKING\nfrom . import fmt\nimport adapters.view.status as status\n"
              "if TYPE_CHECKING:\n    from adapters.view.asks import AskCard\n"
              "def later() -> None:\n    from .summary import RunOutcome\n")
    found = imports_of(ROOT / "adapters" / "view" / "example.py", ast.parse(source))
    assert {"adapters.view", "adapters.view.fmt", "adapters.view.status", "adapters.view.asks",
            "adapters.view.summary"} <= found


def test_the_finder_gives_each_circle_once_sorted() -> None:
    graph = {"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p"}, "p.c": {"p.a"}, "q": set(), "q.x": {"q.y"}, "q.y": {"q.x"}}
    assert sorted(circles(graph)) == [["p", "p.a", "p.b"], ["q.x", "q.y"]]


def test_no_hub_module_imports_the_hub() -> None:
    """Collaborators get services, never the Hub: only hub.py (the top) and the package's __init__ name it."""
    hub_dir = ROOT / "adapters" / "hub"
    the_hub = {"adapters.hub.hub.Hub", "adapters.hub.Hub", "adapters.hub.hub"}
    naming = [str(p.relative_to(ROOT)) for p in sorted(hub_dir.rglob("*.py"))
              if p.name not in ("__init__.py", "hub.py") and the_hub & imports_of(p, ast.parse(p.read_text()))]
    assert naming == []
