"""How `flower-bot` and `flower-worker` log: text lines for a person, or JSON lines for a log pipeline.

    2026-12-01 22:22:20,184 INFO flower.bot: flower-bot ready: web · …                      (--log-format text)
    {"time": "2026-12-01T22:22:20.184Z", "level": "INFO", "logger": "flower.bot", "message": "…"}   (json)

A line logged on behalf of a run (inside its task, or a task it started) carries `"run_id"` in JSON,
read from the context variable the run engine sets (adapters/ops/runlog.py).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable

from adapters.ops.runlog import RUN_ID

__all__ = ["TEXT_FORMAT", "JsonFormatter", "setup_logging"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines inside a message are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line: dict[str, object] = {"time": f"{stamp}.{int(record.msecs):03d}Z", "level": record.levelname,
                                   "logger": record.name, "message": record.getMessage()}
        run_id = getattr(record, "run_id", None) or RUN_ID.get()
        if run_id:
            line["run_id"] = run_id
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        elif record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def setup_logging(fmt: str, *, verbose: bool, quiet: Iterable[str] = ()) -> logging.Handler:
    """The root logger writes to stderr in `fmt` ("text" or "json"); the `quiet` loggers (library
    chatter) stay at warnings unless `verbose`. Returns the handler (the shutdown adds its filter there)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for name in quiet:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
    return handler
