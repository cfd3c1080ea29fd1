"""A file the agent shared (`share` on the human channel): one message with the file attached.

The event is an `ask` with `payload.kind == "share"`: `path` (relative to the workspace), `file` (the
resolved absolute path), `name`, `size`, `note`. The message's text names the file and its size and
carries the note, so a platform that cannot upload still says what was shared.
"""

from __future__ import annotations

import adapters.view.fmt as fmt
from adapters.platform.messages import FileRef, OutMessage
from flower_core.payloads import SharePayload

__all__ = ["NOTE_MAX", "beside_path", "human_size", "shared"]

NOTE_MAX = 1500  # below every platform's text limit, so the message is never split (and uploaded twice)


def human_size(n: int) -> str:
    """12700 -> "12.4 KB"; whole bytes below a kilobyte."""
    if n < 1024:
        return f"{n} B"
    size, unit = n / 1024, "KB"
    for bigger in ("MB", "GB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"


def beside_path(path: str) -> str:
    """"plans/plan-1.md" for a file the framework wrote in a folder beside the run (a whole plan, a whole
    diff): its folder and name, as the web API's download route for such files names it."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else ""


def shared(run_id: str, share: SharePayload) -> OutMessage | None:
    """The message for a share event (None when the payload names no file)."""
    path, file = share.path, share.file
    if not path or not file:
        return None
    size = share.size
    name = share.name or path.rsplit("/", 1)[-1]
    note = fmt.one_line(share.note, NOTE_MAX)
    text = f"📎 {path} ({human_size(size)})" + (f"\n{note}" if note else "")
    return OutMessage(key=f"share:{share.id or path}", kind="notice", text=text, important=True, replace=False,
                      attachment=FileRef(file, name, size, rel=path, run_id=run_id))
