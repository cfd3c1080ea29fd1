"""Run every benchmark, or the ones named: ``python -m bench [name ...]``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_"))
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv] or names
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        print(f"unknown benchmarks: {unknown}; have: {names}", file=sys.stderr)
        return 2
    for name in wanted:
        print(f"== {name} ==", flush=True)
        sys.argv = [name]  # each bench runs with its own defaults here
        importlib.import_module(f"bench.{name}").main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
