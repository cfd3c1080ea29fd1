"""One-off messages: inbox receipts, handoff/retry/error/reset notices, interrupts, the oracle.

Each function returns an OutMessage; the run view decides keys (which notices are edited in place)
and when to send them.
"""

from __future__ import annotations

import adapters.view.fmt as fmt
from adapters.platform import OutMessage
from flower_core.payloads import BudgetPayload, HandoffPayload, ResetPayload, StepPayload


def receipt(key: str, text: str, state: str, *, by: str = "", amended: bool = False,
            who: fmt.Who = fmt.plain_who, origin: str = "", only_in: str = "") -> OutMessage:
    """Inbox mail: queued (the agent will read it at its next check) -> delivered (it read it)."""
    sender = f" from {who(by)}" if by else ""
    if state == "delivered":
        head = f"📬 Delivered to the agent{sender}"
    else:
        head = f"📨 Queued for the agent{sender} — it reads its inbox at the next checkpoint"
    tail = "\n(also added to the brief)" if amended else ""
    return OutMessage(key, "receipt", f"{head}: {fmt.quote(text, 500)}{tail}", replace=True, origin=origin,
                      only_in=only_in, state="delivered" if state == "delivered" else "queued")


def handoff(key: str, h: HandoffPayload, text: str, window: int) -> OutMessage:
    phase = h.phase
    level = f"{fmt.tokens(h.context)}/{fmt.tokens(h.window or window)}"
    if phase == "near":
        body = f"🌡️ Context {level} — a handoff to a fresh session is coming up"
    elif phase == "writing":
        body = f"✍️ Context {level} — the agent is writing a handoff document for its successor"
    elif phase == "done":
        body = "🔁 A fresh session took over"
        if h.path:
            body += f"; handoff document: {h.path}"
        if h.degraded:
            body += " (degraded: the handoff could not be written in full)"
    else:
        body = f"🔁 Handoff: {fmt.one_line(text, 300)}"
    return OutMessage(key, "notice", body, replace=True)


def trouble(key: str, *, retries: int, last_error: str, last_retry: str) -> OutMessage:
    """API errors and retries of one streak, folded into one notice edited in place."""
    lines = []
    if last_error:
        lines.append(f"⚠️ API error: {fmt.one_line(last_error, 300)}")
    if retries:
        lines.append(f"🔄 Retrying (attempt {retries + 1}): {fmt.one_line(last_retry, 300)}")
    return OutMessage(key, "notice", "\n".join(lines) or "⚠️ trouble", replace=True)


def reset(key: str, r: ResetPayload, text: str) -> OutMessage:
    pre, post = r.pre_tokens, r.post_tokens
    if pre or post:
        body = f"🗜️ Context compacted: {fmt.tokens(pre)} → {fmt.tokens(post)}; the agent now works from a summary"
    else:
        body = f"🗜️ Context reset: {fmt.one_line(text, 200)}"
    return OutMessage(key, "notice", body, replace=False)


def step(key: str, name: str, s: StepPayload) -> OutMessage:
    note = ""
    if s.round > 1:
        note = f" — round {s.round}, the same conversation goes on"
    elif s.reused:
        note = " — already finished before, reused"
    elif s.woke:
        note = " — picking up where it was cut off"
    elif s.resumed:
        note = " — continuing a session"
    return OutMessage(key, "notice", f"➡️ Step {s.position}: {name}{note}", replace=False)


def interrupt(key: str, by: str, text: str, who: fmt.Who = fmt.plain_who) -> OutMessage:
    said = f": {fmt.quote(text, 500)}" if text.strip() else " (no message)"
    return OutMessage(key, "notice", f"⏸️ {who(by)} interrupted the agent{said}\nIt stops at the next message "
                      "boundary and resumes the same session; a subagent in flight loses its unfinished work.",
                      replace=False)


def line(key: str, text: str, *, replace: bool = False) -> OutMessage:
    return OutMessage(key, "notice", text, replace=replace)


def oracle(key: str, question: str, answer: str | None, by: str, who: fmt.Who = fmt.plain_who) -> OutMessage:
    body = f"Q: {fmt.one_line(question, 500)}\n\n" + (fmt.clip(answer, 6000) if answer is not None
                                                       else "_thinking… (the run is not disturbed)_")
    return OutMessage(key, "oracle", body, title=f"🔮 Oracle — asked by {who(by)}", replace=True)


def budget(key: str, b: BudgetPayload) -> OutMessage:
    """The cost cap moved: raised (the run goes on), or the run stopped at it (or refused to start)."""
    phase = b.phase
    cap = b.cap if b.cap is not None else 0.0
    if phase == "raised":
        body = f"💰 Cost cap raised to {fmt.money(cap)} — the run goes on in the same session"
        if b.note:
            body += f"; the agent hears: {fmt.quote(b.note, 300)}"
        return OutMessage(key, "notice", body, replace=False)
    note = b.note or "stopped at the cost cap"
    icon = "⛔" if phase == "refused" else "⏹️"
    return OutMessage(key, "notice", f"{icon} {note[:1].upper()}{note[1:]}", replace=False, tone="danger")
