"""The human channel: questions (Ask) and mail (Mail) between a running model and a person."""

from .ask import ASK_STATES, Ask, AskState
from .channel import HumanChannel
from .mail import Mail
from .texts import DECLINED, INBOX_EMPTY, MAX_TEXT_CHARS, OVER_BUDGET, TIMEOUT

__all__ = ["ASK_STATES", "DECLINED", "INBOX_EMPTY", "MAX_TEXT_CHARS", "OVER_BUDGET", "TIMEOUT", "Ask", "AskState",
           "HumanChannel", "Mail"]
