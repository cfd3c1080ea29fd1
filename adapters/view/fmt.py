"""Small text formatters shared by the view's cards: numbers, money, durations, one-liners."""

from __future__ import annotations

from collections.abc import Callable

Who = Callable[[str], str]  # user id -> how a platform shows that user (e.g. "<@U123>")


def plain_who(user: str) -> str:
    return user or "someone"


def tokens(n: int | float | None) -> str:
    """80200 -> "80.2K", 1000000 -> "1M"; compact enough for a status field."""
    if not n:
        return "0"
    n = float(n)
    if n >= 1_000_000:
        s = f"{n / 1_000_000:.1f}".removesuffix(".0")
        return f"{s}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}K"
    return str(int(n))


def money(usd: float | None) -> str:
    usd = float(usd or 0.0)
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"


def duration(seconds: float | None) -> str:
    """4 -> "4s", 125 -> "2m 05s", 7322 -> "2h 02m"."""
    s = max(0, int(seconds or 0))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h {m:02d}m"
    if m:
        return f"{m}m {s:02d}s"
    return f"{s}s"


def one_line(text: str, limit: int = 120) -> str:
    """Whitespace collapsed, clipped with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)] + "…"


def clip(text: str, limit: int) -> str:
    """Multi-line text clipped at `limit` characters (the outbox splits, this only bounds memory)."""
    text = str(text)
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def tool_name(tool: str) -> str:
    """mcp__human__inbox -> human.inbox; built-in names unchanged."""
    if tool.startswith("mcp__") and "__" in tool[5:]:
        server, name = tool[5:].split("__", 1)
        return f"{server}.{name}"
    return tool or "tool"


def tool_call(tool: str, summary: str, limit: int) -> str:
    """'Bash make test' as a line names a call: its tool, then what it touches (nothing when it says nothing)."""
    return f"{tool_name(tool)} {one_line(summary, limit)}".rstrip()


def quote(text: str, limit: int = 300) -> str:
    return f"“{one_line(text, limit)}”"
