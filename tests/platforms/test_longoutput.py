"""adapters/longoutput.py: when agent prose goes as a file with a preview (pure rules)."""

from __future__ import annotations

from adapters.longoutput import PREVIEW_LINES, as_file
from adapters.platform import DISCORD, MEMORY, WEB, OutMessage


def test_long_prose_becomes_a_preview_with_the_text_attached() -> None:
    text = "```python\n" + "\n".join(f"x = {i}" for i in range(2000)) + "\n```"
    msg = OutMessage("prose:7", "prose", text)
    long = as_file(msg, DISCORD, parts=6)
    assert long is not None and long.attachment is not None
    assert long.attachment.content == text.encode() and long.attachment.name == "prose-7.md"
    assert long.text.count("```") == 2  # the preview's open fence is closed
    assert long.text.splitlines()[:PREVIEW_LINES] == text.splitlines()[:PREVIEW_LINES]
    assert "2002 lines in all" in long.text and len(long.text) < DISCORD.text_max


def test_short_prose_other_kinds_and_platforms_without_files_stay_as_they_are() -> None:
    msg = OutMessage("prose:1", "prose", "x" * 7000)
    assert as_file(msg, DISCORD, parts=3) is None  # three messages are fine
    assert as_file(OutMessage("summary", "summary", "x" * 9000), DISCORD, parts=5) is None
    assert as_file(msg, WEB, parts=9) is None and as_file(msg, MEMORY, parts=9) is None
