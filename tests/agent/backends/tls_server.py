"""A loopback TLS server with a certificate made for the test (self-signed, so no client trusts it):
it completes or fails handshakes and answers nothing, for the adapters' TLS failure tests."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(directory: Path, host: str = "localhost") -> tuple[Path, Path]:
    """A certificate for `host` signed by its own key: (certificate file, key file), PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class SelfSignedTLSServer:
    """`with SelfSignedTLSServer(tmp_path) as server:` listens on 127.0.0.1:`server.port`."""

    def __init__(self, directory: Path) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(*self_signed(directory))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)  # (to see `stopping` between connections)
        self.stopping = threading.Event()
        self.port = self.listener.getsockname()[1]
        self.handshakes = 0  # attempted: how many times a client tried
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(5)
            self.handshakes += 1
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                conn.close()

    def __enter__(self) -> SelfSignedTLSServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.listener.close()
