"""One versioned codec for the ids carried by interactive components (buttons, modals).

Format: ``fl1:<verb>:<run_id>:<card_id>[:<option>]`` — at most 100 characters (Discord's custom_id
limit; Slack's action_id allows 255). Card ids restart per run, so the run id is always part of it;
options travel by index, never by label text, so a relabelled button still answers the same way.

Verbs (the whole set; anything else is rejected on decode):

====  ==================================  =========  ======
verb  meaning                             card_id    option
====  ==================================  =========  ======
ans   answer an ask with option #option   required   required
txt   answer an ask with free text        required   —
dec   decline an ask                      required   —
stop  stop the run                        —          —
int   interrupt the run with a message    —          —
orc   ask the oracle about the run        —          —
wake  wake a run that did not come back   —          —
fil   post the run's changed files         —          —
undo  list the run's checkpoints          —          —
rst   restore a checkpoint (its id)        required   —
rtp   pause a routine                      —          —
rtr   resume a routine                     —          —
rtn   run a routine now                    —          —
rtd   delete a routine                     —          —
====  ==================================  =========  ======

The `rt*` verbs carry a routine's id where the others carry a run id (the field is the id of what the
button acts on).

Fields may not contain ":" or whitespace. ``ID_PATTERN`` is a regex usable as a discord.py
``DynamicItem`` template (it is matched with fullmatch); its groups are verb, run_id, card_id, option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapters.platform.limits import ID_MAX

__all__ = ["ID_PATTERN", "MAX_LEN", "VERBS", "VERSION", "ActionId", "IdError", "decode", "encode"]

VERSION = "fl1"
MAX_LEN = ID_MAX  # 100: Discord's custom_id, the strictest platform (adapters.platform.limits)
# verb -> (card_id required, option required)
VERBS: dict[str, tuple[bool, bool]] = {
    "ans": (True, True),
    "txt": (True, False),
    "dec": (True, False),
    "stop": (False, False),
    "int": (False, False),
    "orc": (False, False),
    "wake": (False, False),
    "fil": (False, False),
    "undo": (False, False),
    "rst": (True, False),  # card_id: the checkpoint's id (adapters/hub/checkpoints.py)
    "rtp": (False, False),
    "rtr": (False, False),
    "rtn": (False, False),
    "rtd": (False, False),
}

_FIELD = r"[^:\s]"
ID_PATTERN = (
    rf"{VERSION}:(?P<verb>{'|'.join(VERBS)}):(?P<run_id>{_FIELD}+):(?P<card_id>{_FIELD}*)"
    r"(?::(?P<option>0|[1-9][0-9]*))?"
)
_FIELD_RE = re.compile(rf"{_FIELD}*")
_OPTION_RE = re.compile(r"0|[1-9][0-9]*")


class IdError(ValueError):
    """An interactive id that this codec did not produce (or cannot produce)."""


@dataclass(frozen=True)
class ActionId:
    verb: str
    run_id: str
    card_id: str = ""
    option: int | None = None

    def encode(self) -> str:
        return encode(self.verb, self.run_id, self.card_id, self.option)


def _check(verb: str, run_id: str, card_id: str, option: int | None) -> None:
    if verb not in VERBS:
        raise IdError(f"unknown verb {verb!r}; known: {', '.join(VERBS)}")
    need_card, need_option = VERBS[verb]
    if not run_id:
        raise IdError("run_id must be non-empty")
    for name, value in (("run_id", run_id), ("card_id", card_id)):
        if not _FIELD_RE.fullmatch(value):
            raise IdError(f"{name} {value!r} contains ':' or whitespace")
    if need_card and not card_id:
        raise IdError(f"verb {verb!r} needs a card_id")
    if not need_card and card_id:
        raise IdError(f"verb {verb!r} takes no card_id, got {card_id!r}")
    if need_option and option is None:
        raise IdError(f"verb {verb!r} needs an option index")
    if not need_option and option is not None:
        raise IdError(f"verb {verb!r} takes no option, got {option!r}")
    if option is not None and (isinstance(option, bool) or not isinstance(option, int) or option < 0):
        raise IdError(f"option must be a non-negative int, got {option!r}")


def encode(verb: str, run_id: str, card_id: str = "", option: int | None = None) -> str:
    """Build an interactive id; raises IdError if a field is invalid or the result exceeds MAX_LEN."""
    _check(verb, run_id, card_id, option)
    s = f"{VERSION}:{verb}:{run_id}:{card_id}"
    if option is not None:
        s += f":{option}"
    if len(s) > MAX_LEN:
        raise IdError(f"id is {len(s)} chars, over the {MAX_LEN}-char limit (shorten run_id/card_id): {s[:40]}...")
    return s


def decode(s: str) -> ActionId:
    """Parse an interactive id; raises IdError saying exactly what is wrong."""
    if not isinstance(s, str):
        raise IdError(f"id must be a str, got {type(s).__name__}")
    if len(s) > MAX_LEN:
        raise IdError(f"id is {len(s)} chars, over the {MAX_LEN}-char limit")
    parts = s.split(":")
    if parts[0] != VERSION:
        raise IdError(f"unknown id version {parts[0]!r} (this codec reads {VERSION!r}): {s!r}")
    if len(parts) not in (4, 5):
        raise IdError(f"id has {len(parts)} ':'-separated fields, want 4 or 5: {s!r}")
    verb, run_id, card_id = parts[1], parts[2], parts[3]
    option: int | None = None
    if len(parts) == 5:
        if not _OPTION_RE.fullmatch(parts[4]):
            raise IdError(f"option {parts[4]!r} is not a non-negative decimal index: {s!r}")
        option = int(parts[4])
    _check(verb, run_id, card_id, option)
    return ActionId(verb, run_id, card_id, option)
