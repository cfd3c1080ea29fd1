"""The interactive-id codec: round trips, limits, and clear refusals."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.ids import ID_PATTERN, MAX_LEN, VERBS, ActionId, IdError, decode, encode

field_text = st.text(st.characters(blacklist_characters=":", blacklist_categories=("Zs", "Cc", "Zl", "Zp", "Cs")),
                     min_size=1, max_size=30).filter(lambda s: not any(c.isspace() for c in s))


@st.composite
def action_ids(draw: st.DrawFn) -> ActionId:
    verb = draw(st.sampled_from(sorted(VERBS)))
    need_ask, need_option = VERBS[verb]
    return ActionId(verb, draw(field_text), draw(field_text) if need_ask else "",
                    draw(st.integers(0, 10**6)) if need_option else None)


@given(action_ids())
def test_round_trip_and_template(aid: ActionId) -> None:
    s = aid.encode()
    assert len(s) <= MAX_LEN
    assert decode(s) == aid
    m = re.fullmatch(ID_PATTERN, s)  # discord.py DynamicItem matches templates with fullmatch
    assert m is not None
    assert (m["verb"], m["run_id"], m["card_id"]) == (aid.verb, aid.run_id, aid.card_id)
    assert m["option"] == (None if aid.option is None else str(aid.option))


def test_examples() -> None:
    assert encode("ans", "r7", "q1", 2) == "fl1:ans:r7:q1:2"
    assert encode("stop", "r7") == "fl1:stop:r7:"
    assert decode("fl1:dec:r7:q3") == ActionId("dec", "r7", "q3")
    assert decode("fl1:orc:r7:") == ActionId("orc", "r7")


@pytest.mark.parametrize(("s", "why"), [
    ("fl2:ans:r:q:1", "unknown id version 'fl2'"),
    ("xyz", "unknown id version 'xyz'"),
    ("fl1:zap:r:q", "unknown verb 'zap'"),
    ("fl1:ans:r", "want 4 or 5"),
    ("fl1:ans:r:q:1:2", "want 4 or 5"),
    ("fl1:ans:r:q:one", "not a non-negative decimal index"),
    ("fl1:ans:r:q:-1", "not a non-negative decimal index"),
    ("fl1:ans:r:q:01", "not a non-negative decimal index"),
    ("fl1:ans:r:q", "needs an option"),
    ("fl1:txt:r::", "not a non-negative decimal index"),
    ("fl1:txt:r:", "needs a card_id"),
    ("fl1:stop:r:q", "takes no card_id"),
    ("fl1:dec:r:q:1", "takes no option"),
    ("fl1:ans::q:1", "run_id must be non-empty"),
    ("fl1:ans:r x:q:1", "whitespace"),
    ("fl1:stop:" + "r" * 100 + ":", "over the 100-char limit"),
])
def test_decode_refuses_with_a_reason(s: str, why: str) -> None:
    with pytest.raises(IdError, match=re.escape(why)):
        decode(s)
    assert re.fullmatch(ID_PATTERN, s) is None or why.startswith(("needs", "takes", "over"))


@pytest.mark.parametrize(("args", "why"), [
    (("ans", "r:1", "q", 0), "contains ':'"),
    (("ans", "r", "q:1", 0), "contains ':'"),
    (("ans", "r", "q", -1), "non-negative"),
    (("ans", "r", "q", True), "non-negative"),
    (("nope", "r"), "unknown verb"),
    (("stop", "r" * 95), "over the 100-char limit"),
])
def test_encode_refuses_with_a_reason(args: tuple[Any, ...], why: str) -> None:
    with pytest.raises(IdError, match=re.escape(why)):
        encode(*args)


def test_longest_valid_id_fits() -> None:
    s = encode("ans", "r" * 60, "q" * 28, 99)
    assert len(s) == MAX_LEN
    assert decode(s).option == 99
