"""Every advertised public name resolves, and importing Event alone stays light."""

from __future__ import annotations

import subprocess
import sys

import flower_core


def test_every_public_name_resolves() -> None:
    assert set(flower_core.__all__) == set(flower_core._EXPORTS)
    for name in flower_core.__all__:
        assert getattr(flower_core, name) is not None, name
    assert callable(flower_core.normalize)


def test_importing_event_does_not_load_the_sdk() -> None:
    code = "import sys; from flower_core import Event; print('claude_agent_sdk' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
