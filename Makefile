# The two commands: `make run` and `make test` (README). Everything else is a helper.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: run test install chromium lint clean

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
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) staticfiles test_db.sqlite3* artifacts
