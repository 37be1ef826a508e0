# The two commands: `make run` and `make test` (README). Everything else is a helper.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
# The suite again on the newest Django 6.x, which needs Python >= 3.12 (the pins stay Django 5.2 LTS).
DJANGO6_VENV := .venv-django6
DJANGO6_STAMP := $(DJANGO6_VENV)/.installed

.PHONY: run test test-nonbrowser test-browser test-wire test-django6 django6 test-django6-nonbrowser test-django6-browser install chromium redis lint clean soak bench screenshots

# (A venv without pip is made again: Debian's python3 without python3-venv leaves .venv/bin/python and no pip.)
$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PIP) || $(PYTHON) -m venv --clear $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	DEBUG=$${DEBUG-1} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG-1} $(PY) manage.py seed_demo
	DEBUG=$${DEBUG-1} SECURE_SSL_REDIRECT=$${SECURE_SSL_REDIRECT-0} $(PY) -m config.serve

chromium:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: /usr/bin/chromium"; \
	elif [ "$$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	else $(VENV)/bin/playwright install chromium; fi

# The tests of the Redis event bus start redis-servers of their own (never the one on 6379).
redis:
	@if command -v redis-server >/dev/null; then echo "redis-server: $$(command -v redis-server)"; \
	elif [ "$$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq redis-server; \
	else echo "redis-server is missing: sudo apt-get install redis-server (the tests of the event bus need it)" >&2; exit 1; fi

# ruff, then mypy on the shipped packages (pyproject.toml, [tool.mypy]; DEBUG=1 only lets config.settings load).
# Two runs: everything but tests/agent, then the engine's own tests in a project of their own (tests/agent/settings.py:
# Django's contrib apps, agent and a toy app; nothing of config, accounts or blog; DATABASE_URL as the first run reads
# it), both measured by coverage.py; then one report of agent/ and blog/ (pyproject.toml; README, "Development").
test: $(STAMP) chromium redis
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DEBUG=1 $(VENV)/bin/mypy
	mkdir -p artifacts/coverage && $(VENV)/bin/coverage erase
	$(VENV)/bin/coverage run -m pytest -q $(PYTEST_ARGS)
	$(VENV)/bin/coverage run -m pytest -q --ds=tests.agent.settings $(PYTEST_ARGS)
	$(VENV)/bin/coverage combine -q
	$(VENV)/bin/coverage report
	$(VENV)/bin/coverage html -q

# `make test`'s suite in two halves, for CI (.ci/run): the tests that open no browser (the engine's own run
# with them), then the browser tests (tests/e2e); no lint, type check or coverage, which read the code, not the
# database, and ran in CI's first pass.
test-nonbrowser: $(STAMP) redis
	$(PY) -m pytest -q --ignore=tests/e2e $(PYTEST_ARGS)
	$(PY) -m pytest -q --ds=tests.agent.settings $(PYTEST_ARGS)

test-browser: $(STAMP) chromium redis
	$(PY) -m pytest -q tests/e2e $(PYTEST_ARGS)

# The recorded provider streams replayed through the real adapters (tests/agent/backends/test_wire_replay.py).
# They live outside the repository: WIRE_FIXTURES=/abs/path/to/fixtures/wire make test-wire (.ci/run does it
# when ../shared/fixtures/wire exists). Not part of `make test`.
test-wire: $(STAMP)
	@if [ -z "$(WIRE_FIXTURES)" ]; then echo "test-wire: set WIRE_FIXTURES to the recorded streams' directory (an absolute path)" >&2; exit 2; fi
	WIRE_FIXTURES="$(WIRE_FIXTURES)" $(PY) -m pytest -q --ds=tests.agent.settings tests/agent/backends/test_wire_replay.py $(PYTEST_ARGS)

# A Python >= 3.12 for Django 6: PYTHON_DJANGO6 if set, else the newest 3.12+ that pyenv has.
$(DJANGO6_STAMP): requirements.txt requirements-dev.txt
	@py="$${PYTHON_DJANGO6:-}"; \
	if [ -z "$$py" ] && command -v pyenv >/dev/null; then \
		v=$$(pyenv versions --bare | grep -E '^3\.(1[2-9]|[2-9][0-9])\.[0-9]+$$' | sort -V | tail -n 1); \
		if [ -n "$$v" ]; then py="$$(pyenv prefix "$$v")/bin/python3"; fi; \
	fi; \
	if [ -z "$$py" ]; then echo "test-django6: no Python >= 3.12 (install one with pyenv, or set PYTHON_DJANGO6)" >&2; exit 1; fi; \
	echo "test-django6: $$py"; \
	rm -rf $(DJANGO6_VENV) && "$$py" -m venv $(DJANGO6_VENV)
	$(DJANGO6_VENV)/bin/pip install --quiet --upgrade pip
	$(DJANGO6_VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

# The whole suite (lint and type check aside: the same code as `make test`, and django-stubs is the 5.2 line) on
# SQLite with the newest Django 6.x, in the same two halves as test-nonbrowser and test-browser.
test-django6: test-django6-nonbrowser test-django6-browser

django6: $(DJANGO6_STAMP)
	$(DJANGO6_VENV)/bin/pip install --quiet --upgrade "Django>=6,<7"
	$(DJANGO6_VENV)/bin/python -c "import django, sys; print('Django', django.get_version(), 'on Python', sys.version.split()[0])"

test-django6-nonbrowser: django6 redis
	env -u DATABASE_URL $(DJANGO6_VENV)/bin/python -m pytest -q --ignore=tests/e2e $(PYTEST_ARGS)
	env -u DATABASE_URL $(DJANGO6_VENV)/bin/python -m pytest -q --ds=tests.agent.settings $(PYTEST_ARGS)

test-django6-browser: django6 chromium redis
	env -u DATABASE_URL $(DJANGO6_VENV)/bin/python -m pytest -q tests/e2e $(PYTEST_ARGS)

# The full load run of tests/reliability/test_soak.py: 300 concurrent turns for 5 minutes on PostgreSQL.
soak: $(STAMP)
	DATABASE_URL=$${DATABASE_URL-postgres://postgres@127.0.0.1:5432/test} SOAK_SECONDS=$${SOAK_SECONDS-300} \
	SOAK_CONCURRENCY=$${SOAK_CONCURRENCY-300} SOAK_WORKERS=$${SOAK_WORKERS-2} \
	$(PY) -m pytest tests/reliability/test_soak.py -q -s $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DEBUG=1 $(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(DJANGO6_VENV) staticfiles test_db.sqlite3* artifacts

# Benchmarks (bench/): the baseline (BENCH_BASELINE, else the ref in bench/baseline.txt) and this tree side
# by side in one run; prints one JSON line per measurement and writes BENCHMARKS.md (~10 min;
# BENCH_ARGS=--quick: ~2 min, written to bench/results/).
bench: $(STAMP)
	$(PIP) install --quiet -r bench/requirements.txt
	BENCH_BASELINE=$(BENCH_BASELINE) $(PY) -m bench.run $(BENCH_ARGS)

# The README's five pictures (docs/screenshots/*.png) made again from a fresh demo site on a free loopback port,
# in headless Chromium (docs/screenshots/make.py; ~30 s). Look at them before committing.
screenshots: $(STAMP) chromium
	$(PY) -m docs.screenshots.make
