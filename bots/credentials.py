"""Whether this process can reach a real model: the one check every entry point makes before it
falls back to (or refuses without) the offline demo model."""

from __future__ import annotations

import os
from collections.abc import Mapping


def has_credentials(environ: Mapping[str, str] | None = None) -> bool:
    """A key, a gateway token, a gateway URL, a cloud provider switch or a CLI login file."""
    from flower_core.spec import has_credentials as core_has
    from flower_core.spec import resolve_env

    env = os.environ if environ is None else environ
    if any(env.get(k) for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")):
        return True
    return core_has(resolve_env(environ=env))
