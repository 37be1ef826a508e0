"""Real servers for tests: gunicorn (gevent worker) as a subprocess, each with its own database.

A server gets a database of its own (a temp SQLite file, or a new PostgreSQL database when
DATABASE_URL points at PostgreSQL): a copy of a template migrated and seeded once by `manage.py`
for every server of its kind (`Templates`), then
`gunicorn config.wsgi -c config/gunicorn.conf.py` bound to a free 127.0.0.1 port. It runs in
its own session and shuts down if the test process dies (PR_SET_PDEATHSIG); teardown stops it
by its own PID (SIGINT, then SIGKILL of its own process group) and drops its database.

The browser tests (tests/e2e) and the reliability tests (tests/reliability) both start their
servers through `ServerGroup`; what differs (settings, env, extra seed data) stays in their
conftest.py.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent  # the project root: manage.py, config/, ...
ARTIFACTS = ROOT / "artifacts"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
READY_PATH = "/accounts/login/"
READY_STATUSES = (200, 301)  # 301: a server with the SSL redirect on
# What the pytest process's own settings put in the environment; a server decides these itself.
NOT_INHERITED = (
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "TEST_SQLITE_NAME",
    "BIND",
    "DATABASE_URL",
    "MEDIA_ROOT",
)
SEED = (("migrate", "--noinput"), ("seed_demo",))
# What a server's environment may set that has no bearing on the database its seed commands make: the engine's
# and the connectors' settings (no migration or seed command reads them; migrations read only AUTH_USER_MODEL),
# where it listens, its database and media folder, and how it logs and serves. Servers whose environments agree
# on everything else start from copies of one seeded template (`Templates`).
RUNTIME_ONLY = re.compile(
    r"^(AGENT_|MCP_)|^(BIND|DATABASE_URL|MEDIA_ROOT|LOG_LEVEL|WEB_CONCURRENCY|DATABASE_POOL_MAX_SIZE|PYTHONUNBUFFERED)$"
)
# Deprecations fail the suite in the processes it starts too (pyproject.toml, `filterwarnings`, does it in pytest's):
# a server or manage.py command that raises one stops, and the test that started it fails with it in the log.
SERVER_WARNINGS = "error::DeprecationWarning,error::PendingDeprecationWarning"


# --- databases -------------------------------------------------------------------------


def is_postgres(url: str | None = None) -> bool:
    url = os.environ.get("DATABASE_URL", "") if url is None else url
    return url.split(":", 1)[0] in ("postgres", "postgresql", "pgsql", "postgis")


def pg_connect(url: str, dbname: str | None = None, autocommit: bool = True):
    """A psycopg connection to the server of `url`; `dbname` overrides the database in the URL."""
    import psycopg

    parts = urlsplit(url)
    return psycopg.connect(
        host=parts.hostname or None,
        port=parts.port or None,
        user=parts.username or None,
        password=parts.password or None,
        dbname=dbname or parts.path.lstrip("/") or "postgres",
        autocommit=autocommit,
    )


@dataclass
class Database:
    """One server's database, which the tests may also read directly."""

    url: str
    folder: str | None = None
    pg_name: str | None = None
    dropped: bool = field(default=False, repr=False)

    @classmethod
    def create(cls, suite: str, tag: str, template: Database | None = None) -> Database:
        """A new database: PostgreSQL `<base>_<suite>_<tag>_<hex>` or a SQLite file in a temp folder; empty, or a
        copy of `template` (a database of the same kind that nobody is connected to)."""
        env_url = os.environ.get("DATABASE_URL", "")
        if is_postgres(env_url):
            from psycopg import sql

            parts = urlsplit(env_url)
            name = f"{parts.path.lstrip('/') or 'postgres'}_{suite}_{tag}_{uuid.uuid4().hex[:8]}"
            create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if template is not None:
                assert template.pg_name is not None, "a PostgreSQL database is copied from a PostgreSQL template"
                create = sql.SQL("{} TEMPLATE {}").format(create, sql.Identifier(template.pg_name))
            with pg_connect(env_url, "postgres") as conn:
                conn.execute(create)
            return cls(urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment)), pg_name=name)
        folder = tempfile.mkdtemp(prefix=f"{suite}-{tag}-")
        database = cls(f"sqlite:///{folder}/db.sqlite3", folder=folder)
        if template is not None:
            assert template.folder is not None, "a SQLite database is copied from a SQLite template"
            source, target = template.connect(), database.connect()
            try:
                source.backup(target)  # sqlite3's online backup: a consistent copy, whatever the journal mode
            finally:
                source.close()
                target.close()
        return database

    @property
    def postgres(self) -> bool:
        return self.pg_name is not None

    def connect(self):
        if self.postgres:
            return pg_connect(self.url)
        return sqlite3.connect(urlsplit(self.url).path, timeout=20, isolation_level=None)

    def query(self, sql_text: str, params: tuple = ()) -> list[tuple]:
        """Read the server's database directly (placeholders: %s)."""
        conn = self.connect()
        try:
            if not self.postgres:
                sql_text = sql_text.replace("%s", "?")
            return list(conn.execute(sql_text, params).fetchall())
        finally:
            conn.close()

    def scalar(self, sql_text: str, params: tuple = ()) -> Any:
        return self.query(sql_text, params)[0][0]

    def drop(self) -> None:
        """Remove the database; a second call does nothing."""
        if self.dropped:
            return
        self.dropped = True
        if self.pg_name is not None:
            from psycopg import sql

            name = sql.Identifier(self.pg_name)
            with pg_connect(self.url, "postgres") as conn:
                try:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
                except Exception:  # PostgreSQL before 13 has no FORCE
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(name))
        elif self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


