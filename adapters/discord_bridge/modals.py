"""The two forms a button may open: words for a button that needs them, and the Stop form.

Both are plain `ui.Modal`s built on `ui.Label`; the Stop form's "end the run" choice is a real
checkbox (`ui.Checkbox`, discord.py ≥ 2.7). Submissions go back to the bridge's `Actions` with the
modal's own interaction (its id is the delivery id the hub deduplicates on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord import ui

from adapters.platform.limits import DISCORD

__all__ = ["PLAN_PROMPT", "PLAN_WORDS", "StopModal", "WordsModal"]

Submit = Callable[[discord.Interaction[Any], str], Awaitable[None]]
StopSubmit = Callable[[discord.Interaction[Any], str, bool], Awaitable[None]]
Fresh = Callable[[discord.Interaction[Any]], bool]

TITLE_MAX, INPUT_MAX, DESCRIPTION_MAX = DISCORD.modal_title_max, DISCORD.text_input_max, DISCORD.label_description_max

# verb -> (modal title, field label); the hub's prompt becomes the field's description.
WORDS = {"txt": ("Answer {key}", "Your answer"), "int": ("Interrupt run {run}", "Message for the agent"),
         "orc": ("Ask the oracle about run {run}", "Your question")}
# A plan card's "Keep planning…" is a `txt` button too; its form says what the words are for.
PLAN_WORDS = ("Keep planning", "What should change in the plan?")
PLAN_PROMPT = "The agent reads your words and presents a new plan."


class WordsModal(ui.Modal):
    def __init__(self, *, verb: str, run_id: str, key: str, prompt: str, on_submit: Submit, fresh: Fresh,
                 words: tuple[str, str] | None = None) -> None:
        title, label = words or WORDS.get(verb, ("Your words", "Text"))
        super().__init__(title=title.format(key=key, run=run_id)[:TITLE_MAX], timeout=900)
        self.text: ui.TextInput[WordsModal] = ui.TextInput(style=discord.TextStyle.paragraph, max_length=INPUT_MAX,
                                                            required=verb != "int")
        self.add_item(ui.Label(text=label, description=prompt[:DESCRIPTION_MAX] or None, component=self.text))
        self._submit, self._fresh = on_submit, fresh

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        return self._fresh(interaction)

    async def on_submit(self, interaction: discord.Interaction[Any], /) -> None:
        await self._submit(interaction, self.text.value or "")


class StopModal(ui.Modal):
    def __init__(self, *, run_id: str, on_submit: StopSubmit, fresh: Fresh) -> None:
        super().__init__(title=f"Stop run {run_id}"[:TITLE_MAX], timeout=900)
        self.message: ui.TextInput[StopModal] = ui.TextInput(style=discord.TextStyle.paragraph, max_length=INPUT_MAX,
                                                              required=False)
        self.end: ui.Checkbox[StopModal] = ui.Checkbox(default=False)
        self.add_item(ui.Label(text="Message for the agent", component=self.message,
                               description="It stops at the next message boundary and resumes with these words."))
        self.add_item(ui.Label(text="End the run for good", component=self.end,
                               description="Unticked: an interrupt (a subagent in flight loses its half-done work)."))
        self._submit, self._fresh = on_submit, fresh

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        return self._fresh(interaction)

    async def on_submit(self, interaction: discord.Interaction[Any], /) -> None:
        await self._submit(interaction, self.message.value or "", bool(self.end.value))
