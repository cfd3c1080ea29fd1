"""Inbound Slack payloads read into plain values (pure). Anything missing or of the wrong type
raises `PayloadError` with a line fit for the log; the listeners turn it into a warning and, where
a person acted, an ephemeral explanation.

Slash command grammar (`/flower`):

=====================  ==============================================================
``/flower <task>``     start a run (a single unknown word is taken for a mistyped subcommand)
``/flower start <t>``  start a run, whatever `t` is (a one-word task)
``/flower status``     the run of this channel
``/flower runs``       the live runs the caller can see
``/flower runs all``   those, and the caller's runs that have ended (a reply in a thread continues one)
``/flower help``       what the bot does
``/flower follow <r>`` show run `r` in a new thread of this channel (a mirror)
``/flower unfollow <r>``  stop showing run `r` in this channel's mirror threads
``/flower <when> <t>``    a routine in this channel: `every weekday at 9:00 <t>`, `at 22:00 <t>`,
                       `in 30 minutes <t>`, `every 2 hours <t>`, `cron 0 9 * * 1-5 <t>` (hub.split_schedule);
                       per-run options may come first, as for a start
``/flower routines``   this channel's routines, with Pause/Resume, Run now and Delete buttons
``/flower plan <t>``   start a run that plans first: nothing changes before a person approves its plan
=====================  ==============================================================

`follow`/`unfollow` take exactly one word, the run id; with more words it is a task ("follow the
style guide") and starts a run. A task may begin with per-run options, as Discord's command takes
them: ``/flower budget=5 timeout=600 asks=3 approve=bash,edits write a CLI`` (cost cap in dollars,
question window in seconds, question quota, tools to ask about before they run); a malformed value is a
usage error, not part of the task. The bare word ``plan`` is one of those options (plan first), so
``/flower plan <t>``, ``/flower plan model=opus <t>`` and ``/flower budget=5 plan <t>`` all plan first; a task
that itself begins with the word "plan" is typed after ``start``: ``/flower start plan the release``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adapters.hub import split_schedule

__all__ = ["RUN_SUBCOMMANDS", "SUBCOMMANDS", "Action", "FlowerCommand", "PayloadError", "dedupe_key", "message_thread",
           "parse_flower", "parse_mention", "read_action", "text_field"]

SUBCOMMANDS = ("start", "status", "runs", "help")
RUN_SUBCOMMANDS = ("follow", "unfollow", "wake")  # take one word: a run id


class PayloadError(ValueError):
    """A payload without something the listeners need."""


def text_field(d: Any, *path: str, required: bool = True, null_ok: bool = True) -> str:
    """d[path[0]][path[1]]… as a string ("" when absent and not required). A JSON null counts as
    absent unless `null_ok=False` (Slack sends null for an empty form field, never for an event's
    user, text or ts). Anything else that is not a string is a `PayloadError`: Slack sends ids,
    timestamps and text as strings, so a number or an object is a broken or forged payload — never
    coerced into text (a numeric `user` once became inbox mail)."""
    cur = d
    for i, key in enumerate(path):
        if not isinstance(cur, dict) or key not in cur:
            if required:
                raise PayloadError(f"payload has no {'.'.join(path)}")
            return ""
        if cur[key] is None and (null_ok or i < len(path) - 1):
            if required:
                raise PayloadError(f"payload has no {'.'.join(path)}")
            return ""
        cur = cur[key]
    if not isinstance(cur, str):
        kind = "null" if cur is None else type(cur).__name__
        raise PayloadError(f"payload field {'.'.join(path)} is {kind}, not text")
    return cur


@dataclass(frozen=True)
class FlowerCommand:
    kind: str  # start | status | runs | help | follow | unfollow | wake | resume | model | effort | routine |
    # routines | usage
    # the task (start, routine), the run id (follow, unfollow, wake, resume), the model or effort (model,
    # effort) or what was not understood (usage)
    text: str = ""
    options: dict[str, float] = field(default_factory=dict)  # start: budget_usd, timeout_s, max_asks
    words: str = ""  # resume: what the run should do next ("" to only show it here); model, effort: the run id;
    # routine: its schedule
    approve: str = ""  # start: `approve=bash,edits` as typed (RunOptions.approve_from reads it)
    model: str = ""  # start: `model=<name>`
    effort: str = ""  # start: `effort=<level>`
    plan: bool = False  # start, routine: the bare word `plan` among the options (plan first)


OPTION_NAMES = {"budget": "budget_usd", "timeout": "timeout_s", "asks": "max_asks"}
WORD_OPTIONS = ("approve", "model", "effort")  # options whose value is a word, not a number
FLAG_OPTIONS = ("plan",)  # options that are a bare word, on when said (kept as "yes")


def _leading_options(words: str) -> tuple[dict[str, float], dict[str, str], str] | None:
    """`budget=5 approve=bash plan model=opus rest…` -> ({budget_usd: 5}, {approve: "bash", plan: "yes",
    model: "opus"}, "rest…"); None when malformed."""
    options: dict[str, float] = {}
    said: dict[str, str] = {}
    rest = words
    while True:
        head, _, tail = rest.partition(" ")
        name, eq, value = head.partition("=")
        if not eq and head.lower() in FLAG_OPTIONS and tail.strip():  # (alone it is a one-word task, or a typo)
            said[head.lower()], rest = "yes", tail.strip()
            continue
        if eq and name.lower() in WORD_OPTIONS and value.strip(","):
            said[name.lower()], rest = value, tail.strip()
            continue
        if not eq or name.lower() not in OPTION_NAMES:
            return options, said, rest
        try:
            number = float(value.lstrip("$"))
        except ValueError:
            return None
        if number < 0 or (name.lower() == "asks" and not number.is_integer()):
            return None
        options[OPTION_NAMES[name.lower()]] = number
        rest = tail.strip()


def parse_flower(text: str) -> FlowerCommand:
    words = text.strip()
    if not words:
        return FlowerCommand("usage", "")
    head, _, rest = words.partition(" ")
    sub = head.lower()
    if sub == "start":
        return FlowerCommand("start", rest.strip()) if rest.strip() else FlowerCommand("usage", "")
    if sub in SUBCOMMANDS and not rest.strip():
        return FlowerCommand(sub)
    if sub == "runs" and rest.strip().lower() == "all":
        return FlowerCommand("runs", "all")
    if sub == "routines" and not rest.strip():
        return FlowerCommand("routines")
    scheduled = split_schedule(words)  # `every weekday at 9:00 <task>`, `at 22:00 <task>`, `cron 0 9 * * 1-5 <task>`
    if scheduled is not None:
        schedule, task = scheduled
        return FlowerCommand("routine", task, words=schedule.removeprefix("cron ").strip())
    if sub == "resume":  # `resume <run id> [words…]`
        run_id, _, said = rest.strip().partition(" ")
        return FlowerCommand("resume", run_id, words=said.strip()) if run_id else FlowerCommand("usage", "")
    if sub in RUN_SUBCOMMANDS and " " not in rest.strip():
        return FlowerCommand(sub, rest.strip()) if rest.strip() else FlowerCommand("usage", "")
    if sub == "plan" and not rest.strip():  # plan what? (the usage line shows `/flower plan <task>`)
        return FlowerCommand("usage", "")
    if sub in ("model", "effort"):  # `model <name> [run id]`, `effort <level> [run id]`
        value, _, run_id = rest.strip().partition(" ")
        if not value or " " in run_id.strip():
            return FlowerCommand("usage", "")
        return FlowerCommand(sub, value, words=run_id.strip())
    parsed = _leading_options(words)
    if parsed is None:
        return FlowerCommand("usage", head)
    options, named, task = parsed
    approve, model, effort = named.get("approve", ""), named.get("model", ""), named.get("effort", "")
    plan = "plan" in named
    if (options or named) and (scheduled := split_schedule(task)) is not None:  # `budget=5 every day at 9:00 …`
        schedule, task = scheduled
        return FlowerCommand("routine", task, options, words=schedule.removeprefix("cron ").strip(), approve=approve,
                             model=model, effort=effort, plan=plan)
    if options or named:
        if not task:
            return FlowerCommand("usage", "")
        return FlowerCommand("start", task, options, approve=approve, model=model, effort=effort, plan=plan)
    if " " not in words.strip():
        return FlowerCommand("usage", head)  # `/flower stauts`: a typo, not a one-word task
    return FlowerCommand("start", words)


def parse_mention(text: str) -> FlowerCommand:
    """`@flower <text>` that starts a run: the options `/flower` takes (`plan`, `model=`, `budget=`…) before the
    task; anything else, a schedule or a subcommand's name included, is the task as written."""
    cmd = parse_flower(text)
    return cmd if cmd.kind == "start" and cmd.text else FlowerCommand("start", text.strip())


