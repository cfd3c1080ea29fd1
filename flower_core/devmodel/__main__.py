"""Serve a scenario: ``python -m flower_core.devmodel --scenario demo --port 8765``."""

from __future__ import annotations

import argparse
import asyncio
import sys

from .scenario import ScenarioError, load_scenario, shipped_scenarios
from .server import ModelDouble


async def _serve(scenario: str, host: str, port: int) -> None:
    async with ModelDouble(load_scenario(scenario), host=host, port=port) as md:
        print(f"model double playing {md.scenario.name!r} at {md.base_url}", flush=True)
        print(f"  export ANTHROPIC_BASE_URL={md.base_url} ANTHROPIC_API_KEY=offline", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flower-devmodel", description="Offline Anthropic Messages API double.")
    shipped = ", ".join(shipped_scenarios())
    parser.add_argument("--scenario", default="demo", help=f"file path or shipped name ({shipped})")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--check", action="store_true", help="only parse the scenario and exit")
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        turns = sum(len(c.turns) for c in scenario.conversations)
        print(f"{scenario.name}: {len(scenario.conversations)} conversations, {turns} turns")
        return 0
    try:
        asyncio.run(_serve(args.scenario, args.host, args.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
