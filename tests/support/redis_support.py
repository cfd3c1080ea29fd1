"""A throwaway redis-server for tests: loopback only, its own directory, every write fsynced to the AOF."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

_START_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 10.0


def redis_server_binary() -> str | None:
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """``start()`` / ``stop()`` / ``restart()`` / ``kill()`` one redis-server on 127.0.0.1.

    ``restart()`` keeps the port and the directory, so clients reconnect to the same URL and the
    server reloads what the append-only file holds (``appendfsync always``: nothing acknowledged is lost).
    """

    def __init__(self, directory: str | Path | None = None, *, binary: str | None = None) -> None:
        found = binary or redis_server_binary()
        if found is None:
            raise FileNotFoundError("redis-server not found on PATH")
        self.binary = found
        self._own_dir = directory is None
        self.dir = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="flower-redis-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = self.dir / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        if self.proc is not None and self.proc.poll() is None:
            return self
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--protected-mode", "yes",
                "--dir", str(self.dir), "--save", "", "--appendonly", "yes", "--appendfsync", "always",
                "--daemonize", "no", "--logfile", str(self._log)]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + _START_TIMEOUT_S
        probe = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {self._tail()}")
                try:
                    if probe.ping():
                        return
                except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"redis-server did not answer PING in {_START_TIMEOUT_S}s: {self._tail()}")
                time.sleep(0.02)  # poll interval of the readiness loop, bounded by the deadline above
        finally:
            probe.close()

    def _tail(self) -> str:
        try:
            return " | ".join(self._log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM (redis flushes the AOF and exits), SIGKILL if it does not within the timeout."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=_STOP_TIMEOUT_S)

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=_STOP_TIMEOUT_S)

    def restart(self) -> RedisServer:
        self.stop()
        return self.start()

    def cleanup(self) -> None:
        """Stop, and remove the directory when this object made it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
