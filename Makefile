# gridstudy: two commands. `make demo` sets everything up and starts a demo study;
# `make test` sets everything up and runs the whole suite. Every step a fresh machine
# needs is here, so nothing has to be installed by hand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CHROMIUM := /usr/bin/chromium
XVFB := /usr/bin/Xvfb
REDIS := /usr/bin/redis-server
NGINX := /usr/sbin/nginx
POSTGRES := $(firstword $(wildcard /usr/lib/postgresql/*/bin/postgres) /usr/lib/postgresql/bin/postgres)
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)
HOST ?= 127.0.0.1
PORT ?= 5000

.PHONY: demo test setup lint bench clean screenshots

demo: setup
	$(BIN)/gridstudy demo --host $(HOST) --port $(PORT)

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

setup: $(VENV)/.installed node_modules/.installed $(CHROMIUM) $(XVFB) $(REDIS) $(NGINX) $(POSTGRES)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

node_modules/.installed: package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

# Browser tests drive Debian's Chromium through Playwright; install it when missing.
$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium

# The debugger window's tests open it on a real X server; install Xvfb when missing.
$(XVFB):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq xvfb

# Several workers (`gridstudy serve --workers N`, its tests and bench.load --workers) run
# behind nginx, over PostgreSQL and Redis; install Debian's packages when missing.
$(REDIS):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server

$(NGINX):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx-light

$(POSTGRES):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql

# The README's pictures, taken by the browser tests (never by hand).
screenshots: setup $(CHROMIUM)
	GRIDSTUDY_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -q -p no:cacheprovider \
	  tests/e2e/test_walkthrough.py tests/e2e/test_participant_signals.py \
	  tests/e2e/test_dashboard_browser.py

lint: setup
	$(BIN)/ruff check .

bench: setup
	for b in bench/*.py; do n=$$(basename $$b .py); [ $$n = __init__ ] || $(BIN)/python -m bench.$$n; done

clean:
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache
