"""A throwaway `redis-server` for tests: its own free loopback port, no persistence, stopped by its PID.

Never the shared Redis on 6379. `make test` installs Debian's redis-server when it is missing
(as root), so tests that need it never skip.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.servers import _die_with_parent, free_port

START_TIMEOUT = 20.0


def executable() -> str:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if found is None:
        raise RuntimeError("redis-server is not installed: `make test` installs it (apt-get install redis-server)")
    return found


class RedisServer:
    """`start()` it, read `url`, `kill()` it mid-test (SIGKILL), `start()` it again on the same port, `stop()`.

    With `password` it asks every client for it (`requirepass`), and `url` carries it."""

    def __init__(self, log: Path | None = None, password: str = "") -> None:
        self.port = free_port()
        self.log = log
        self.password = password
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        out = self.log.open("a") if self.log else subprocess.DEVNULL
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        if self.password:
            args += ["--requirepass", self.password]
        self.process = subprocess.Popen(
            [executable(), *args],
            stdout=out,
            stderr=out,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall((f"AUTH {self.password}\r\n" if self.password else "").encode() + b"PING\r\n")
                    answer = b""
                    while b"\r\n" not in answer.removeprefix(b"+OK\r\n") and len(answer) < 64:
                        answer += s.recv(64) or b"\r\n"  # (closed: not ready)
                    if answer.removeprefix(b"+OK\r\n").startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer")

    def kill(self) -> None:
        """SIGKILL, as if the Redis host went away."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