# --- processes -------------------------------------------------------------------------


def server_env(*, without: Sequence[str] = (), **values: str) -> dict[str, str]:
    """The test process's environment minus what a server decides itself (every AGENT_*, NOT_INHERITED and
    `without`), plus `values`."""
    dropped = {*NOT_INHERITED, *without}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_") and k not in dropped}
    env.update(
        SECURE_SSL_REDIRECT="0",
        PYTHONUNBUFFERED="1",
        AGENT_TURN_EXECUTOR="auto",
        WEB_CONCURRENCY="1",
        PYTHONWARNINGS=SERVER_WARNINGS,
    )
    env.update(values)
    return env


def manage(env: dict[str, str], log: Path, *args: str) -> str:
    """Run `manage.py <args>` with `env`, its output appended to `log`; raises if it fails."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    with log.open("a") as f:
        f.write(f"$ manage.py {args[0]}\n{result.stdout}{result.stderr}\n")
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {args[0]} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackStandIn:
    """A provider's stand-in on a fixed loopback port: `refusing()` takes it down and brings it back
    on the same port. Subclasses make the server (`_new`)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.server = self._new()

    def _new(self) -> Any:
        raise NotImplementedError

    @contextlib.contextmanager
    def refusing(self) -> Iterator[None]:
        """Nothing listens on the port (connection refused) inside the block."""
        self.server.stop()
        try:
            yield
        finally:
            for _ in range(50):
                try:
                    self.server = self._new()
                    break
                except OSError:
                    time.sleep(0.1)

    def stop(self) -> None:
        self.server.stop()


def _die_with_parent() -> None:  # runs in the child before exec
    os.setsid()
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG: quick shutdown if the test process dies


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _stop_process(process: subprocess.Popen) -> None:
    """SIGINT (gunicorn: quick shutdown), then SIGKILL of the server's own process group; always reaped."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # our own session, started for this server
        process.wait(timeout=STOP_TIMEOUT)


def _wait_until_up(process: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(url + READY_PATH, timeout=2).status_code in READY_STATUSES:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server did not answer within {START_TIMEOUT:.0f} s:\n{log.read_text()[-4000:]}")


# --- servers ---------------------------------------------------------------------------


@dataclass
class Server:
    """A running gunicorn + gevent server on 127.0.0.1."""

    name: str
    url: str
    process: subprocess.Popen
    log: Path
    database: Database
    env: dict[str, str]
    owns_database: bool = True

    @property
    def pid(self) -> int:
        """The gunicorn master's PID."""
        return self.process.pid

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def mark(self) -> int:
        """A position in the log, for `log_since`."""
        return self.log.stat().st_size

    def log_since(self, mark: int) -> str:
        with self.log.open("rb") as f:
            f.seek(mark)
            return f.read().decode(errors="replace")

    def worker_pids(self) -> list[int]:
        return children_of(self.pid)

    def rss_kb(self) -> int:
        return sum(rss_kb(pid) for pid in [self.pid, *self.worker_pids()])

    def stop(self) -> None:
        _stop_process(self.process)


