"""split_text and neutralize_mentions: limits, fences and content checked by an independent parser."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.textsplit import neutralize_mentions, split_spans, split_text


def code_mask(text: str) -> tuple[list[tuple[str, bool]], bool]:
    """(non-space chars with "inside a code block?", balanced?) — a fence reader written apart from the module."""
    out: list[tuple[str, bool]] = []
    open_ticks = 0
    for line in text.split("\n"):
        body = line.rstrip("\r")
        s = body.lstrip(" ")
        ticks = len(s) - len(s.lstrip("`"))
        rest = s[ticks:]
        fence = len(body) - len(s) <= 3 and ticks >= 3 and "`" not in rest
        if not open_ticks and fence:
            open_ticks = ticks
            continue
        if open_ticks and fence and not rest.strip() and ticks >= open_ticks:
            open_ticks = 0
            continue
        out.extend((c, bool(open_ticks)) for c in line if not c.isspace())
    return out, not open_ticks


words = st.text(st.sampled_from("abcdefgh`@é"), min_size=1, max_size=12)
line = st.lists(words, min_size=1, max_size=14).map(" ".join)
paragraph = st.lists(line, min_size=1, max_size=5).map("\n".join)
long_word = st.integers(50, 900).map(lambda n: "x" * n)
lang = st.sampled_from(["", "py", "python", "js", "rust"])
code_line = st.one_of(line, st.just(""), st.just("  indented"), st.just("inline ``` ticks"), long_word)


@st.composite
def code_block(draw: st.DrawFn) -> str:
    marker = draw(st.sampled_from(["```", "````"]))
    body = draw(st.lists(code_line, max_size=30))
    if marker == "````" and draw(st.booleans()):
        body.insert(len(body) // 2, "```")  # a shorter fence inside a longer one is content
    closed = draw(st.booleans()) or draw(st.booleans())
    return "\n".join([marker + draw(lang), *body, *([marker] if closed else [])])


documents = st.lists(st.one_of(paragraph, code_block(), long_word, st.just("")), min_size=1, max_size=12).map(
    lambda blocks: "\n\n".join(blocks))


@settings(max_examples=300, deadline=None)
@given(documents, st.integers(60, 500))
def test_split_properties(text: str, limit: int) -> None:
    chunks = split_text(text, limit)
    assert all(len(c) <= limit for c in chunks), [len(c) for c in chunks]
    joined: list[tuple[str, bool]] = []
    for c in chunks:
        mask, balanced = code_mask(c)
        assert balanced, c
        joined.extend(mask)
    assert joined == code_mask(text)[0]  # same content, same order, same code/prose status


@settings(max_examples=200, deadline=None)
@given(documents, st.integers(1, 500))
def test_spans_tile_the_text(text: str, limit: int) -> None:
    spans = split_spans(text, limit)
    if not text:
        assert spans == []
        return
    assert [s.start for s in spans] == [0] + [s.end for s in spans[:-1]]
    assert spans[-1].end == len(text)
    assert all(s.end > s.start for s in spans)
    assert all(len(s.prefix) + s.end - s.start + len(s.suffix) <= limit for s in spans)


def test_prefers_paragraphs_then_lines() -> None:
    a, b, c = "a" * 50, "b" * 30, "c" * 30
    assert split_text(f"{a}\n\n{b}\n{c}", 90) == [a, f"{b}\n{c}"]  # paragraph break at 52 of 90
    assert split_text(f"{a}\n{b}\n{c}", 90) == [f"{a}\n{b}", c]
    a = "a" * 20  # a paragraph break that would leave the chunk under half full loses to a line break
    assert split_text(f"{a}\n\n{b}\n{c}\n{c}", 90) == [f"{a}\n\n{b}\n{c}", c]


def test_words_not_cut_when_a_space_is_near() -> None:
    chunks = split_text("alpha beta gamma delta " * 20, 50)
    assert all(len(c) <= 50 for c in chunks)
    for c in chunks:
        for w in c.split():
            assert w in {"alpha", "beta", "gamma", "delta"}, c


def test_fence_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"line {i}" for i in range(40))
    chunks = split_text(f"intro\n\n```python\n{code}\n```\noutro", 120)
    assert len(chunks) > 2
    for c in chunks[1:-1]:
        assert c.startswith("```python\n") and c.endswith("\n```"), c
    assert chunks[-1].endswith("outro")


def test_short_and_empty() -> None:
    assert split_text("hello", 2000) == ["hello"]
    assert split_text("", 2000) == []
    assert split_text("\n\n  \n", 2000) == []
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_neutralize_mentions() -> None:
    zw = "\u200b"
    s = neutralize_mentions("@everyone @Here @channel <!channel> <!here|here> <!everyone> <!subteam^S1> <@&42>")
    assert s == (f"@{zw}everyone @{zw}Here @{zw}channel <{zw}!channel> <{zw}!here|here> <{zw}!everyone> "
                 f"<{zw}!subteam^S1> <{zw}@&42>")
    assert neutralize_mentions(s) == s
    assert neutralize_mentions("mail me@hereford.org, ping <@123>") == "mail me@hereford.org, ping <@123>"
