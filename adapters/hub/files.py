"""Files people attach to a run: checked, saved durably in the run's workspace, then one inbox mail.

    a platform (files shared in a thread, attachments, the page's upload)
        │  Incoming(name, data | problem, content_type)   bytes already fetched by the platform
        ▼
    FileIntake.attach ── refuse: empty, unreadable, over max_upload_mb / max_run_upload_mb, a name
        │                that climbs out of the inbox — nothing saved, the person told why
        ├─ save: <workspace>/inbox/<safe name>, written to a temporary file, fsync'd, linked in under
        │        a free name (a suffix on collision), the directory fsync'd — before anyone hears "ok"
        └─ one mail: "📎 ana attached inbox/error.log (12.4 KB, text/plain)" per file + the words,
           submitted as `Send` (a live run: receipts as for any mail) or `Continue` (an ended run: the
           files go with the words that start its next round). A refused mail removes the
           files it named, so a refusal never leaves anything behind.

FileIntake (the intent's handler) is in intake.py; this module holds the values and the pure rules.
The page's "which files does this run have" and "give me that one" are answered by workspace.py.
"""

from __future__ import annotations

import contextlib
import os
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.hub.results import IntentResult
from adapters.hub.settings import UploadLimits
from adapters.hub.workspace import INBOX, inside, workspace_files
from adapters.view.shares import human_size

__all__ = ["INBOX", "Attached", "Incoming", "SavedFile", "UploadLimits", "UploadRefused", "human_size", "inside",
           "safe_name", "workspace_files"]

NAME_MAX = 120  # characters of a saved name; file systems take 255 bytes, UTF-8 needs up to 4 a character


class UploadRefused(Exception):
    """Why a set of files is not taken, said to the person; `too_large`: over a size limit (HTTP 413)."""

    def __init__(self, reason: str, *, too_large: bool = False) -> None:
        super().__init__(reason)
        self.too_large = too_large


@dataclass(frozen=True)
class Incoming:
    """One file as a platform fetched it. `data` None: it was not read — `size` says it is too big (as the
    platform announced it, or as far as the download got before it stopped), else `problem` says why."""

    name: str
    data: bytes | None
    content_type: str = ""
    problem: str = ""
    size: int = -1

    @property
    def length(self) -> int:
        return len(self.data) if self.data is not None else self.size


@dataclass(frozen=True)
class SavedFile:
    name: str  # the safe name it was saved under
    path: str  # relative to the workspace: "inbox/<name>"
    size: int
    content_type: str


@dataclass(frozen=True)
class Attached(IntentResult):
    """An intent's result that also names the files saved (none on a refusal). `problem` says what kind
    of refusal it was: "too_large", "bad_file" (empty, unreadable, a bad name), else "" (the hub's own)."""

    files: tuple[SavedFile, ...] = field(default_factory=tuple)
    problem: str = ""

    @classmethod
    def of(cls, result: IntentResult, files: Sequence[SavedFile] = (), problem: str = "") -> Attached:
        return cls(result.ok, result.message, result.run_id, result.needs_input, result.duplicate, result.told,
                   files=tuple(files), problem=problem)


# ---- pure rules --------------------------------------------------------------------------------------
def safe_name(raw: str) -> str:
    """The name a file is saved under: its last path part, without control characters or `..`, never
    hidden, at most NAME_MAX characters with its suffix kept. A name that climbs (`../x`, `/etc/x`) is
    refused: no honest client sends one."""
    parts = raw.replace("\\", "/").split("/")
    if raw.startswith(("/", "\\")) or ".." in parts or (len(raw) > 1 and raw[1] == ":" and raw[0].isalpha()):
        raise UploadRefused(f"the file name {shown_name(raw)} points outside the inbox")
    name = "".join(c for c in parts[-1] if unicodedata.category(c)[0] != "C")  # control, format, unassigned
    while ".." in name:
        name = name.replace("..", ".")
    name = name.strip().lstrip(".").strip() or "file"
    if len(name) > NAME_MAX:
        _stem, dot, suffix = name.rpartition(".")
        keep = "." + suffix if dot and 0 < len(suffix) <= 16 else ""
        name = name[:NAME_MAX - len(keep)] + keep
    return name