class Templates:
    """Seeded databases to copy: migrating and seeding a new database costs seconds of CPU (two `manage.py`
    runs), copying one a few milliseconds, and the browser and reliability tests start some seventy servers.

    One template per seed commands and seed-relevant environment (everything `RUNTIME_ONLY` does not name),
    made on first use and dropped when the test process exits. A template's rows are those of its first
    server's seed: the same users, blog, posts and ids; timestamps from when it was made.
    """

    def __init__(self) -> None:
        self.databases: dict[tuple, Database] = {}
        atexit.register(self.drop_all)

    def seeded(self, suite: str, tag: str, seed: Sequence[Sequence[str]], env: dict[str, str], log: Path) -> Database:
        """A new database named by `tag`, a copy of the template that `seed` makes with `env`."""
        key = (
            suite,
            is_postgres(),
            tuple(tuple(command) for command in seed),
            tuple(sorted((k, v) for k, v in env.items() if not RUNTIME_ONLY.search(k))),
        )
        template = self.databases.get(key)
        if template is None:
            template = Database.create(suite, "template")
            try:
                for command in seed:
                    manage({**env, "DATABASE_URL": template.url}, log, *command)
            except BaseException:
                template.drop()
                raise
            self.databases[key] = template
        return Database.create(suite, tag, template=template)

    def drop_all(self) -> None:
        for database in self.databases.values():
            with contextlib.suppress(Exception):  # at exit: a database server already gone leaves nothing to drop
                database.drop()
        self.databases.clear()


TEMPLATES = Templates()


class ServerGroup:
    """The servers one test session starts: each on a free loopback port, stopped and cleaned up by `close`.

    `env` is the base environment of every server (see `server_env`); `seed` the manage.py commands that
    prepare a new database. A failed run keeps the logs as `artifacts/<artifact_prefix>server-<name>.log`.
    """

    def __init__(
        self,
        suite: str,
        workdir: Path,
        env: dict[str, str],
        *,
        seed: Sequence[Sequence[str]] = SEED,
        artifact_prefix: str = "",
    ) -> None:
        self.suite = suite
        self.workdir = workdir
        self.env = env
        self.seed = seed
        self.artifact_prefix = artifact_prefix
        self.servers: list[Server] = []

    def start(self, name: str, overrides: dict[str, str], database: Database | None = None) -> Server:
        """Start a server with `overrides` on top of the base env; a new database unless one is given."""
        owns = database is None
        log = self.workdir / f"server-{name}.log"
        env = {**self.env, **overrides}
        env.setdefault("MEDIA_ROOT", str(self.workdir / f"media-{name}"))  # never the project's media folder
        if database is None:  # (the seed commands write rows only, no media: a copy is all the server needs)
            database = TEMPLATES.seeded(self.suite, re.sub(r"[^a-z0-9]", "_", name.lower())[:20], self.seed, env, log)
        env["DATABASE_URL"] = database.url
        process = None
        try:
            port = free_port()
            env["BIND"] = f"127.0.0.1:{port}"
            url = f"http://127.0.0.1:{port}"
            with log.open("a") as out:
                process = subprocess.Popen(
                    [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "config/gunicorn.conf.py"],
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=out,
                    preexec_fn=_die_with_parent,
                )
            _wait_until_up(process, url, log)
        except BaseException:
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=STOP_TIMEOUT)
            self._keep_log(name, log)
            if owns:
                database.drop()
            raise
        server = Server(name, url, process, log, database, env, owns)
        self.servers.append(server)
        return server

    def close(self, *, keep_logs: bool = False) -> None:
        """Stop every server by its PID, newest first, and drop the databases they own; all of them even if one fails."""
        with contextlib.ExitStack() as stack:
            for server in self.servers:  # ExitStack unwinds in reverse: the newest server first
                if server.owns_database:
                    stack.callback(server.database.drop)
                if keep_logs:
                    stack.callback(self._keep_log, server.name, server.log)
                stack.callback(server.stop)
            self.servers = []

    def _keep_log(self, name: str, log: Path) -> None:
        if log.exists():
            ARTIFACTS.mkdir(exist_ok=True)
            shutil.copyfile(log, ARTIFACTS / f"{self.artifact_prefix}server-{name}.log")
