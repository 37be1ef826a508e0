# The two commands: `make run` and `make test` (README). Everything else is a helper.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: run test install chromium lint clean soak bench

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	DEBUG=$${DEBUG-1} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG-1} $(PY) manage.py seed_demo
	DEBUG=$${DEBUG-1} SECURE_SSL_REDIRECT=$${SECURE_SSL_REDIRECT-0} $(VENV)/bin/gunicorn config.wsgi -c config/gunicorn.conf.py

chromium:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: /usr/bin/chromium"; \
	elif [ "$$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	else $(VENV)/bin/playwright install chromium; fi

test: $(STAMP) chromium
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The full load run of tests/reliability/test_soak.py: 300 concurrent turns for 5 minutes on PostgreSQL.
soak: $(STAMP)
	DATABASE_URL=$${DATABASE_URL-postgres://postgres@127.0.0.1:5432/test} SOAK_SECONDS=$${SOAK_SECONDS-300} \
	SOAK_CONCURRENCY=$${SOAK_CONCURRENCY-300} SOAK_WORKERS=$${SOAK_WORKERS-2} \
	$(PY) -m pytest tests/reliability/test_soak.py -q -s $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) staticfiles test_db.sqlite3* artifacts

# Benchmarks (bench/): the baseline (BENCH_BASELINE, else the ref in bench/baseline.txt) and this tree side
# by side in one run; prints one JSON line per measurement and writes BENCHMARKS.md (~10 min;
# BENCH_ARGS=--quick: ~2 min, written to bench/results/).
bench: $(STAMP)
	$(PIP) install --quiet -r bench/requirements.txt
	BENCH_BASELINE=$(BENCH_BASELINE) $(PY) -m bench.run $(BENCH_ARGS)
