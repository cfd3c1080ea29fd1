"""The platform-neutral message model: where a message goes (`ThreadRef`) and what it says (`OutMessage`).

The hub speaks only in `OutMessage`s addressed to a `ThreadRef`; each platform's surface turns one
into its own message (Block Kit, an embed, a row of the web page's table). Nothing here knows a
platform: a platform is only the first part of a `ThreadRef`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BUTTON_STYLES", "KINDS", "LIVE_STATES", "TASK_STATES", "TONES", "Button", "FileRef", "LiveText",
           "OutMessage", "Task", "ThreadRef"]


@dataclass(frozen=True)
class ThreadRef:
    """Where a conversation lives: `platform:channel:thread` (thread may be empty for a channel root).

    platform and channel must not contain ":"; the thread part may (everything after the second ":").
    """

    platform: str
    channel: str
    thread: str = ""

    def __post_init__(self) -> None:
        if not self.platform or ":" in self.platform:
            raise ValueError(f"ThreadRef platform must be non-empty without ':', got {self.platform!r}")
        if not self.channel or ":" in self.channel:
            raise ValueError(f"ThreadRef channel must be non-empty without ':', got {self.channel!r}")

    def __str__(self) -> str:
        return f"{self.platform}:{self.channel}:{self.thread}"

    @classmethod
    def parse(cls, s: str) -> ThreadRef:
        parts = s.split(":", 2)
        if len(parts) != 3:
            raise ValueError(f"not a thread reference (want platform:channel:thread): {s!r}")
        return cls(parts[0], parts[1], parts[2])


BUTTON_STYLES = frozenset({"default", "primary", "danger"})


@dataclass(frozen=True)
class Button:
    """An interactive button; `action_id` is an `adapters.ids` string (fl1:...)."""

    label: str
    action_id: str
    style: str = "default"

    def __post_init__(self) -> None:
        if self.style not in BUTTON_STYLES:
            raise ValueError(f"button style must be one of {sorted(BUTTON_STYLES)}, got {self.style!r}")


# status: the run's card, edited in place; prose: main-thread speech; ask: a question card;
# receipt: inbox mail acknowledgement; notice: handoff/retry/error/reset lines; oracle: a side answer;
# summary: the final card; live: main-thread speech while it is written (only threads whose surface
# streams show it: see `LiveText`).
KINDS = frozenset({"status", "prose", "ask", "receipt", "notice", "oracle", "summary", "live"})
# A live message's state: open (words still coming), said (its words are complete; its tasks may still
# move), done (closed, complete), cut (it ended unfinished: an interrupt, a restart; the text is what was
# written and `LiveText.note` says why).
LIVE_STATES = frozenset({"", "open", "said", "done", "cut"})
# A task's state (Slack's task_update statuses): a tool call in flight, done, failed; a plan's item to do.
TASK_STATES = ("pending", "in_progress", "complete", "error")


@dataclass(frozen=True)
class Task:
    """One line of work shown with a live message: a tool call (its summary), or an item of the agent's plan."""

    id: str
    title: str
    status: str = "in_progress"
    output: str = ""  # a short line of what came of it (a failed call's error)

    def __post_init__(self) -> None:
        if self.status not in TASK_STATES:
            raise ValueError(f"Task status must be one of {TASK_STATES}, got {self.status!r}")
# How a message should look where a platform can colour it (Discord embed colour, a Slack mark, a CSS
# class): "" neutral, "warning" (e.g. a run past 80% of its cost cap), "danger" (at it); how a run ended
# adds "success", "muted" and "info" (adapters/view/endings.py).
TONES = frozenset({"", "warning", "danger", "success", "muted", "info"})
# Inbox mail: queued (the agent reads it at its next check), then delivered (it has read it).
RECEIPT_STATES = frozenset({"", "queued", "delivered"})


