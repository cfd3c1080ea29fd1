"""Workbench: the on-disk desk a run keeps beside the workspace (notes, artifacts, scripts).

Long-horizon runs lose context at every step boundary and handoff; what must survive is written
here. The brief, the goal and the Q&A log live in ``notes/``; long outputs go to ``artifacts/``;
scripts worth running twice go to ``scripts/``. ``INDEX.md`` lists what is on the desk.
"""

from __future__ import annotations

import re
from pathlib import Path

from flower_core.lang import Catalogue, catalogue

DIRNAME = ".flower"
INDEX_NAME = "INDEX.md"
_DESC = re.compile(r"^\s*(?:#|//|--)\s*desc:\s*(.+)$", re.I)


class Workbench:
    """Paths of one run's desk; ``<workspace>/.flower`` unless ``home`` says otherwise."""

    def __init__(self, workspace: str | Path, home: str | Path | None = None, *, brief_name: str | None = None,
                 goal_name: str | None = None, qa_name: str | None = None,
                 language: str | Catalogue | None = None) -> None:
        # The notes' names are the language's (flower_core/lang/: the seed's 需求.md / 目标.md / 问答记录.md
        # unless told otherwise); a name given here wins.
        said = catalogue(language)
        self.workspace = Path(workspace).resolve()
        self.root = Path(home).resolve() if home is not None else self.workspace / DIRNAME
        self.brief_name = brief_name or said["note.brief"]
        self.goal_name = goal_name or said["note.goal"]
        self.qa_name = qa_name or said["note.qa"]
        self.handoff_prefix = said["note.handoff_prefix"]  # <notes>/<prefix><step>.md (runtime/handoff.py)
        self.handoff_archive = said["note.handoff_archive"]  # notes/archive/<this>/ keeps older ones

    def __repr__(self) -> str:
        return f"Workbench({str(self.root)!r})"

    # -- paths -----------------------------------------------------------------------------
    @property
    def notes(self) -> Path:
        return self.root / "notes"

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    @property
    def scripts(self) -> Path:
        return self.root / "scripts"

    @property
    def brief(self) -> Path:
        return self.notes / self.brief_name

    @property
    def goal(self) -> Path:
        return self.notes / self.goal_name

    @property
    def qa_log(self) -> Path:
        return self.notes / self.qa_name

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_NAME

    @property
    def external(self) -> bool:
        """True when the desk lives outside the workspace (agents then need absolute paths)."""
        return not self.root.is_relative_to(self.workspace)

    def show(self, path: Path) -> str:
        """How a path is shown to a model: relative inside the workspace, absolute outside."""
        p = path.resolve()
        return str(p.relative_to(self.workspace)) if p.is_relative_to(self.workspace) else str(p)

    # -- disk ------------------------------------------------------------------------------
    def ensure(self) -> Workbench:
        """Create the three directories; returns self so ``Workbench(ws).ensure()`` chains."""
        for d in (self.notes, self.artifacts, self.scripts):
            d.mkdir(parents=True, exist_ok=True)
        return self

    def refresh(self) -> str:
        """Create the directories and rewrite INDEX.md; returns the index text."""
        self.ensure()
        text = self._index()
        try:
            self.index_path.write_text(text, encoding="utf-8")
        except OSError:
            pass  # the index is a convenience; a read-only desk must not stop a run
        return text

    def scan(self, directory: Path) -> list[tuple[str, str, int]]:
        """(shown path, one-line description, bytes) of each non-hidden file under directory."""
        out: list[tuple[str, str, int]] = []
        if not directory.is_dir():
            return out
        for p in sorted(directory.rglob("*")):
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(directory).parts):
                out.append((self.show(p), _describe(p), p.stat().st_size))
        return out

    def prompt_block(self) -> str:
        """A short system-prompt section: where the desk is and the three rules of using it."""
        where = "(absolute paths: the desk is outside the workspace)" if self.external else ""
        lines = [
            f"## Workbench {self.show(self.root)} {where}".rstrip(),
            f"- notes: {self.show(self.notes)} (brief {self.brief_name}, goal {self.goal_name}, "
            f"Q&A log {self.qa_name}; one file per key decision)",
            f"- artifacts: {self.show(self.artifacts)} (any output longer than 2000 characters goes here; "
            "reply with the path and the conclusion only)",
            f"- scripts: {self.show(self.scripts)} (scripts worth running again; first line `# desc: ...`)",
        ]
        return "\n".join(lines)

    def _index(self) -> str:
        parts = [f"# Workbench index\n\nroot: {self.root}\n"]
        for title, d in (("notes", self.notes), ("artifacts", self.artifacts), ("scripts", self.scripts)):
            parts.append(f"## {title}")
            entries = self.scan(d)
            parts.extend(f"- {shown} ({size} B){' — ' + desc if desc else ''}" for shown, desc, size in entries)
            if not entries:
                parts.append("- (empty)")
            parts.append("")
        return "\n".join(parts)


def _describe(path: Path) -> str:
    """A script's ``# desc:`` line (first 8 lines), else the first heading or comment line."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            head = [fh.readline() for _ in range(8)]
    except OSError:
        return ""
    for line in head:
        m = _DESC.match(line)
        if m:
            return m.group(1).strip()[:100]
    for line in head:
        s = line.strip()
        if s.startswith(("#", "//", "--")) and not s.startswith("#!"):
            return s.lstrip("#/- ").strip()[:100]
    return ""