@dataclass(frozen=True)
class Action:
    """One button click (block_actions) with where it happened."""

    action_id: str
    value: str
    user: str
    user_name: str
    channel: str
    message_ts: str
    thread_ts: str  # the thread the message is in (its own ts when it is a thread root)
    trigger_id: str
    action_ts: str
    ephemeral: bool
    message_text: str  # the clicked message's markdown body, for a modal's context


def read_action(body: dict[str, Any]) -> Action:
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        raise PayloadError("block_actions payload has no actions")
    act = actions[0]
    container: dict[str, Any] = body["container"] if isinstance(body.get("container"), dict) else {}
    message: dict[str, Any] = body["message"] if isinstance(body.get("message"), dict) else {}
    channel = text_field(body, "channel", "id", required=False) or text_field(container, "channel_id",
                                                                              required=False)
    if not channel:
        raise PayloadError("block_actions payload has no channel")
    message_ts = text_field(container, "message_ts", required=False) or text_field(message, "ts", required=False)
    thread_ts = (text_field(container, "thread_ts", required=False) or text_field(message, "thread_ts", required=False)
                 or message_ts)
    user: dict[str, Any] = body["user"] if isinstance(body.get("user"), dict) else {}
    return Action(
        action_id=text_field(act, "action_id"),
        value=text_field(act, "value", required=False),
        user=text_field(body, "user", "id"),
        user_name=text_field(user, "name", required=False) or text_field(user, "username", required=False),
        channel=channel,
        message_ts=message_ts,
        thread_ts=thread_ts,
        trigger_id=text_field(body, "trigger_id", required=False),
        action_ts=text_field(act, "action_ts", required=False),
        ephemeral=bool(container.get("is_ephemeral")),
        message_text=_markdown_of(message.get("blocks")),
    )


def _markdown_of(blocks: Any) -> str:
    if not isinstance(blocks, list):
        return ""
    for b in blocks:
        if isinstance(b, dict) and b.get("type") == "markdown" and isinstance(b.get("text"), str):
            return b["text"]
    return ""


def message_thread(message: dict[str, Any]) -> tuple[str, str]:
    """(ts, thread ts) of a message; a top-level message is the root of its own thread."""
    ts = text_field(message, "ts")
    return ts, text_field(message, "thread_ts", required=False) or ts


def dedupe_key(body: dict[str, Any]) -> str | None:
    """What makes an inbound delivery unique: Events API event_id, else the interaction's trigger_id
    (slash commands, clicks, shortcuts, modal submissions), else a view's id and hash."""
    if isinstance(body.get("event_id"), str):
        return f"slack:event:{body['event_id']}"
    if isinstance(body.get("trigger_id"), str):
        return f"slack:trigger:{body['trigger_id']}"
    view = body.get("view")
    if isinstance(view, dict) and isinstance(view.get("id"), str):
        return f"slack:view:{view['id']}:{view.get('hash', '')}"
    return None
