"""`flower run TARGET`: find the workflow a user wrote, as the original flower's `run` does.

TARGET is ``module:attribute`` (``mypkg.flows:build``, imported by module name) or ``file.py:attribute``
(the file's folder goes first on sys.path and the file is imported by its name). An attribute that is
callable is called once with no arguments and what it returns is the workflow; otherwise it is used
as it is. Anything that cannot be found is a TargetError saying what was looked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any


class TargetError(Exception):
    """TARGET names nothing runnable; the message says why."""


def load_target(target: str, *, cwd: Path | None = None) -> Any:
    """The workflow TARGET names (see the module docstring)."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise TargetError(f"flower run: {target!r} is not MODULE:ATTRIBUTE (e.g. flows.py:main or mypkg.flows:build)")
    module = _import(module_part, cwd or Path.cwd())
    try:
        found = getattr(module, attr)
    except AttributeError:
        raise TargetError(f"flower run: {module_part} has no attribute {attr!r}") from None
    workflow = found() if callable(found) and not hasattr(found, "steps") else found
    if not hasattr(workflow, "run") or not hasattr(workflow, "steps"):
        raise TargetError(f"flower run: {target} gave a {type(workflow).__name__}, not a Workflow")
    return workflow


def _import(name: str, cwd: Path) -> Any:
    if name.endswith(".py"):
        path = (cwd / name).resolve()
        if not path.is_file():
            raise TargetError(f"flower run: no file {path}")
        sys.path.insert(0, str(path.parent))  # the file's own imports of its neighbours work
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise TargetError(f"flower run: cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    if str(cwd) not in sys.path:
        sys.path.insert(0, str(cwd))
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise TargetError(f"flower run: no module {name!r} ({exc})") from None
