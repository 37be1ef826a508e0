"""Settings from the environment (README, "Configuration"): a bad value stops the start-up with one
sentence naming its variable, never a traceback inside a request or a silent fallback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_settings(code: str = "", **env: str) -> subprocess.CompletedProcess:
    """Set Django up with `config.settings` in a fresh process, as every start-up does, with `env` set;
    then run `code`."""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def refusal(result: subprocess.CompletedProcess) -> str:
    """The last line of a start-up that failed: the one sentence an operator reads."""
    assert result.returncode != 0, result.stdout + result.stderr
    return result.stderr.strip().splitlines()[-1]


def test_the_defaults_load():
    assert load_settings().returncode == 0


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        ("AGENT_MESSAGES_PER_MINUTE", "-1", "AGENT_MESSAGES_PER_MINUTE must be 0 or more, got '-1'."),
        ("DATABASE_POOL_MAX_SIZE", "-3", "DATABASE_POOL_MAX_SIZE must be 0 or more, got '-3'."),
        ("AGENT_MAX_TOKENS", "-5", "AGENT_MAX_TOKENS must be 0 or more, got '-5'."),
        ("AGENT_BUDGET_USD_PER_MONTH", "-5", "AGENT_BUDGET_USD_PER_MONTH must be 0 or more, got '-5'."),
        ("AGENT_MAX_UPLOAD_MB", "nan", "AGENT_MAX_UPLOAD_MB must be a number, got 'nan'."),
        ("AGENT_BUDGET_GLOBAL_USD_PER_MONTH", "inf", "AGENT_BUDGET_GLOBAL_USD_PER_MONTH must be a number, got 'inf'."),
    ],
)
def test_a_negative_or_endless_number_is_refused_at_start_up(name, value, sentence):
    # (AGENT_MESSAGES_PER_MINUTE=-1 passed `check` and then answered 500 to every new chat and message.)
    assert refusal(load_settings(**{name: value})) == f"django.core.exceptions.ImproperlyConfigured: {sentence}"


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("MCP_ACCESS_TOKEN_SECONDS", "a connected client's token would be expired as it is issued"),
        ("MCP_MAX_REQUEST_BYTES", "every call to /mcp would answer 413"),
    ],
)
def test_a_lifetime_or_size_where_0_is_no_off_is_refused_at_start_up(name, what):
    # (0 passed `check` and every start, and broke every connected client: 0 is "off" only where the README
    # says so. MCP_REFRESH_TOKEN_SECONDS=0 is django-oauth-toolkit's "never expires", and allowed.)
    sentence = f"{name} must be 1 or more ({what}), got '0'."
    assert refusal(load_settings(**{name: "0"})) == f"django.core.exceptions.ImproperlyConfigured: {sentence}"


def test_a_switch_that_is_neither_on_nor_off_is_refused_at_start_up():
    # (SESSION_COOKIE_SECURE=ture read as off: a typo sent the session cookie over plain HTTP.)
    assert refusal(load_settings(DEBUG="0", SECRET_KEY="x" * 50, SESSION_COOKIE_SECURE="ture")) == (
        "django.core.exceptions.ImproperlyConfigured: "
        "SESSION_COOKIE_SECURE must be 1 or 0 (true/false, yes/no, on/off), got 'ture'."
    )
    assert load_settings(DEBUG="0", SECRET_KEY="x" * 50, SESSION_COOKIE_SECURE="Off").returncode == 0


@pytest.mark.parametrize("url", ["foo", "postgres//u:sekrit@127.0.0.1/x", "postgres://u:sekrit@127.0.0.1:notaport/x"])
def test_a_malformed_database_url_is_refused_naming_it_and_not_echoing_it(url):
    # (dj-database-url's own errors named neither the variable nor what was wrong with it.)
    result = load_settings(DATABASE_URL=url)
    assert refusal(result) == (
        "django.core.exceptions.ImproperlyConfigured: DATABASE_URL must be a database URL such as "
        "postgres://user:password@host:5432/name or sqlite:///path."
    )
    assert "sekrit" not in result.stderr


def test_log_level_is_read_in_any_case_and_an_unknown_one_is_refused():
    assert load_settings(LOG_LEVEL="debug").returncode == 0  # (was: "ValueError: Unable to configure root logger")
    assert refusal(load_settings(LOG_LEVEL="loud")) == (
        "django.core.exceptions.ImproperlyConfigured: LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, "
        "got 'LOUD'."
    )


@pytest.mark.parametrize(
    "prices",
    ["{", "[1]", '{"x": 3}', '{"x": {"input": "cheap"}}', '{"x": {"input": -1}}', '{"x": {"long": {"input": null}}}'],
)
def test_agent_prices_that_are_not_prices_are_refused_at_start_up(prices):
    # (`{"x": 3}` passed `check` and failed every turn of model x: 'int' object has no attribute 'get'.)
    assert refusal(load_settings(AGENT_PRICES=prices)) == (
        "django.core.exceptions.ImproperlyConfigured: AGENT_PRICES must be a JSON object of model id to prices, "
        'e.g. {"my-model": {"input": 0.15, "output": 0.6}} (dollars per million tokens).'
    )


def test_agent_prices_as_the_readme_gives_them_load():
    table = '{"m": {"input": 1, "output": 2.5, "cache_read": 0, "cache_write": 0, "long_above": 100000, "long": {"input": 2}}}'
    assert load_settings(AGENT_PRICES=table).returncode == 0


def test_openai_pdf_files_is_auto_or_a_switch():
    # (`maybe`, or `on`, read as "never": every PDF went as extracted text, silently.)
    assert refusal(load_settings(OPENAI_PDF_FILES="maybe")) == (
        "django.core.exceptions.ImproperlyConfigured: OPENAI_PDF_FILES must be auto, 1 or 0, got 'maybe'."
    )
    on = "from django.conf import settings; assert settings.OPENAI_PDF_FILES == '1', settings.OPENAI_PDF_FILES"
    assert load_settings(OPENAI_PDF_FILES="On", code=on).returncode == 0


@pytest.mark.parametrize("command", ["check", "migrate"])
def test_manage_py_says_a_refused_setting_in_one_sentence_without_a_traceback(command):
    """(`make run` starts with `manage.py migrate`: a refused value, `DEBUG=maybe` say, printed a
    traceback through Django's import of the settings, the sentence on its last line.)"""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    result = subprocess.run(
        [sys.executable, "manage.py", command],
        cwd=ROOT,
        env={**base, "DEBUG": "maybe"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr == "DEBUG must be 1 or 0 (true/false, yes/no, on/off), got 'maybe'.\n"
    assert result.stdout == ""


def test_allowed_hosts_set_but_blank_is_the_default():
    """(`ALLOWED_HOSTS=` from a template whose variable was empty allowed no host at all: with DEBUG off
    every page answered 400 while /healthz, answered before the host check, said the host was fine.
    A blank value is the default, as for DATABASE_URL and FORWARDED_ALLOW_IPS.)"""
    result = load_settings("from django.conf import settings; print(settings.ALLOWED_HOSTS)", ALLOWED_HOSTS=" ")
    assert result.stdout.strip() == "['127.0.0.1', 'localhost']", result.stderr


def test_manage_py_still_takes_its_settings_option():
    """(`--settings` is read before the settings load: a first look at them, to say a refused value in its
    sentence, would have loaded `config.settings` whatever the option named.)"""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    result = subprocess.run(
        [sys.executable, "manage.py", "diffsettings", "--settings=tests.agent.settings"],
        cwd=ROOT,
        env={**base, "DEBUG": "maybe"},  # (config.settings would refuse it; the engine's own ignore it)
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "ROOT_URLCONF = 'tests.agent.urls'" in result.stdout


CACHES_OF = "from django.conf import settings; import json; print(json.dumps(settings.CACHES))"


def test_without_cache_url_the_cache_is_each_processs_own_memory_as_djangos_default():
    from django.conf import global_settings

    result = load_settings(CACHES_OF)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == global_settings.CACHES, result.stderr


@pytest.mark.parametrize(
    "url", ["redis://redis.internal:6379/1", "rediss://:s3cret@redis.internal:6380/2", "redis://cache.internal"]
)
def test_cache_url_makes_djangos_own_redis_cache_with_short_timeouts(url):
    result = load_settings(CACHES_OF, CACHE_URL=f" {url} ")
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 2.0},
        }
    }, result.stderr


@pytest.mark.parametrize(
    "url",
    [
        "memcached://u:s3cret@127.0.0.1:11211",
        "http://u:s3cret@127.0.0.1:6379/0",
        "127.0.0.1:6379",
        "redis://:s3cret@127.0.0.1:notaport/0",
        "redis://:s3cret@/0",
        "redis://:s3cret@127.0.0.1:6379/cache",
    ],
)
def test_a_cache_url_that_is_no_redis_url_is_refused_naming_it_and_not_echoing_it(url):
    result = load_settings(CACHE_URL=url)
    assert refusal(result) == (
        "django.core.exceptions.ImproperlyConfigured: CACHE_URL must be a Redis URL such as "
        "redis://host:6379/1 or rediss://:password@host:6380/1."
    )
    assert "s3cret" not in result.stderr


def test_manage_py_check_says_a_refused_cache_url_in_its_sentence_alone():
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**base, "DEBUG": "1", "CACHE_URL": "memcached://u:s3cret@127.0.0.1:11211"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "CACHE_URL must be a Redis URL such as redis://host:6379/1 or rediss://:password@host:6380/1.\n"
    )
