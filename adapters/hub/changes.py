"""The run's files: what it created or changed in its workspace, on its summary card and, on request, in
the thread.

    run ends ──▶ changed(workspace, since)     a git workspace: `git status --porcelain` (+ `git diff
        │                                      --stat HEAD`); else files modified since the run began.
        │                                      inbox/ (what people attached) is not the run's work, nor
        ▼                                      the framework's bookkeeping (workspace.Bookkeeping: .flower/).
    summary card + "📦 4 files changed: report.md, src/cli.py, …" and a **Files** button (fl1:fil:<run>)
        │ click (who may answer the run may see its files)
        ▼
    post_files ──▶ one message per file with it attached (at most MAX_FILES, none over MAX_FILE_BYTES),
                   a git workspace's patch as one `changes.diff`, and a line listing the rest with the reason
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

from adapters.access import Access
from adapters.hub.outboxes import Outboxes
from adapters.hub.results import IntentResult, Refuse
from adapters.hub.workspace import INBOX, Bookkeeping, inside, workspace_files
from adapters.ids import encode
from adapters.platform import ThreadRef
from adapters.platform.messages import Button, FileRef, OutMessage
from adapters.state import RunRecord
from adapters.view.shares import human_size

__all__ = ["Changes", "changed", "post_files", "with_changes"]

log = logging.getLogger(__name__)

GIT_S = 20.0  # a git command on a big checkout; past it the card lists no changes rather than wait
NAMED = 5  # paths named on the card
MAX_FILES = 10  # files uploaded per click (the strictest platform takes 10 a message)
MAX_FILE_BYTES = 8 * 1024 * 1024  # under the strictest platform's upload limit (10 MiB)
DIFF_MAX = 4 * 1024 * 1024


@dataclass(frozen=True)
class Changes:
    paths: list[str] = field(default_factory=list)  # relative to the workspace
    stat: str = ""  # `git diff --stat` when the workspace is a git repository
    git: bool = False

    def line(self) -> str:
        if not self.paths:
            return ""
        shown = ", ".join(self.paths[:NAMED]) + (", …" if len(self.paths) > NAMED else "")
        return f"📦 {len(self.paths)} file{'s' if len(self.paths) != 1 else ''} changed: {shown}"


async def _git(workspace: Path, *args: str) -> str | None:
    """A git command's output (None: not a repository, no git, or it took too long)."""
    try:
        proc = await asyncio.create_subprocess_exec("git", "-C", str(workspace), *args,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), GIT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None
    return out.decode("utf-8", "replace") if proc.returncode == 0 else None


def _the_runs(path: str, rule: Bookkeeping) -> bool:
    return not path.startswith(INBOX + "/") and not rule.holds(path)


async def changed(workspace: Path, since: float, rule: Bookkeeping | None = None) -> Changes:
    """What the run created or changed, the framework's bookkeeping (`rule`) left out (never raises: an
    unreadable workspace has no changes)."""
    rule = rule if rule is not None else Bookkeeping()
    if not workspace.is_dir():
        return Changes()
    top = await _git(workspace, "rev-parse", "--show-toplevel")
    # Only a workspace that is a repository's root: one inside a bigger checkout is not the run's to report.
    own = top is not None and Path(top.strip()).resolve() == workspace.resolve()
    status = await _git(workspace, "status", "--porcelain=v1", "-z", "--untracked-files=all") if own else None
    if status is not None:
        paths = []
        for entry in status.split("\0"):
            if len(entry) > 3 and entry[2] == " ":
                paths.append(entry[3:])
        stat = await _git(workspace, "diff", "--stat", "HEAD", "--", *rule.pathspecs()) or ""
        return Changes(sorted(p for p in paths if _the_runs(p, rule) and not p.endswith("/")), stat.strip(),
                       git=True)
    try:
        listed = await asyncio.to_thread(workspace_files, workspace, since, rule=rule)
    except OSError:
        return Changes()
    return Changes(sorted(str(f["path"]) for f in listed if f["changed"] and _the_runs(str(f["path"]), rule)))


def with_changes(msgs: list[OutMessage], changes: Changes, run_id: str) -> list[OutMessage]:
    """The summary among `msgs`, with the changed-files line (and the diff stat), a Files button and
    "Undo changes…" (undo.py)."""
    if not changes.paths:
        return msgs
    text = changes.line() + (f"\n```\n{changes.stat[-1500:]}\n```" if changes.stat else "")
    buttons = [Button("Files", encode("fil", run_id)), Button("Undo changes…", encode("undo", run_id))]
    return [dataclasses.replace(m, text=f"{m.text}\n\n{text}", buttons=[*m.buttons, *buttons])
            if m.kind == "summary" else m for m in msgs]
async def post_files(record: RunRecord, user: str, where: ThreadRef | None, *, access: Access, refuse: Refuse,
                     outboxes: Outboxes) -> IntentResult:
    """The Files button: the run's changed files into the thread the click came from."""
    run_id, thread = record.run_id, where or record.thread
    decision = access.can_answer(record, user)
    if not decision:
        return await refuse(thread, user, f"You cannot see run {run_id}'s files: {decision.reason}.", run_id)
    workspace = Path(record.workspace)
    rule = Bookkeeping.of(workspace, record.run_dir)
    changes = await changed(workspace, record.created_at, rule)
    if not changes.paths:
        return await refuse(thread, user, f"Run {run_id} changed no files in its workspace.", run_id)
    msgs: list[OutMessage] = []
    left: list[str] = []
    for rel in changes.paths:
        found = inside(workspace, rel)
        size = found.stat().st_size if found is not None else -1
        if found is None or size <= 0:
            left.append(f"{rel} (deleted or empty)")
        elif size > MAX_FILE_BYTES:
            left.append(f"{rel} ({human_size(size)}: over {human_size(MAX_FILE_BYTES)})")
        elif len(msgs) >= MAX_FILES:
            left.append(f"{rel} (more than {MAX_FILES} files)")
        else:
            msgs.append(OutMessage(f"files:{run_id}:{rel}", "notice", f"📎 {rel} ({human_size(size)})",
                                   replace=False, attachment=FileRef(str(found), found.name, size, rel, run_id)))
    if changes.git and (diff := await _git(workspace, "diff", "HEAD", "--", *rule.pathspecs())):
        patch = diff.encode("utf-8")[:DIFF_MAX]
        msgs.append(OutMessage(f"files:{run_id}:diff", "notice", f"📎 changes.diff ({human_size(len(patch))})",
                               replace=False, attachment=FileRef("", "changes.diff", len(patch), content=patch)))
    if left:
        msgs.append(OutMessage(f"files:{run_id}:left", "notice", "Not uploaded: " + "; ".join(left[:30]),
                               replace=False))
    await outboxes.say(thread, msgs)
    return IntentResult(True, f"Posted {len(msgs) - (1 if left else 0)} file(s) of run {run_id}.", run_id)
