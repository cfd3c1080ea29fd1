"""Long agent prose as a file: past `limits.file_after_parts` messages, the outbox posts one message with
the first lines as a preview and the whole text attached (`<key>.md`), instead of a wall of split messages.

    prose "prose:7", 9,000 chars on Discord (2,000 a message: 5 parts > 3)
        └─▶ one message: the first PREVIEW_LINES lines (a code fence left open is closed), a line saying
            the rest is in the attached prose-7.md, and a FileRef holding the full text

Platforms that set `file_after_parts = 0` (the web page, the memory surface) keep the split messages.
"""

from __future__ import annotations

import dataclasses
import re

from adapters.platform.limits import PlatformLimits
from adapters.platform.messages import FileRef, OutMessage

__all__ = ["PREVIEW_LINES", "as_file"]

PREVIEW_LINES = 12
FENCE = "```"


def as_file(msg: OutMessage, limits: PlatformLimits, parts: int) -> OutMessage | None:
    """The message as a preview with the full text attached, when it is prose that would take more than
    `limits.file_after_parts` messages; None to send it as it is."""
    if msg.kind != "prose" or msg.attachment is not None or not limits.file_after_parts:
        return None
    if parts <= limits.file_after_parts:
        return None
    body = msg.text.encode("utf-8")
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", msg.key).strip("-") + ".md"
    lines = msg.text.splitlines()
    preview = "\n".join(lines[:PREVIEW_LINES])[: limits.text_max // 2]
    if preview.count(FENCE) % 2:  # cut inside a code block: close it so the rest renders as text
        preview += "\n" + FENCE
    rest = f"… {len(lines)} lines in all: the full text is in the attached {name}."
    return dataclasses.replace(msg, text=f"{preview}\n{rest}",
                               attachment=FileRef(path="", name=name, size=len(body), content=body))