def shown_name(raw: str) -> str:
    """A name as a refusal quotes it (printable, short)."""
    clean = "".join(c if c.isprintable() else "?" for c in raw)
    return repr(clean[:80])


def check(files: Sequence[Incoming], limits: UploadLimits, used: int) -> None:
    """Refuse the whole set when any file is unreadable, empty or too big, or when the set would take the
    run's inbox over its limit (`used`: what it holds already)."""
    if not files:
        raise UploadRefused("no file came with the message")
    total = 0
    for f in files:
        what = shown_name(f.name)
        safe_name(f.name)
        if f.length > limits.max_file_bytes:
            size = f"is {human_size(f.length)}," if f.data is not None else "is"  # (a download cut short)
            raise UploadRefused(f"{what} {size} over the {human_size(limits.max_file_bytes)} limit for one file; "
                                "nothing was saved", too_large=True)
        if f.data is None:
            raise UploadRefused(f"{what} could not be read: {f.problem or 'no content'}; nothing was saved")
        if not f.data:
            raise UploadRefused(f"{what} is empty (0 bytes); nothing was saved")
        total += len(f.data)
    if used + total > limits.max_run_bytes:
        raise UploadRefused(f"this run's inbox holds {human_size(used)}; {human_size(total)} more would pass its "
                            f"{human_size(limits.max_run_bytes)} limit; nothing was saved", too_large=True)


def mail_text(saved: Sequence[SavedFile], who: str, text: str) -> str:
    lines = [f"📎 {who} attached {s.path} ({human_size(s.size)}, {s.content_type or 'unknown type'})" for s in saved]
    words = text.strip()
    return "\n".join(lines) + (f"\n\n{words}" if words else "")


# ---- the disk ----------------------------------------------------------------------------------------
def inbox_used(workspace: Path) -> int:
    inbox = workspace / INBOX
    with contextlib.suppress(OSError):
        return sum(p.stat().st_size for p in inbox.iterdir() if p.is_file() and not p.is_symlink())
    return 0


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _candidates(name: str) -> list[str]:
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        stem, suffix = name, ""
    return [name] + [f"{stem}-{n}.{suffix}" if suffix else f"{stem}-{n}" for n in range(2, 1000)]


def save(workspace: Path, files: Sequence[Incoming]) -> list[SavedFile]:
    """Write every file durably under <workspace>/inbox (all or none: a failure removes those written)."""
    inbox = workspace / INBOX
    inbox.mkdir(parents=True, exist_ok=True)
    saved: list[SavedFile] = []
    try:
        for f in files:
            assert f.data is not None  # check() ran first
            temp = inbox / f".part-{uuid.uuid4().hex}"
            with open(temp, "xb") as out:
                out.write(f.data)
                out.flush()
                os.fsync(out.fileno())
            try:
                for candidate in _candidates(safe_name(f.name)):
                    try:
                        os.link(temp, inbox / candidate)  # atomic, and never replaces an existing file
                    except FileExistsError:
                        continue
                    saved.append(SavedFile(candidate, f"{INBOX}/{candidate}", len(f.data), f.content_type))
                    break
                else:
                    raise UploadRefused(f"the inbox already holds too many files named like {shown_name(f.name)}")
            finally:
                temp.unlink(missing_ok=True)
        _fsync_dir(inbox)
    except BaseException:
        remove(workspace, saved)
        raise
    return saved


def remove(workspace: Path, saved: Sequence[SavedFile]) -> None:
    for s in saved:
        with contextlib.suppress(OSError):
            (workspace / s.path).unlink()
