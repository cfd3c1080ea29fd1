"""What Discord refuses in a message or a modal, so the double refuses it too (400, code 50035/50006).

Limits from Discord's API reference: content 2,000 characters; up to 10 embeds, title 256,
description 4,096, 25 fields (name 256, value 1,024), 6,000 characters in all; up to 5 action rows
of up to 5 buttons, custom_id 1..100 and unique, label up to 80; a modal's title up to 45 and
1..5 top-level components, a label's text up to 45.
"""

from __future__ import annotations

from typing import Any


def _invalid(why: str) -> dict[str, Any]:
    return {"message": f"Invalid Form Body: {why}", "code": 50035}


def check_message(body: dict[str, Any] | None) -> dict[str, Any] | None:
    """None when Discord would accept this message body, else its error JSON."""
    if body is None:
        return _invalid("no JSON body")
    content = body.get("content") or ""
    embeds = body.get("embeds") or []
    components = body.get("components") or []
    if len(content) > 2000:
        return _invalid(f"content: must be 2000 or fewer in length (got {len(content)})")
    if not content.strip() and not embeds and not components:
        return {"message": "Cannot send an empty message", "code": 50006}
    if len(embeds) > 10:
        return _invalid("embeds: at most 10")
    total = 0
    for e in embeds:
        title, desc = e.get("title") or "", e.get("description") or ""
        fields = e.get("fields") or []
        if len(title) > 256 or len(desc) > 4096 or len(fields) > 25:
            return _invalid("embed title/description/fields over their limits")
        for f in fields:
            if not f.get("name") or not f.get("value") or len(f["name"]) > 256 or len(f["value"]) > 1024:
                return _invalid(f"embed field {f!r} empty or too long")
        footer = (e.get("footer") or {}).get("text") or ""
        if len(footer) > 2048:
            return _invalid("embed footer over 2048")
        total += len(title) + len(desc) + len(footer) + sum(len(f["name"]) + len(f["value"]) for f in fields)
    if total > 6000:
        return _invalid(f"embeds total {total} over 6000")
    return _check_rows(components)


def _check_rows(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if len(rows) > 5:
        return _invalid(f"components: at most 5 action rows (got {len(rows)})")
    seen: set[str] = set()
    for row in rows:
        items = row.get("components") or []
        if row.get("type") != 1 or not 1 <= len(items) <= 5:
            return _invalid("components: an action row holds 1 to 5 buttons")
        for b in items:
            cid, label = b.get("custom_id") or "", b.get("label") or ""
            if b.get("type") == 2 and b.get("style") != 5 and not 1 <= len(cid) <= 100:
                return _invalid(f"custom_id must be 1..100 characters: {cid!r}")
            if len(label) > 80:
                return _invalid(f"button label over 80: {label!r}")
            if cid in seen:
                return _invalid(f"custom_id used twice: {cid!r}")
            seen.add(cid)
    return None


def check_modal(data: dict[str, Any]) -> dict[str, Any] | None:
    title, components = data.get("title") or "", data.get("components") or []
    if not data.get("custom_id") or not 1 <= len(title) <= 45 or not 1 <= len(components) <= 5:
        return _invalid("modal: custom_id, a title of 1..45 and 1..5 components")
    for c in components:
        if c.get("type") == 18:
            if not 1 <= len(c.get("label") or "") <= 45 or len(c.get("description") or "") > 100:
                return _invalid(f"modal label text 1..45, description up to 100: {c.get('label')!r}")
            inner = c.get("component") or {}
        elif c.get("type") == 1:
            inner = (c.get("components") or [{}])[0]
        else:
            continue  # text displays and the like carry no input
        if not inner.get("custom_id"):
            return _invalid("modal input without custom_id")
        if inner.get("type") == 4 and len(inner.get("placeholder") or "") > 100:
            return _invalid("text input placeholder over 100")
    return None
