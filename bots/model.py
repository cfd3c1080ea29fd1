"""Which model the bot's runs talk to: the real one when credentials exist, else the offline demo.

The demo is the project's model double (a local fake of the Messages API) playing the `demo`
scenario on 127.0.0.1 inside this process: every run of the bot then goes through the real SDK and
CLI at no cost and with no key. `--demo` forces it even when credentials exist.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bots.credentials import has_credentials

if TYPE_CHECKING:
    from bots.config import BotConfig
    from flower_core.devmodel import ModelDouble

log = logging.getLogger("flower.bot")

__all__ = ["Model"]


class Model:
    def __init__(self, cfg: BotConfig, *, remote: bool = False) -> None:
        """`remote`: runs go to workers (Redis), which pick their own model; this process needs none."""
        self.cfg, self.remote = cfg, remote
        self.demo = not remote and (cfg.demo or not has_credentials(cfg.env))
        self.env: dict[str, str] | None = None  # None: the CLI inherits this process's environment
        self._double: ModelDouble | None = None

    @property
    def label(self) -> str:
        if self.remote:
            return "chosen by each flower-worker (runs go over Redis)"
        if self.demo:
            return "offline demo (model double, no API key; nothing leaves 127.0.0.1)"
        return "the real model (credentials from the environment)"

    async def start(self) -> None:
        if not self.demo:
            return
        from bots.config import ConfigError
        from flower_core.devmodel import ModelDouble, ScenarioError

        try:
            double = ModelDouble(self.cfg.demo_scenario)
        except ScenarioError as exc:
            raise ConfigError(f"demo scenario: {exc}") from None
        self._double = await double.start()
        config_dir = self.cfg.root / ".demo-cli-config"  # the CLI's own settings, kept out of the user's home
        config_dir.mkdir(parents=True, exist_ok=True)
        self.env = self._double.env(config_dir)
        why = "--demo" if self.cfg.demo else "no model credentials (ANTHROPIC_API_KEY, ...)"
        log.warning("%s: runs use the OFFLINE DEMO model, a scripted double on %s", why, self._double.base_url)

    async def stop(self) -> None:
        if self._double is not None:
            await self._double.stop()
            self._double = None
