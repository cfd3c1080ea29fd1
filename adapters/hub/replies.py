"""What a person's plain message in a run's thread means: one rule for every platform.

=====================================  =====================================================
message                                 meaning
=====================================  =====================================================
``?where are we``                       a question for the read-only oracle
``q2: use tabs`` (``Q2 - use tabs``)    the answer to the open question whose key is q2
a reply to an ask card's message        the answer to that card's question
anything else                           inbox mail (never an interrupt)
=====================================  =====================================================

A ``qN:`` prefix that names no open question is kept as mail, not lost. `THREAD_HELP` says this rule
to people, in the words every platform's help uses (a platform adds only its own commands).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["THREAD_HELP", "ParsedReply", "parse_reply"]

# The rule above, told to people: one line each, the same on every platform (markdown-neutral).
THREAD_HELP = (
    "Questions come as cards with buttons; write `q2: <answer>` in the run's thread to answer in words.",
    "Any other message in the thread goes to the agent's inbox (📨 queued → 📬 delivered); start it with `?` to "
    "ask the read-only oracle instead.",
    "A message in the thread of a run that has ended continues it (its next round, the same conversation).",
)

_KEYED = re.compile(r"^\s*(?P<key>[qQ][0-9]{1,4})\s*[:：\-–—]\s*(?P<text>.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class ParsedReply:
    kind: str  # "oracle" | "answer" | "mail"
    text: str
    key: str = ""  # the ask key ("q2") when kind == "answer" by prefix


def parse_reply(text: str) -> ParsedReply:
    stripped = text.strip()
    if stripped.startswith("?") and len(stripped) > 1:
        return ParsedReply("oracle", stripped[1:].strip())
    m = _KEYED.match(stripped)
    if m and m.group("text").strip():
        return ParsedReply("answer", m.group("text").strip(), m.group("key").lower())
    return ParsedReply("mail", stripped)
