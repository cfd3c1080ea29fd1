"""Credentials kept in `.env` files, for the `flower` command (as the original flower keeps them).

`flower setup` writes the user's file; every `flower` command reads, before it checks credentials:

    1. the process environment            (always wins: a file never overrides it)
    2. the file named by FLOWER_ENV
    3. ./.env                             (the project you are in)
    4. $XDG_CONFIG_HOME/flower/.env       (default ~/.config/flower/.env: set up once, used everywhere)

A key found in an earlier place is kept; later ones fill in what is still missing. Only the keys the
CLI needs to reach a model are read (KEYS), so a project's `.env` cannot change anything else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        "CLAUDE_CODE_SUBAGENT_MODEL", "CLAUDE_CODE_EFFORT_LEVEL")
SECRET_KEYS = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"})


def user_env_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "flower" / ".env"


def candidates(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> list[Path]:
    """The files, first place first."""
    env = os.environ if environ is None else environ
    named = [Path(env["FLOWER_ENV"])] if env.get("FLOWER_ENV") else []
    return [*named, (cwd or Path.cwd()) / ".env", user_env_path(env)]


def parse(text: str) -> dict[str, str]:
    """`KEY=value` lines (an `export ` prefix and quotes around the value allowed); comments and others skipped."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out.setdefault(key.strip(), value)
    return out


def load(environ: MutableMapping[str, str] | None = None, cwd: Path | None = None) -> dict[str, str]:
    """Fill the missing KEYS of `environ` (default: os.environ) from the files; returns what was set."""
    env = os.environ if environ is None else environ
    loaded: dict[str, str] = {}
    for path in candidates(env, cwd):
        try:
            found = parse(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, UnicodeDecodeError):
            continue  # an unreadable file is as good as none: the credentials check says what is missing
        for key in KEYS:
            if found.get(key) and not env.get(key):
                env[key] = loaded[key] = found[key]
    return loaded


def save(values: Mapping[str, str], path: Path) -> Path:
    """Write `values` into the file at `path` (other lines kept, these keys replaced), readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kept: list[str] = []
    if path.is_file():
        kept = [line for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip().partition("=")[0].removeprefix("export ").strip() not in values]
    lines = [*kept, *(f"{k}={v}" for k, v in values.items() if v)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT
    return path


def shown(key: str, value: str) -> str:
    """A value as it may be printed: secrets as their first 4 characters and their length."""
    return f"{value[:4]}… ({len(value)} characters)" if key in SECRET_KEYS else value
