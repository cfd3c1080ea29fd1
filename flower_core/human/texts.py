"""Fixed model-facing texts of the human channel, and the size limits applied to human input.

The texts themselves live in the language catalogues (``flower_core/lang/``); the names here are the
seed's (Chinese) texts, flower_core's default, for code and tests that name them.
"""

from __future__ import annotations

from flower_core.lang import catalogue

# The seed's texts (flower_core.lang.zh), kept under their old names: what a channel says when no
# language is given. A channel built with ``language=`` reads its own catalogue instead.
_SEED = catalogue()
TIMEOUT = _SEED["ask.timeout"]  # settled at once (timeout_s <= 0) or after the wait ran out: nobody is there
DECLINED = _SEED["ask.declined"]  # the human saw the question and chose not to answer it
OVER_BUDGET = _SEED["ask.over_budget"]  # max_asks is used up (or 0): refused without blocking
DECLINE_REASON = _SEED["ask.decline_reason"]
EMPTY_ANSWER = _SEED["ask.empty_answer"]
INBOX_EMPTY = _SEED["inbox.empty"]
INBOX_HEADER = _SEED["inbox.header"]
INBOX_AMENDED = _SEED["inbox.amended"]
INVALID_EMPTY = _SEED["ask.invalid_empty"]
INVALID_OPTIONS = _SEED["ask.invalid_options"]
AMEND_LABEL = _SEED["amend.label"]  # heading label for mid-run additions appended to the brief (amend_path)

# Caps on human- and model-supplied text. A question or answer longer than this is almost certainly
# a paste accident; keeping it whole would burn the model's context for nothing.
MAX_TEXT_CHARS = 20_000
MAX_OPTIONS = 20
MAX_OPTION_CHARS = 500
TRUNCATED = _SEED["text.truncated"]


def cap(text: str, limit: int = MAX_TEXT_CHARS, marker: str = TRUNCATED) -> str:
    """Cut text to `limit` characters plus a marker (with ``{n}``) that says how much was dropped."""
    if len(text) <= limit:
        return text
    return text[:limit] + marker.format(n=len(text) - limit)
