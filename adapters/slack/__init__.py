"""The Slack bridge: runs in channel threads, asks as buttons, `/stop`, on slack-bolt.

Parts (the same names in every platform package): `frontend.SlackFrontend` (the plug-in the bot
process runs: the Bolt app, its clients, the transport), `inbound` (payloads read into plain values),
`surface` (neutral messages -> Block Kit via `render`, reactions for receipts, errors mapped by
`errors`), `context` (`SlackContext`, what every listener shares), and the limits in
`adapters.platform.limits`. Beside them: the listeners (`commands`, `interactive`, `events`) that
turn payloads (`inbound`, `modals`) into hub intents through the shared context, agent `sessions`.
"""

from adapters.slack.frontend import DEFAULT_API_URL, SlackFrontend, SlackSettings, SlackStartError
from adapters.slack.surface import SlackSurface

__all__ = ["DEFAULT_API_URL", "SlackFrontend", "SlackSettings", "SlackStartError", "SlackSurface"]
