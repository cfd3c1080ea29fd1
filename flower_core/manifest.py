"""manifest.json: the books of which steps each run executed, shared safely by several processes.

Append semantics: every write re-reads the file under an exclusive ``flock`` on a sidecar
``.lock`` file, replaces this run's rows with the in-memory copy, keeps every other run's rows,
and swaps the result in atomically (temp file + ``os.replace``). Two Runtimes sharing a run_dir
therefore never lose each other's rows — as long as their run ids differ.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

RUN_FIELD = "run"


class Manifest:
    """The rows of one run (``run_id``) inside a manifest file that other runs may share.

    Opening an existing file adopts the rows already recorded under ``run_id``, so a process that
    restarts with the same run id continues its books instead of wiping them.
    """

    def __init__(self, path: str | Path, run_id: str) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._mutex = threading.Lock()
        with self._mutex, self._flock():
            self._own = [r for r in self._read() if r.get(RUN_FIELD) == run_id]

    @contextmanager
    def _flock(self, wait_s: float | None = None) -> Iterator[None]:
        with open(self.lock_path, "a+") as fh:
            if wait_s is None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            else:
                _flock_within(fh.fileno(), wait_s)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _read(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text) if text.strip() else []
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, list):
            # Never overwrite what we cannot read: keep it beside the manifest and start clean.
            os.replace(self.path, self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}"))
            return []
        return [r for r in data if isinstance(r, dict)]

    def _write(self, rows: list[dict[str, Any]]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(rows, fh, ensure_ascii=False, indent=2, default=str)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with suppress(OSError):  # keep the original exception; only tidy the temp file
                os.unlink(tmp)
            raise

    def _merge(self, disk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Other runs' rows in their order; ours where our first row was, else at the end."""
        out: list[dict[str, Any]] = []
        placed = False
        for row in disk:
            if row.get(RUN_FIELD) != self.run_id:
                out.append(row)
            elif not placed:
                out.extend(self._own)
                placed = True
        if not placed:
            out.extend(self._own)
        return out

    def record(self, row: dict[str, Any], *, index: int | None = None, wait_s: float | None = None) -> int:
        """Add ``row`` (or replace this run's row ``index``) and write; returns the row's index.

        The row is copied and stamped with ``run = run_id``. ``wait_s`` bounds the wait for the locks
        (TimeoutError past it): a signal handler that interrupted a write in progress must not deadlock.
        """
        stamped = {**row, RUN_FIELD: self.run_id}
        if not self._mutex.acquire(timeout=-1 if wait_s is None else wait_s):
            raise TimeoutError(f"manifest {self.path} is busy")
        try:
            with self._flock(wait_s):
                if index is None:
                    self._own.append(stamped)
                    index = len(self._own) - 1
                else:
                    self._own[index] = stamped
                self._write(self._merge(self._read()))
        finally:
            self._mutex.release()
        return index

    def own_rows(self) -> list[dict[str, Any]]:
        """This run's rows, as this object last wrote them."""
        with self._mutex:
            return [dict(r) for r in self._own]

    def rows(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Every row on disk now (all runs), or only ``run_id``'s."""
        with self._mutex, self._flock():
            rows = self._read()
        return rows if run_id is None else [r for r in rows if r.get(RUN_FIELD) == run_id]


def _flock_within(fd: int, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TimeoutError("manifest lock is busy") from None
            time.sleep(0.01)  # polling a file lock; only used on the bounded rescue path
