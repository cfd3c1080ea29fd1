"""Fixed model-facing texts of the human channel, and the size limits applied to human input.

The timeout text is the seed's, verbatim. The others are ours, in the same language and voice, so a
model sees one consistent register whatever the outcome.
"""

from __future__ import annotations

# Settled at once (timeout_s <= 0) or after the wait ran out: nobody is there.
TIMEOUT = (
    "无人应答。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。"
    "不要重复提问,也不要停在这里。"
)

# The human saw the question and chose not to answer it.
DECLINED = (
    "对方看过这个问题,选择不回答。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。"
    "不要换个说法再问同一件事。"
)

# max_asks is used up (or 0): refused without blocking.
OVER_BUDGET = (
    "提问次数已用完,这个问题没有发给人。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。"
    "不要再调用提问工具。"
)

DECLINE_REASON = "对方的说明:"
EMPTY_ANSWER = "(对方回复了,但内容为空。按你自己的判断继续。)"

INBOX_EMPTY = "收件箱是空的:人没有新的话要说。继续手上的工作。"
INBOX_HEADER = "人在运行中主动说了下面这些话(按时间先后)。把它们当作对需求的补充,和原需求冲突时以这里为准:"
INBOX_AMENDED = "这些话也已追加进需求文件,之后的步骤能读到。"

INVALID_EMPTY = "提问无效:question 为空或不是文字。写出一个具体、能直接回答的问题再调用一次。"
INVALID_OPTIONS = (
    "提问无效:options 必须是字符串列表,每项非空且互不重复,最多 {max} 项。"
    "改正后再调用一次,或者去掉 options。"
)

# Heading label for mid-run additions appended to the brief (amend_path).
AMEND_LABEL = "运行中补充"

# Caps on human- and model-supplied text. A question or answer longer than this is almost certainly
# a paste accident; keeping it whole would burn the model's context for nothing.
MAX_TEXT_CHARS = 20_000
MAX_OPTIONS = 20
MAX_OPTION_CHARS = 500
TRUNCATED = "\n…[已截断:省略 {n} 个字符]"


def cap(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Cut text to `limit` characters plus a marker that says how much was dropped."""
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED.format(n=len(text) - limit)
