"""Every platform's numbers in one place: what its API accepts and how fast it may be called.

Two layers:

- `PlatformLimits`: what the platform-neutral side reads (the outbox splits text at `text_max` and
  paces calls with two token buckets; `run_surface_conformance` posts text, titles, fields, buttons
  and interactive ids at these limits and expects them all shown).
- One subclass per platform with the shapes only its renderer knows (Block Kit blocks, embeds,
  modals), read by that platform's `render`/`modals`/listener modules and nowhere else.

Each number is the platform's documented limit unless its comment says it is a choice of ours.
The interactive-id codec (`adapters.ids`) must fit on every platform, so its maximum is the
smallest `id_max` here (`ID_MAX`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DISCORD", "ID_MAX", "MEMORY", "SLACK", "WEB", "DiscordLimits", "PlatformLimits", "SlackLimits",
           "WebLimits"]


@dataclass(frozen=True)
class PlatformLimits:
    """What a platform tolerates. The outbox splits text at `text_max` and paces calls with two
    token buckets: posts (`post_per_s`, `post_burst`) and edits (`update_per_min`, `update_burst`)."""

    text_max: int
    post_per_s: float
    post_burst: int
    update_per_min: float
    update_burst: int
    buttons_max: int = 25
    button_label_max: int = 75
    title_max: int = 150
    fields_max: int = 10
    id_max: int = 255  # an interactive id: a button's action_id / custom_id
    # Agent prose longer than this many messages goes as one file with a preview (adapters/longoutput.py);
    # 0: never (the platform does not upload files, or shows long text well).
    file_after_parts: int = 0
    # Ours: a message being streamed (Surface.stream) grows at most once per this many seconds; the words
    # that arrive meanwhile are sent together. Its calls also spend the edit bucket (the start: a post).
    stream_every_s: float = 1.0
    # Starting a streamed message, and growing or closing one, when the platform limits those apart from
    # posts and edits (Slack: chat.startStream is Tier 2, about 20 a minute; chat.appendStream Tier 4, 100+);
    # 0: a start spends the post bucket, a growth the edit bucket.
    stream_starts_per_min: float = 0.0
    stream_grows_per_min: float = 0.0


@dataclass(frozen=True)
class SlackLimits(PlatformLimits):
    """Block Kit and Web API limits (api.slack.com/reference/block-kit)."""

    message_text_max: int = 40_000  # chat.postMessage `text` is cut past this
    fallback_max: int = 3_000  # ours: the notification `text` sent beside the blocks
    blocks_max: int = 50  # per message
    markdown_max: int = 12_000  # all `markdown` blocks of one message together
    section_field_max: int = 2_000  # one section field's text
    context_max: int = 3_000  # one context element's text
    actions_max: int = 25  # elements per actions block
    button_value_max: int = 2_000
    modal_title_max: int = 24
    input_label_max: int = 2_000
    input_max: int = 3_000  # plain_text_input max_length
    session_title_max: int = 100  # ours: the agent session title we send (agents.sessions.setStatus)
    stop_list_max: int = 10  # ours: runs offered as Stop buttons in one ephemeral list


@dataclass(frozen=True)
class DiscordLimits(PlatformLimits):
    """Message, embed, component and modal limits (discord.com/developers/docs)."""

    description_max: int = 4_096  # embed description
    field_name_max: int = 256
    field_value_max: int = 1_024
    footer_max: int = 2_048
    embed_total_max: int = 6_000  # title + description + fields + footer of all embeds of a message
    rows_max: int = 5  # action rows per message
    row_buttons_max: int = 5  # buttons per action row
    modal_title_max: int = 45
    modal_label_max: int = 45  # a label component's text
    label_description_max: int = 100  # a label component's description (also a text input's placeholder)
    text_input_max: int = 4_000  # a modal text input's max_length
    thread_name_max: int = 100
    thread_title_max: int = 90  # ours: the thread name we give a run (its task, cut below thread_name_max)
    choices_max: int = 25  # autocomplete choices / select options
    command_text_max: int = 4_000  # ours: a slash command's text option (Discord allows 6,000)


@dataclass(frozen=True)
class WebLimits(PlatformLimits):
    """The web page: we are the platform, so these are our choices."""

    input_max: int = 20_000  # text a person may send through the API in one request
    event_text_max: int = 20_000  # ours: an event's text as the page and the API show it (prose can be long)
    event_log_max: int = 2_000  # the seed's maxlen: a run's newest events kept for pages and polls


# Slack: message text is cut at 40,000 chars and a message's markdown blocks hold 12,000 together;
# chunks of 3,000 (what a section or a context element holds) keep every part renderable.
# chat.postMessage ~1/s per channel with short bursts; chat.update is Tier 3 (50+/min). Button text
# max 75; an actions block holds 25 elements; header text 150; a section holds 10 fields; action_id 255.
SLACK = SlackLimits(text_max=3000, post_per_s=1.0, post_burst=3, update_per_min=50.0, update_burst=5,
                    buttons_max=25, button_label_max=75, title_max=150, fields_max=10, id_max=255, file_after_parts=3,
                    stream_starts_per_min=20.0, stream_grows_per_min=100.0)

# Discord: content 2,000; the per-channel message route allows about 5 requests per 5 s, edits share
# a similar bucket. 5 action rows x 5 buttons; label max 80; embed title max 256; embed fields 25;
# custom_id 100.
DISCORD = DiscordLimits(text_max=2000, post_per_s=1.0, post_burst=5, update_per_min=60.0, update_burst=5,
                        buttons_max=25, button_label_max=80, title_max=256, fields_max=25, id_max=100,
                        file_after_parts=3)

# We are the platform: no rate limit worth the name, and long texts are fine in a browser. The
# outbox still paces bursts (coalescing status edits), which keeps the page calm.
WEB = WebLimits(text_max=20_000, post_per_s=50.0, post_burst=100, update_per_min=6000.0, update_burst=100,
                buttons_max=25, button_label_max=80, title_max=300, fields_max=25, stream_every_s=0.1)

# In-memory double for tests and the terminal: generous, never the bottleneck.
MEMORY = PlatformLimits(text_max=4000, post_per_s=1000.0, post_burst=1000, update_per_min=60000.0,
                        update_burst=1000, stream_every_s=0.0)

# One id codec serves every platform, so an id must fit the strictest (Discord's custom_id).
ID_MAX = min(limits.id_max for limits in (SLACK, DISCORD, WEB))
