"""`flower setup`: ask for the credentials once and keep them in the user's file (bots/env_files.py).

    flower setup [--token] [--file PATH]

The key is read without echo; the base URL (for a gateway, or a local model) and the model are optional.
`--token` keeps it as ANTHROPIC_AUTH_TOKEN (a gateway's bearer token) instead of ANTHROPIC_API_KEY.
Nothing secret is printed: the summary shows a key's first 4 characters and its length.
"""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Callable
from pathlib import Path

from bots import env_files

EXIT_USAGE = 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    setup = sub.add_parser("setup", help="keep your API key (and endpoint) in ~/.config/flower/.env")
    setup.add_argument("--token", action="store_true",
                       help="a gateway's bearer token (ANTHROPIC_AUTH_TOKEN) rather than an API key")
    setup.add_argument("--file", default=None, metavar="PATH",
                       help="where to keep them (default: $XDG_CONFIG_HOME/flower/.env)")


def run_setup(args: argparse.Namespace, *, ask: Callable[[str], str] = input,
              ask_secret: Callable[[str], str] = getpass.getpass, say: Callable[[str], None] = print) -> int:
    path = Path(args.file).expanduser() if args.file else env_files.user_env_path()
    key_name = "ANTHROPIC_AUTH_TOKEN" if args.token else "ANTHROPIC_API_KEY"
    try:
        secret = ask_secret(f"{'Gateway token' if args.token else 'Anthropic API key'} (not shown): ").strip()
        if not secret:
            say("flower setup: nothing entered; nothing saved.")
            return EXIT_USAGE
        base = ask("Base URL (Enter for Anthropic's own API): ").strip()
        model = ask("Model (Enter for the CLI's default): ").strip()
    except (EOFError, KeyboardInterrupt):
        say("\nflower setup: cancelled; nothing saved.")
        return EXIT_USAGE
    if base and not base.startswith(("http://", "https://")):
        say(f"flower setup: {base!r} is not an http(s) URL; nothing saved.")
        return EXIT_USAGE
    values = {key_name: secret, "ANTHROPIC_BASE_URL": base, "ANTHROPIC_MODEL": model}
    try:
        saved = env_files.save(values, path)
    except OSError as exc:
        say(f"flower setup: could not write {path}: {exc}")
        return EXIT_USAGE
    say(f"Saved to {saved} (readable by you only):")
    for key, value in values.items():
        if value:
            say(f"  {key} = {env_files.shown(key, value)}")
    say("Every `flower` command reads it; a variable set in your environment still wins.")
    return 0
