"""config.gunicorn_write: a response body's bytes reach the client as gunicorn's own writes sent them,
whole and in order, also when the client's buffer is full."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from gunicorn import util

from config import gunicorn_write


class Response:
    def __init__(self, sock, chunked):
        self.sock, self.chunked = sock, chunked


def wire(write, pieces: list[bytes], *, small_buffer: bool = False) -> bytes:
    """What a client reads of `write(sock, piece)` for each piece (read as it is written)."""
    ours, theirs = socket.socketpair()
    if small_buffer:  # a send leaves bytes over: the rest must follow, in order
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    got = []
    reader = threading.Thread(target=lambda: got.extend(iter(lambda: theirs.recv(65536), b"")))
    reader.start()
    for piece in pieces:
        write(ours, piece)
    ours.close()
    reader.join(timeout=10)
    theirs.close()
    return b"".join(got)


def ours(chunked: bool):
    return lambda sock, piece: gunicorn_write.emit_body(Response(sock, chunked), piece)


def gunicorns(chunked: bool):
    return lambda sock, piece: util.write(sock, piece, chunked)


EVENTS = [b'id: 0\nevent: token\ndata: {"text":"lorem "}\n\n', b"x" * 255, b"\x00\r\n0\r\n"]


@pytest.mark.parametrize("chunked", [True, False])
def test_the_bytes_are_gunicorns_own(chunked):
    assert wire(ours(chunked), EVENTS) == wire(gunicorns(chunked), EVENTS)


@pytest.mark.parametrize("chunked", [True, False])
def test_a_body_larger_than_the_clients_buffer_arrives_whole(chunked):
    big = [bytes(range(256)) * 4096, b"tail"]  # 1 MiB, then more
    assert wire(ours(chunked), big, small_buffer=True) == wire(gunicorns(chunked), big)


def test_the_server_config_installs_it():
    """Loading the server's config (in a process of its own: it patches the process for gevent)."""
    check = (
        "import runpy; runpy.run_path('config/gunicorn.conf.py'); "
        "from gunicorn.http import wsgi; from config import gunicorn_write; "
        "assert wsgi.Response._emit_body is gunicorn_write.emit_body"
    )
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-c", check], cwd=root, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
