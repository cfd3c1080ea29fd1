"""share(path, note): the agent posts a file of its workspace into the conversation ("here is the chart").

    model ── mcp__human__share {path, note} ──▶ resolve inside the workspace (symlinks followed first)
                                                  │ outside, missing, not a file, empty: the tool result
                                                  │ says so (is_error) and nothing is emitted
                                                  ▼
             ◀── "shared" ────────────────  Event("ask", text=note, payload={"kind": "share", "id",
                                             "state": "shared", "path", "file", "name", "size"})

It is an `ask`-family event so that front ends that do not know it fall through their `else` branch;
`path` is relative to the workspace, `file` the resolved absolute path a front end reads to post it.
The workspace is the channel's `share_root`, which `Workflow.run` sets to the runtime's workspace.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from flower_core.events import Event
from flower_core.lang import Catalogue, catalogue

__all__ = ["SHARE_DESCRIPTION", "SHARE_SCHEMA", "resolve_share", "share"]

SHARE_DESCRIPTION = (
    "Post a file from your workspace into the conversation with the human (a report, a chart, a patch), "
    "with a short note saying what it is. Only files inside the workspace can be shared."
)
SHARE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file, relative to the workspace (or absolute inside it)."},
        "note": {"type": "string", "description": "One line for the human: what the file is."},
    },
    "required": ["path"],
}
NOTE_MAX = 2000

def resolve_share(root: Path, path: str, lang: Catalogue | None = None) -> tuple[Path | None, str]:
    """The file `path` names inside `root` (symlinks resolved before the check), or None and the
    model-facing reason (in ``lang``, the seed's by default)."""
    said = catalogue(lang)
    shown = path.strip() or "(empty path)"
    if not path.strip() or "\x00" in path:
        return None, said.fill("share.missing", path=shown)
    try:
        base = root.resolve(strict=True)
        target = (base / path.strip()).resolve(strict=False)
    except (OSError, RuntimeError):
        return None, said.fill("share.missing", path=shown)
    if not target.is_relative_to(base):
        return None, said.fill("share.outside", path=shown)
    if not target.is_file():
        return None, said.fill("share.missing", path=shown)
    if target.stat().st_size == 0:
        return None, said.fill("share.empty", path=shown)
    return target, ""


def share(root: Path | None, path: str, note: str, lang: Catalogue) -> tuple[str, Event | None]:
    """(the tool's reply, the share event to emit); no event when nothing is shared (the reply says why).
    ``root``: the channel's share_root (None: no workspace to share from)."""
    if root is None:
        return lang["share.no_root"], None
    target, problem = resolve_share(Path(root), path, lang)
    if target is None:
        return problem, None
    rel = target.relative_to(Path(root).resolve()).as_posix()
    note = (note or "").strip()[:NOTE_MAX]
    event = Event("ask", text=note or rel, payload={
        "kind": "share", "id": "s" + uuid.uuid4().hex[:10], "state": "shared", "path": rel, "file": str(target),
        "name": target.name, "size": target.stat().st_size, "note": note})
    return lang.fill("share.shared", path=rel), event
