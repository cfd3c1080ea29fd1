"""The Slack bridge: runs in channel threads, asks as buttons, `/stop`, on slack-bolt.

Parts: `surface` (neutral messages -> Block Kit via `blocks`, reactions for receipts, errors mapped
by `errors`), the listeners (`commands`, `interactive`, `events`) that turn payloads (`payloads`,
`modals`) into hub intents through the shared `bridge`, agent `sessions`, and `app.SlackFrontend`,
the plug-in the bot process runs.
"""

from adapters.slack.app import DEFAULT_API_URL, SlackFrontend, SlackSettings, SlackStartError
from adapters.slack.surface import SlackSurface

__all__ = ["DEFAULT_API_URL", "SlackFrontend", "SlackSettings", "SlackStartError", "SlackSurface"]
