"""What /proc says about a process, for the benchmarks' memory figures (Linux)."""

from __future__ import annotations


def rss_kb(pid: int | str = "self") -> int:
    """VmRSS of a process in kB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
