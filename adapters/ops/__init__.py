"""Operations: is the process up and ready (health.py), what it is doing (metrics.py), which run a log
line is about (runlog.py), its CLI child processes (procs.py), and the HTTP endpoints for all of it
(http.py) — mounted on the web page's port, or served alone on a loopback health port.

Import the modules themselves: this package imports nothing, so the run engine can use runlog.py
without pulling in the rest (which depends on the engine)."""
