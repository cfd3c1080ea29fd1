"""What a person's plain message in a run's thread means: one rule for every platform.

=====================================  =====================================================
message                                 meaning
=====================================  =====================================================
``?where are we``                       a question for the read-only oracle
``q2: use tabs`` (``Q2 - use tabs``)    the answer to the open question whose key is q2
a reply to an ask card's message        the answer to that card's question
anything else                           inbox mail (never an interrupt)
=====================================  =====================================================

A ``qN:`` prefix that names no open question is kept as mail, not lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ParsedReply", "parse_reply"]

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
