"""The checks of `run_surface_conformance`, one function each, in the order they run (`CHECKS`).

Each gets a fresh rig and the notes; it passes by returning, fails by raising AssertionError with a
sentence that says what the platform showed, or raises `Skip` when its platform cannot play it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from adapters.ids import MAX_LEN, decode, encode
from adapters.platform.contract import as_platform, provides
from adapters.platform.errors import PermanentSurfaceError, StreamRefused, SurfaceError, TransientSurfaceError
from adapters.platform.messages import KINDS, Button, LiveText, OutMessage, ThreadRef
from adapters.platform.probe import Fault, Notes, Rig, Seen, Skip

__all__ = ["CHECKS", "Check"]

Check = Callable[[Rig, Notes], Awaitable[None]]
E = TypeVar("E", bound=SurfaceError)

RETRY_AFTER = 45.0  # the wait a 429 announces: longer than any client library sleeps through by itself
UNKNOWN_ID = "999999999999"  # a message id no platform handed out in a fresh thread


# ---- helpers ---------------------------------------------------------------------------------------
def expect(ok: bool, why: str) -> None:
    if not ok:
        raise AssertionError(why)


def flat(text: str) -> str:
    return " ".join(text.split())


def shows(seen: Seen, text: str) -> bool:
    return flat(text) in flat(seen.text)


def words(n: int, tag: str) -> str:
    """Exactly `n` characters of plain words and line breaks (no markup), ending in `tag`."""
    room = n - len(tag) - 1
    if room < 1:
        return tag[:n]
    body, i = "", 0
    while len(body) < room:
        body += f"w{i}" + ("\n" if i % 12 == 11 else " ")
        i += 1
    head = body[:room].rstrip()
    return head + "x" * (room - len(head)) + " " + tag


async def seen(rig: Rig, thread: ThreadRef, message_id: str, what: str) -> Seen:
    got = await rig.probe.read(thread, message_id)
    if got is None:
        raise AssertionError(f"{what}: message {message_id!r} is not on the platform")
    return got


async def raises(kind: type[E], call: Awaitable[Any], what: str) -> E:
    try:
        await call
    except kind as exc:
        return exc
    except SurfaceError as exc:
        raise AssertionError(f"{what} raised {type(exc).__name__} ({exc}), want {kind.__name__}") from exc
    except Exception as exc:
        raise AssertionError(f"{what} raised {type(exc).__name__}: {exc}; only SurfaceError subclasses may "
                             "leave a surface") from exc
    raise AssertionError(f"{what} returned normally, want {kind.__name__}")


async def only_surface_errors(call: Awaitable[Any], what: str) -> None:
    try:
        await call
    except SurfaceError:
        pass
    except Exception as exc:
        raise AssertionError(f"{what} raised {type(exc).__name__}: {exc}; only SurfaceError subclasses may "
                             "leave a surface") from exc


def prose(key: str, text: str) -> OutMessage:
    return OutMessage(f"conformance:{key}", "prose", text)


# ---- posting and editing ------------------------------------------------------------------------------
async def post_returns_an_id(rig: Rig, notes: Notes) -> None:
    p, thread = rig.probe, rig.probe.thread
    before = await p.shown(thread)
    mid = await rig.surface.post(thread, prose("post", "Hello from the conformance suite."))
    expect(isinstance(mid, str) and bool(mid), f"post returned {mid!r}, want a non-empty message id")
    expect(shows(await seen(rig, thread, mid, "after post"), "Hello from the conformance suite."),
           "the posted text is not what the platform shows")
    after = await p.shown(thread)
    expect(after == before + 1, f"one post added {after - before} messages to the thread, want 1")


async def each_post_is_a_message_of_its_own(rig: Rig, notes: Notes) -> None:
    thread = rig.probe.thread
    first = await rig.surface.post(thread, prose("one", "The first message."))
    second = await rig.surface.post(thread, prose("two", "The second message."))
    expect(first != second, f"two posts returned the same id {first!r}")
    expect(shows(await seen(rig, thread, first, "first post"), "The first message."), "the first post changed")
    expect(shows(await seen(rig, thread, second, "second post"), "The second message."), "the second post is wrong")


async def update_edits_that_message(rig: Rig, notes: Notes) -> None:
    p, thread = rig.probe, rig.probe.thread
    mid = await rig.surface.post(thread, prose("edit", "First version of this message."))
    before = await p.shown(thread)
    await rig.surface.update(thread, mid, prose("edit", "Second version of this message."))
    now = await seen(rig, thread, mid, "after update")
    expect(shows(now, "Second version of this message."), f"after update the message shows {now.text!r}")
    expect(not shows(now, "First version"), "after update the message still shows its first version")
    expect(await p.shown(thread) == before, "update added a message instead of editing the one posted")


async def updating_an_unknown_message_is_permanent(rig: Rig, notes: Notes) -> None:
    await raises(PermanentSurfaceError, rig.surface.update(rig.probe.thread, UNKNOWN_ID, prose("x", "Nobody.")),
                 f"update of message {UNKNOWN_ID!r}, never posted,")


async def updating_a_deleted_message_is_permanent(rig: Rig, notes: Notes) -> None:
    thread = rig.probe.thread
    mid = await rig.surface.post(thread, prose("gone", "Soon deleted."))
    await rig.probe.remove(thread, mid)
    await raises(PermanentSurfaceError, rig.surface.update(thread, mid, prose("gone", "Too late.")),
                 "update of a message deleted on the platform")


# ---- failures ------------------------------------------------------------------------------------------
async def _failing(rig: Rig, fault: Fault, kind: type[E]) -> list[E]:
    """Post and edit while the platform fails with `fault`; each must raise `kind`. Then heal and post.

    notify is tried too, except under a 429: the hub calls it directly, not through the outbox, so a
    surface may wait a rate limit out there itself (Slack's app client does)."""
    thread = rig.probe.thread
    mid = await rig.surface.post(thread, prose("before", "Posted before the platform failed."))
    if not rig.probe.fail(fault, RETRY_AFTER):
        raise Skip(f"this platform cannot fail with {fault}")
    try:
        errors = [await raises(kind, rig.surface.post(thread, prose("during", "Posted while failing.")),
                               f"post while the platform is {fault}"),
                  await raises(kind, rig.surface.update(thread, mid, prose("before", "Edited while failing.")),
                               f"update while the platform is {fault}")]
        if fault != "rate_limited":
            await only_surface_errors(rig.surface.notify(thread, rig.probe.users[0], "A notice while failing."),
                                      f"notify while the platform is {fault}")
    finally:
        rig.probe.heal()
    after = await rig.surface.post(thread, prose("after", "Posted once the platform is back."))
    expect(shows(await seen(rig, thread, after, "after healing"), "Posted once the platform is back."),
           "the surface does not post again once the platform is back")
    return errors


async def a_429_is_transient_with_retry_after(rig: Rig, notes: Notes) -> None:
    for exc in await _failing(rig, "rate_limited", TransientSurfaceError):
        expect(exc.retry_after is not None and abs(exc.retry_after - RETRY_AFTER) <= 1.0,
               f"a 429 asking for {RETRY_AFTER:.0f}s gave retry_after={exc.retry_after!r}")


async def an_outage_is_transient(rig: Rig, notes: Notes) -> None:
    await _failing(rig, "unavailable", TransientSurfaceError)


async def a_refusal_is_permanent(rig: Rig, notes: Notes) -> None:
    await _failing(rig, "refused", PermanentSurfaceError)


# ---- one person -----------------------------------------------------------------------------------------
async def notify_reaches_only_that_user(rig: Rig, notes: Notes) -> None:
    p, thread = rig.probe, rig.probe.thread
    user, others = p.users[0], list(p.users[1:])
    line = "Only you can see this line."
    before = {u: len(await p.told(u)) for u in p.users}
    shown = await p.shown(thread)
    await rig.surface.notify(thread, user, line)
    got = (await p.told(user))[before[user]:]
    expect(any(line in t for t in got), f"{user} was not told (new lines for them: {got!r})")
    for other in others:
        leaked = [t for t in (await p.told(other))[before[other]:] if line in t]
        expect(not leaked, f"a notice for {user} reached {other} too")
    expect(await p.shown(thread) == shown, "notify posted a message everyone in the thread sees")


# ---- limits ---------------------------------------------------------------------------------------------
async def text_at_text_max_is_shown_whole(rig: Rig, notes: Notes) -> None:
    thread, n = rig.probe.thread, rig.surface.limits.text_max
    cut = []
    for kind in sorted(KINDS - {"live"}):  # a live message is never posted: it is streamed (stream_* checks)
        text = words(n, f"end-of-{kind}")
        mid = await rig.surface.post(thread, OutMessage(f"conformance:long-{kind}", kind, text))
        if not shows(await seen(rig, thread, mid, f"a {kind} of {n} characters"), text):
            cut.append(kind)
    expect(not cut, f"text of text_max={n} characters is not shown whole in: {', '.join(cut)}")


async def a_title_and_fields_at_their_limits_are_shown(rig: Rig, notes: Notes) -> None:
    thread, limits = rig.probe.thread, rig.surface.limits
    title = words(limits.title_max, "T").replace("\n", " ")
    fields = [(f"Field {i:02d}", f"value {i:02d}") for i in range(limits.fields_max)]
    mid = await rig.surface.post(thread, OutMessage("conformance:card", "summary", "The card's body.", title=title,
                                                    fields=fields))
    card = await seen(rig, thread, mid, "a titled card")
    expect(shows(card, title), f"a title of title_max={limits.title_max} characters is not shown whole")
    lost = [name for name, value in fields if name not in card.text or value not in card.text]
    expect(not lost, f"of {limits.fields_max} fields (fields_max) these are not shown: {', '.join(lost)}")


def _ids(n: int) -> list[str]:
    """n answer ids of one question; the longest is exactly the codec's maximum length."""
    run = "r" * (MAX_LEN - len(encode("ans", "r", "q1", n - 1)) + 1)
    return [encode("ans", run, "q1", i) for i in range(n)]


async def buttons_up_to_buttons_max_round_trip(rig: Rig, notes: Notes) -> None:
    thread, limits = rig.probe.thread, rig.surface.limits
    expect(MAX_LEN <= limits.id_max, f"the id codec's {MAX_LEN}-character ids do not fit id_max={limits.id_max}")
    ids = _ids(limits.buttons_max)
    labels = [(f"Option {i:02d} " + "x" * limits.button_label_max)[: limits.button_label_max] for i in range(len(ids))]
    buttons = [Button(label, aid, "primary" if i == 0 else "default") for i, (label, aid) in
               enumerate(zip(labels, ids, strict=True))]
    mid = await rig.surface.post(thread, OutMessage("conformance:ask", "ask", "Pick one.", title="A question",
                                                    buttons=buttons, important=True))
    card = await seen(rig, thread, mid, f"a card with {len(buttons)} buttons")
    want = list(zip(labels, ids, strict=True))
    got = list(card.buttons)
    missing = [label for label, aid in want if (label, aid) not in got]
    expect(not missing, f"{len(missing)} of {len(want)} buttons (buttons_max) are missing or changed, e.g. "
                        f"{missing[:2]!r}; shown: {got[:2]!r}…")
    expect(got == want, "the buttons are not shown in the order given")
    for (_, sent), (_, back) in zip(want, got, strict=True):
        expect(decode(back) == decode(sent), f"the id {back!r} does not decode to what was sent")


async def agent_text_never_pings(rig: Rig, notes: Notes) -> None:
    thread, users = rig.probe.thread, rig.probe.users
    pings = ("Heads up @everyone, @here and @channel: <!channel> <!here> <!everyone> <!subteam^S0001> "
             "<@&123456789012345678> " + " ".join(f"<@{u}>" for u in users))
    messages = [prose("ping", pings), OutMessage("conformance:ping-notice", "notice", pings),
                OutMessage("conformance:ping-card", "ask", pings, title=f"Ask {pings}"[:80],
                           fields=[("Who", pings[:200])])]
    for msg in messages:
        mid = await rig.surface.post(thread, msg)
        got = (await seen(rig, thread, mid, f"a {msg.kind} full of mentions")).pings
        expect(not got, f"a {msg.kind} of agent text notifies {sorted(got)}")
        await rig.surface.update(thread, mid, OutMessage(msg.key, msg.kind, pings + " (edited)", title=msg.title))
        got = (await seen(rig, thread, mid, f"an edited {msg.kind}")).pings
        expect(not got, f"an edited {msg.kind} of agent text notifies {sorted(got)}")


# ---- optional members -------------------------------------------------------------------------------------
async def place_names_the_platform(rig: Rig, notes: Notes) -> None:
    surface = as_platform(rig.surface)
    place = surface.place
    expect(isinstance(place, str) and bool(place.strip()) and "\n" not in place,
           f"place is {place!r}, want a short one-line name for cards")
    if not provides(rig.surface, "place"):
        notes.fallback("place", f"the platform's name ({surface.name!r})")


async def direct_opens_a_private_thread_or_falls_back(rig: Rig, notes: Notes) -> None:
    p, surface = rig.probe, as_platform(rig.surface)
    user = p.users[0]
    expect(p.private(p.thread) is None, "the rig's own thread should be shared, not a direct message")
    try:
        dm = await surface.direct(user)
    except SurfaceError as exc:
        raise AssertionError(f"direct({user!r}) raised {exc!r} for a person the platform knows") from exc
    if dm is None:
        notes.fallback("direct", "None: this platform cannot open a direct message")
        return
    expect(isinstance(dm, ThreadRef) and dm.platform == rig.surface.name,
           f"direct({user!r}) gave {dm!r}, want a ThreadRef of platform {rig.surface.name!r}")
    shared_with = p.private(dm)
    expect(shared_with == user, f"direct({user!r}) opened {dm}, which the platform shares with {shared_with!r}")
    mid = await rig.surface.post(dm, OutMessage("conformance:dm", "ask", "A question waited for you.",
                                                title="A question"))
    expect(shows(await seen(rig, dm, mid, "a post in the direct thread"), "A question waited for you."),
           "a card posted in the direct thread is not shown there")


async def stream_grows_one_message_and_closes_it_whole(rig: Rig, notes: Notes) -> None:
    """Words streamed into one message are shown there as they come and, closed, as the complete text;
    a surface without `stream` reports its fallback (StreamRefused) and nothing is shown."""
    p, surface = rig.probe, as_platform(rig.surface)
    thread, before = p.thread, await p.shown(p.thread)
    owner = f"{rig.surface.name}:{p.users[0]}"  # whom the words answer: a person of the platform
    pieces = ["Streaming ", "words one ", "piece at a time", " — and the end."]
    if not provides(rig.surface, "stream"):
        try:
            await surface.stream(thread, None, LiveText("conformance:live", pieces[0], pieces[0]))
        except StreamRefused:
            notes.fallback("stream", "StreamRefused: the agent's words are shown once each message is complete")
            expect(await p.shown(thread) == before, "a refused stream left a message in the thread")
            return
        raise AssertionError("stream() of a surface without one of its own did not raise StreamRefused")
    mid: str | None = None
    text = ""
    for piece in pieces[:-1]:
        text += piece
        mid = await surface.stream(thread, mid, LiveText("conformance:live", text, piece, owner=owner))
        expect(isinstance(mid, str) and bool(mid), f"stream() gave {mid!r}, want the message's id")
    assert mid is not None
    expect(shows(await seen(rig, thread, mid, "a message being streamed"), text.strip()),
           "the words streamed so far are not shown in the message")
    whole = text + pieces[-1]
    closed = await surface.stream(thread, mid, LiveText("conformance:live", whole, pieces[-1], done=True,
                                                        owner=owner))
    expect(closed == mid, f"closing the stream gave id {closed!r}, want the same message {mid!r}")
    expect(shows(await seen(rig, thread, mid, "a closed stream"), whole), "the closed message is not the whole text")
    expect(await p.shown(thread) == before + 1, "one streamed message became several messages")


CHECKS: dict[str, Check] = {check.__name__: check for check in (
    post_returns_an_id,
    each_post_is_a_message_of_its_own,
    update_edits_that_message,
    updating_an_unknown_message_is_permanent,
    updating_a_deleted_message_is_permanent,
    a_429_is_transient_with_retry_after,
    an_outage_is_transient,
    a_refusal_is_permanent,
    notify_reaches_only_that_user,
    text_at_text_max_is_shown_whole,
    a_title_and_fields_at_their_limits_are_shown,
    buttons_up_to_buttons_max_round_trip,
    agent_text_never_pings,
    place_names_the_platform,
    direct_opens_a_private_thread_or_falls_back,
    stream_grows_one_message_and_closes_it_whole,
)}
