"""`flower setup` in a pseudo-terminal, then a real `flower once` that finds its credentials in the file.

The key is typed at a prompt that does not echo it; the file is the user's own (mode 0600); a later
command with no ANTHROPIC_* variable at all reaches the model double through the key and the base URL
kept there. The reading order itself (environment first, then FLOWER_ENV, ./.env, the user's file) is
checked on bots/env_files.py directly."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect

from bots import env_files
from tests.conftest import scenario_of
from tests.e2e.test_flower_cli import ROOT, TIMEOUT, clean_env, finish

KEY = "sk-test-0123456789abcdef"


def setup(tmp_path: Path, *answers: str, extra: tuple[str, ...] = ()) -> tuple[int, str]:
    child = pexpect.spawn(sys.executable, ["-m", "bots.flower_cli", "setup", *extra], cwd=str(ROOT),
                          env=clean_env(tmp_path), encoding="utf-8", timeout=TIMEOUT, dimensions=(50, 200))
    try:
        for prompt, answer in zip(["\\(not shown\\): ", "Base URL", "Model"], answers, strict=False):
            child.expect(prompt)
            child.sendline(answer)
        code = finish(child)
        return code, str(child.before or "")
    finally:
        child.close(force=True)


async def test_setup_keeps_the_key_for_a_later_command_that_has_no_credentials_in_its_environment(
        tmp_path: Path, double_factory: Any) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Heard: {first_user_text}"}]}))
    code, out = setup(tmp_path, KEY, md.base_url, "")
    assert code == 0, out
    kept = tmp_path / ".config" / "flower" / ".env"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert env_files.parse(kept.read_text()) == {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": md.base_url}
    assert KEY not in out and "sk-t… (24 characters)" in out  # never printed whole

    env = clean_env(tmp_path)  # no ANTHROPIC_* at all: only the file can say where the model is
    env.update({k: v for k, v in md.env(tmp_path / ".claude").items() if not k.startswith("ANTHROPIC_")})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.flower_cli", "once", "where are my keys?", "-w", str(tmp_path / "ws"),
        "-r", str(tmp_path / "runs"), cwd=str(tmp_path), env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    assert "Heard: " in stdout.decode() and "where are my keys?" in stdout.decode()  # there and back
    assert md.model_requests(), "the run never reached the model double"


def test_setup_again_with_a_token_replaces_the_key_and_keeps_other_lines(tmp_path: Path) -> None:
    kept = tmp_path / ".config" / "flower" / ".env"
    kept.parent.mkdir(parents=True)
    kept.write_text("# mine\nANTHROPIC_API_KEY=old\nANTHROPIC_BASE_URL=http://127.0.0.1:9\nOTHER=1\n")
    code, out = setup(tmp_path, "gw-token-xyz", "", "", extra=("--token",))
    assert code == 0, out
    assert kept.read_text().splitlines() == ["# mine", "ANTHROPIC_API_KEY=old", "OTHER=1",
                                             "ANTHROPIC_AUTH_TOKEN=gw-token-xyz"]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_setup_with_nothing_typed_or_a_bad_url_saves_nothing(tmp_path: Path) -> None:
    assert setup(tmp_path, "")[0] == 2
    code, out = setup(tmp_path, KEY, "ftp://nowhere", "")
    assert code == 2 and "not an http(s) URL" in out
    assert not (tmp_path / ".config" / "flower" / ".env").exists()


def test_the_environment_wins_then_flower_env_then_the_project_then_the_user_file(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".config" / "flower").mkdir(parents=True)
    project.mkdir()
    (home / ".config" / "flower" / ".env").write_text(
        "ANTHROPIC_API_KEY=from-user\nANTHROPIC_BASE_URL=http://127.0.0.1:1\nANTHROPIC_MODEL=user-model\n")
    (project / ".env").write_text("export ANTHROPIC_BASE_URL='http://127.0.0.1:2'\nPATH=/nowhere\n")
    named = tmp_path / "named.env"
    named.write_text('ANTHROPIC_MODEL="named-model"\n')
    environ = {"HOME": str(home), "FLOWER_ENV": str(named), "ANTHROPIC_API_KEY": "from-env", "PATH": "/bin"}
    loaded = env_files.load(environ, cwd=project)
    assert loaded == {"ANTHROPIC_MODEL": "named-model", "ANTHROPIC_BASE_URL": "http://127.0.0.1:2"}
    assert environ["ANTHROPIC_API_KEY"] == "from-env" and environ["PATH"] == "/bin"  # never overridden, never read
