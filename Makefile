# Two entry points: `make demo` (the bot with its web page on the offline demo model) and `make test`
# (lint, types, tests).
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Three pytest workers on two cores: most tests wait on a CLI subprocess or a socket, and with two workers a
# third of the CPU time went unused (user+sys 12 min in a 9 min run); a third worker fills those waits.
PYTEST_ARGS ?= -n 3

.PHONY: demo terminal-demo test lint types pytest chromium redis bench clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/flower-bot web --demo $(DEMO_ARGS)

terminal-demo: $(STAMP)
	$(BIN)/flower demo

lint: $(STAMP)
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) chromium redis
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# The web page's browser test drives Debian's headless Chromium; install it where apt-get can.
chromium:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -q && apt-get install -y chromium chromium-driver; } || \
		echo "could not install chromium (not root?): the browser test will be skipped"; fi

# The Redis store's tests start their own redis-server on a loopback port (tests/support/redis_support.py); only the
# binary is needed. No service is started or relied on (containers here have no systemd).
redis:
	@if [ ! -x /usr/bin/redis-server ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -q && apt-get install -y --no-install-recommends redis-server; } || \
		echo "could not install redis-server (not root?): the Redis store tests will fail"; fi

test: lint types pytest

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
