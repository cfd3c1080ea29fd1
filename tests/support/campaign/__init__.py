"""The restart campaign of issue 18: kill the bot at random, restart it, count what was lost.

The bot is a real `flower-bot web --flow single` process; the model double runs here and outlives
it; a person drives the bot through the HTTP API only; every figure comes from what the API accepted
and what the model received (campaign.py draws the whole shape).
"""

from tests.support.campaign.campaign import SEED_ENV, Settings, run_campaign
from tests.support.campaign.person import Habits
from tests.support.campaign.report import Report

__all__ = ["SEED_ENV", "Habits", "Report", "Settings", "run_campaign"]
