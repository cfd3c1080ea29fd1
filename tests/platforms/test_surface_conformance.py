"""The platform contract suite (`run_surface_conformance`) on every surface the project ships: the
memory surface, Slack (real slack-sdk against the Slack double), Discord (real discord.py, the
bridge logged in to the Discord double) and the web page's surface; and on surfaces broken on
purpose, to show that each check catches what it is about."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path

import discord
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.discord_bridge import DiscordFrontend
from adapters.memory_surface import MemorySurface
from adapters.ops.metrics import CountingSurface, Metrics
from adapters.platform import (
    OPTIONAL_MEMBERS,
    OutMessage,
    PlatformSurface,
    Surface,
    ThreadRef,
    TransientSurfaceError,
    as_platform,
    provides,
)
from adapters.platform.checks import CHECKS
from adapters.platform.testing import Rig, Seen, SurfaceConformanceError, run_surface_conformance
from adapters.slack import SlackFrontend
from adapters.slack.surface import SlackSurface
from adapters.web.surface import WebSurface
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, settings
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import settings_for
from tests.support.surface_probes import DiscordProbe, MemoryProbe, SlackProbe, WebProbe

__all__ = ["discord_double"]

# A platform that cannot play a check says so; these are the ones each surface cannot play.
WEB_CANNOT = {"a_429_is_transient_with_retry_after", "an_outage_is_transient"}
MEMORY_CANNOT = {"an_outage_is_transient", "a_refusal_is_permanent"}


# ---- the four surfaces ------------------------------------------------------------------------------
async def test_the_memory_surface_conforms() -> None:
    def rig() -> Rig:
        surface = MemorySurface()
        return Rig(surface, MemoryProbe(surface))

    report = await run_surface_conformance(rig)
    assert set(report.skipped) == MEMORY_CANNOT
    assert report.fallbacks == {"place": "the platform's name ('memory')",
                                "direct": "None: this platform cannot open a direct message"}


async def test_the_memory_surface_with_direct_messages_conforms() -> None:
    def rig() -> Rig:
        surface = MemorySurface(dm=True)
        return Rig(surface, MemoryProbe(surface))

    report = await run_surface_conformance(rig)
    assert "direct_opens_a_private_thread_or_falls_back" in report.passed
    assert "direct" not in report.fallbacks


async def test_the_web_surface_conforms(tmp_path: Path) -> None:
    surface = WebSurface(tmp_path / "web" / "threads.sqlite")

    def rig() -> Rig:
        probe = WebProbe(surface)
        return Rig(surface, probe, close=_closing(probe.close))

    try:
        report = await run_surface_conformance(rig)
    finally:
        surface.close()
    assert set(report.skipped) == WEB_CANNOT
    assert report.fallbacks == {"direct": "None: this platform cannot open a direct message"}  # place: "the web page"


async def test_the_slack_surface_conforms() -> None:
    async with SlackDouble() as double:
        surface = SlackFrontend(settings_for(double)).surface  # wired as the bot wires it: real slack-sdk clients
        report = await run_surface_conformance(lambda: Rig(surface, SlackProbe(double)))
        assert not report.skipped and not report.fallbacks
        assert double.called("chat.update") and double.called("conversations.open")  # it went through the API


async def test_the_discord_surface_conforms(discord_double: DiscordDouble) -> None:
    d = discord_double
    users = [str(d.person(name).id) for name in ("Ana", "Bea")]
    bridge = DiscordFrontend(settings(d))
    await bridge.start()  # logged in and on the gateway, as the bot runs it
    try:
        async def rig() -> Rig:
            channel = bridge.client.get_channel(d.channel_id)
            assert channel is not None and hasattr(channel, "send")
            starter = await channel.send("A run starts here.")  # a run's thread hangs off its starter message
            thread = await starter.create_thread(name="conformance")
            ref = ThreadRef("discord", str(d.channel_id), str(thread.id))
            return Rig(bridge.surface, DiscordProbe(d, ref, users))

        report = await run_surface_conformance(rig)
    finally:
        await bridge.stop()
    assert not report.skipped and not report.fallbacks
    assert d.rest("PATCH", r"/channels/\d+/messages/\d+")  # edits went through discord.py's REST client


# ---- the contract's optional members ------------------------------------------------------------------
class Bare:
    """A surface with the required members only (like the outbox tests' fake)."""

    def __init__(self, inner: MemorySurface) -> None:
        self.inner, self.name, self.limits = inner, inner.name, inner.limits

    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        return await self.inner.post(thread, msg)

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        await self.inner.update(thread, message_id, msg)

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        await self.inner.notify(thread, user, text)


async def test_a_bare_surface_gets_the_fallbacks_of_every_optional_member() -> None:
    inner = MemorySurface(dm=True)  # (the bare surface does not pass on direct: it has none)
    bare = Bare(inner)
    assert isinstance(bare, Surface) and not isinstance(bare, PlatformSurface)
    full = as_platform(bare)
    assert isinstance(full, PlatformSurface) and full.place == "memory" and await full.direct("ana") is None
    assert not any(provides(full, m) for m in OPTIONAL_MEMBERS)
    thread = ThreadRef("memory", "c1", "t1")
    mid = await full.post(thread, OutMessage("k", "prose", "through the fallbacks"))
    assert inner.messages[mid].msg.text == "through the fallbacks"

    report = await run_surface_conformance(lambda: Rig(full, MemoryProbe(inner)))
    assert set(report.fallbacks) == set(OPTIONAL_MEMBERS)


async def test_the_real_surfaces_declare_what_they_can_do(tmp_path: Path) -> None:
    web = WebSurface(tmp_path / "w.sqlite")
    slack = SlackSurface(AsyncWebClient(token="xoxb-unused"))
    assert (web.place, provides(web, "place"), provides(web, "direct")) == ("the web page", True, False)
    assert (slack.place, provides(slack, "place"), provides(slack, "direct")) == ("Slack", True, True)
    assert as_platform(web) is web  # a PlatformSurface is used as it is
    # The bot counts every platform call through a wrapper that passes the rest on: still the same answers.
    counted = {s.name: CountingSurface(s, Metrics()) for s in (web, slack)}
    assert as_platform(counted["slack"]) is counted["slack"] and counted["slack"].place == "Slack"
    assert provides(counted["slack"], "direct") and not provides(counted["web"], "direct")
    with pytest.raises(TypeError, match="not a Surface"):
        as_platform(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not an optional member"):
        provides(web, "post")


# ---- the suite fails when the surface is wrong ------------------------------------------------------
@dataclasses.dataclass
class Broken(MemorySurface):
    """A memory surface with one defect switched on."""

    defect: str = ""

    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        if self.defect == "leaks_library_errors" and self._storm:
            raise RuntimeError("HTTP 429 from the library, not translated")
        if self.defect == "drops_buttons":
            msg = dataclasses.replace(msg, buttons=msg.buttons[:5])
        if self.defect == "cuts_text":
            msg = dataclasses.replace(msg, text=msg.text[:1000])
        return await super().post(thread, msg)

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        if self.defect == "edit_posts_anew":
            await super().post(thread, msg)
            return
        if self.defect == "ignores_unknown_ids" and message_id not in self.messages:
            return
        await super().update(thread, message_id, msg)

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        if self.defect == "notifies_in_public":
            await super().post(thread, OutMessage("notice:x", "notice", f"{user}: {text}"))
        await super().notify(thread, user if self.defect != "notifies_everyone" else "bea", text)

    def _maybe_fail(self) -> None:
        if self.defect == "forgets_retry_after" and self._storm > 0:
            self._storm -= 1
            raise TransientSurfaceError("429")
        super()._maybe_fail()


UNKNOWN, DELETED = "updating_an_unknown_message_is_permanent", "updating_a_deleted_message_is_permanent"
# defect -> the checks it breaks (exactly those)
DEFECTS = {
    "leaks_library_errors": {"a_429_is_transient_with_retry_after"},
    "forgets_retry_after": {"a_429_is_transient_with_retry_after"},
    "drops_buttons": {"buttons_up_to_buttons_max_round_trip"},
    "cuts_text": {"text_at_text_max_is_shown_whole"},
    "edit_posts_anew": {"update_edits_that_message", UNKNOWN, DELETED},
    "ignores_unknown_ids": {UNKNOWN, DELETED},
    "notifies_in_public": {"notify_reaches_only_that_user"},
    "notifies_everyone": {"notify_reaches_only_that_user"},
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
async def test_the_suite_names_the_check_a_defect_breaks(defect: str) -> None:
    def rig() -> Rig:
        surface = Broken(defect=defect)
        return Rig(surface, MemoryProbe(surface))

    with pytest.raises(SurfaceConformanceError) as caught:
        await run_surface_conformance(rig)
    assert set(caught.value.failures) == DEFECTS[defect], str(caught.value)
    assert all(f"FAILED {name}: " in str(caught.value) for name in DEFECTS[defect])


async def test_agent_text_that_pings_is_caught() -> None:
    class Pinging(MemoryProbe):  # a platform where "@everyone" in the text notifies everyone
        async def read(self, thread: ThreadRef, message_id: str) -> Seen | None:
            seen = await super().read(thread, message_id)
            if seen is None or "@everyone" not in seen.text:
                return seen
            return dataclasses.replace(seen, pings=frozenset({"@everyone"}))

    def rig() -> Rig:
        surface = MemorySurface()
        return Rig(surface, Pinging(surface))

    with pytest.raises(SurfaceConformanceError) as caught:
        await run_surface_conformance(rig, only={"agent_text_never_pings"})
    assert "notifies ['@everyone']" in caught.value.failures["agent_text_never_pings"]


async def test_a_check_that_hangs_fails_on_its_deadline_and_the_rest_still_run() -> None:
    class Hanging(MemorySurface):
        async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
            await asyncio.Event().wait()

    def rig() -> Rig:
        surface = Hanging()
        return Rig(surface, MemoryProbe(surface))

    with pytest.raises(SurfaceConformanceError) as caught:
        await run_surface_conformance(rig, check_timeout=0.5)
    assert caught.value.failures == {"notify_reaches_only_that_user": "no answer within 0.5s"}
    assert len(caught.value.report.passed) == len(CHECKS) - 1 - len(MEMORY_CANNOT)


async def test_unknown_checks_are_refused() -> None:
    surface = MemorySurface()
    with pytest.raises(ValueError, match="unknown checks"):
        await run_surface_conformance(lambda: Rig(surface, MemoryProbe(surface)), only={"no_such_check"})
    assert surface.counts["post"] == 0  # refused before anything ran


def _closing(close: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def aclose() -> None:
        close()
    return aclose


# ---- the probes themselves see what they must ---------------------------------------------------------
async def test_the_slack_probe_sees_a_mention_the_surface_lets_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("adapters.slack.render.defuse", lambda text: text)  # a renderer that forgot to defuse
    async with SlackDouble() as double:
        surface = SlackFrontend(settings_for(double)).surface
        with pytest.raises(SurfaceConformanceError) as caught:
            await run_surface_conformance(lambda: Rig(surface, SlackProbe(double)), only={"agent_text_never_pings"})
    assert "user:U0000ANA" in caught.value.failures["agent_text_never_pings"]


async def test_the_discord_probe_sees_a_mention_the_surface_lets_through(discord_double: DiscordDouble,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    d = discord_double
    users = [str(d.person("Ana").id)]
    monkeypatch.setattr("adapters.discord_bridge.render.NO_MENTIONS", discord.AllowedMentions.all())
    bridge = DiscordFrontend(settings(d))
    await bridge.start()
    try:
        thread = ThreadRef("discord", str(d.channel_id), "")  # posts go to the channel itself
        with pytest.raises(SurfaceConformanceError) as caught:
            await run_surface_conformance(lambda: Rig(bridge.surface, DiscordProbe(d, thread, users)),
                                          only={"agent_text_never_pings"})
    finally:
        await bridge.stop()
    assert "@everyone" in caught.value.failures["agent_text_never_pings"]
