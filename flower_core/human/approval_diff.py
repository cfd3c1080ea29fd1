"""The whole change an Edit / MultiEdit / Write call would make, as a unified diff file beside the run.

An approval card previews a bounded number of diff lines; a person deciding on a large edit needs all of
it. The gate writes the whole diff (against the file as it is now, when it can be read) to
``<run_dir>/approvals/<id>-<name>.diff`` and names it in the ask's payload (``diff_file``,
``diff_lines``, ``diff_bytes``), so a front end can post it as a file with the card. Best effort: a file that cannot be
read or written only means no diff file.
"""

from __future__ import annotations

import difflib
import uuid
from pathlib import Path
from typing import Any

EDIT_TOOLS = ("Edit", "MultiEdit", "Write")
MAX_DIFF_BYTES = 5 * 1024 * 1024  # a diff past this is cut (and says so)
MAX_READ_BYTES = 20 * 1024 * 1024  # a file past this is not read: the diff is of the call's strings alone


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_READ_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _edited(text: str, old: str, new: str, every: bool) -> str | None:
    if not old or old not in text:
        return None
    return text.replace(old, new) if every else text.replace(old, new, 1)


def change(tool: str, args: dict[str, Any], cwd: str | Path) -> tuple[str, str, str] | None:
    """(path as the call names it, before, after) for an edit tool's call; None for any other call."""
    raw = args.get("file_path")
    if tool not in EDIT_TOOLS or not isinstance(raw, str) or not raw:
        return None
    path = Path(raw) if Path(raw).is_absolute() else Path(cwd) / raw
    current = _read(path) if path.is_file() else ""
    if tool == "Write":
        return raw, current or "", str(args.get("content") or "")
    edits = args.get("edits") if tool == "MultiEdit" else [args]
    pairs = [(str(e.get("old_string") or ""), str(e.get("new_string") or ""), bool(e.get("replace_all")))
             for e in edits or [] if isinstance(e, dict)]
    text = current
    for old, new, every in pairs:
        text = _edited(text, old, new, every) if text is not None else None
    if current is None or text is None:  # the file as it is could not be edited here: the strings alone
        return raw, "\n".join(o for o, _, _ in pairs), "\n".join(n for _, n, _ in pairs)
    return raw, current, text


def unified(name: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(text.encode()) > MAX_DIFF_BYTES:
        text = text.encode()[:MAX_DIFF_BYTES].decode(errors="ignore") + "\n… (the diff is cut here)\n"
    return text


def diff_facts(tool: str, args: dict[str, Any], cwd: str | Path, folder: Path | None) -> dict[str, Any]:
    """``{"diff_file", "diff_lines", "diff_bytes"}`` for an edit call whose whole diff went to ``folder``; {} else."""
    found = change(tool, args, cwd) if folder is not None else None
    if found is None or folder is None:
        return {}
    name, before, after = found
    text = unified(name.lstrip("/"), before, after)
    if not text:
        return {}
    path = folder / f"{uuid.uuid4().hex[:8]}-{Path(name).name}.diff"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        return {}
    return {"diff_file": str(path), "diff_lines": text.count("\n"), "diff_bytes": len(text.encode())}