@dataclass(frozen=True)
class FileRef:
    """A file to post with a message (the agent shared it). A platform that can uploads it; one that
    cannot shows the message's text, which names the file."""

    path: str  # absolute, on this machine
    name: str
    size: int
    rel: str = ""  # relative to the run's workspace (a link to the web API's download route)
    run_id: str = ""
    beside: str = ""  # "<folder>/<name>" beside the run (a whole plan, a whole diff): the web API's other route
    content: bytes | None = None  # the bytes themselves, for a file made on the spot (long output); else read path


@dataclass(frozen=True)
class OutMessage:
    """One logical message in a thread.

    `key` is its identity inside the thread ("status", "ask:q1", "mail:m2", "prose:7", "summary").
    Putting a message whose key was already posted edits that platform message when `replace` is
    True, or posts a fresh one (the key then points at the new one) when False. `important`
    messages (ask cards, the summary) are never dropped by the outbox. `origin` ties a receipt to
    the person's message it acknowledges.
    """

    key: str
    kind: str
    text: str
    title: str = ""
    fields: list[tuple[str, str]] = field(default_factory=list)
    buttons: list[Button] = field(default_factory=list)
    important: bool = False
    replace: bool = True
    # The platform id of a person's message this one answers (an inbox receipt for that message):
    # platforms that can may show it there (a reaction) instead of as a message of its own.
    origin: str = ""
    # A ThreadRef string: show this message in that thread only (a receipt where the mail was written),
    # not in the run's other threads.
    only_in: str = ""
    # One of TONES: a colour hint platforms may map; the text stays complete without it.
    tone: str = ""
    # A receipt's state, one of RECEIPT_STATES ("" for other kinds): platforms show it without reading the text.
    state: str = ""
    # A file posted with the message (`share`); the text stays complete without it.
    attachment: FileRef | None = None
    # kind "live": one of LIVE_STATES. The text is everything written so far.
    live: str = ""
    # kind "prose": the live messages whose complete words this prose holds. A thread that showed every
    # one of them as it was written does not post the prose again.
    live_keys: tuple[str, ...] = ()
    # kind "live": whom the words answer, the run's owner as "platform:user" (Slack streams to a recipient).
    owner: str = ""
    # kind "live": the work shown with the words (tool calls), or, with `plan`, the agent's plan (its to-do
    # list, `title` its heading) shown together as a checklist.
    tasks: tuple[Task, ...] = ()
    plan: bool = False

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("OutMessage key must be non-empty")
        if self.kind not in KINDS:
            raise ValueError(f"OutMessage kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if self.tone not in TONES:
            raise ValueError(f"OutMessage tone must be one of {sorted(TONES)}, got {self.tone!r}")
        if self.state not in RECEIPT_STATES:
            raise ValueError(f"OutMessage state must be one of {sorted(RECEIPT_STATES)}, got {self.state!r}")
        if self.live not in LIVE_STATES or (self.kind == "live") != bool(self.live):
            raise ValueError(f"OutMessage live must be one of {sorted(LIVE_STATES - {''})} exactly when kind is "
                             f"'live', got kind {self.kind!r} live {self.live!r}")


@dataclass(frozen=True)
class LiveText:
    """What `Surface.stream` is given: one message being written, as the outbox paces it.

    `text` is the message's whole text so far and `new` what it gained since the surface's last call for
    this message (a platform that appends sends `new`; one that edits shows `text`). `done` closes the
    message: `text` is then its complete, final text (`note`, when set, is a short line to end it with: why
    it stopped early). `owner` is whom the words answer: the run's owner as "platform:user". `tasks` are the
    tool calls shown with the words, or with `plan` the items of the agent's plan (then `title` heads it).
    """

    key: str
    text: str
    new: str
    done: bool = False
    note: str = ""
    owner: str = ""
    tasks: tuple[Task, ...] = ()  # every task of the message as it stands (platforms send what changed)
    plan: bool = False  # the tasks are a plan: shown together as one checklist (Slack task_display_mode "plan")
    title: str = ""  # a plan's heading
    # A message an earlier process was streaming (a restart cut it): close it keeping the words it shows,
    # ending with `note`; `text` and `tasks` are unknown here (empty).
    earlier: bool = False
