"""Sample attachments made on the fly (Pillow), honest and hostile, for the tests of every layer."""

from __future__ import annotations

import io
import zlib

from PIL import Image


def png(width: int = 64, height: int = 48, color: str = "teal") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def jpeg_with_gps(width: int = 40, height: int = 20, orientation: int = 6) -> bytes:
    """A JPEG whose EXIF names a camera, a GPS position and an orientation (rotate 90°)."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    exif[0x010F] = "SecretCam"
    gps = exif.get_ifd(0x8825)
    gps[1], gps[2] = "N", (51.0, 28.0, 38.0)
    out = io.BytesIO()
    Image.new("RGB", (width, height), "red").save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()


def gif_animated(frames: int = 3) -> bytes:
    images = [Image.new("RGB", (12, 12), c) for c in ("red", "green", "blue", "white")[:frames]]
    out = io.BytesIO()
    images[0].save(out, "GIF", save_all=True, append_images=images[1:], duration=[100, 200, 300][:frames], loop=0)
    return out.getvalue()


def pdf(text: str = "Hello PDF") -> bytes:
    """A minimal valid one-page PDF."""
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    return pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1, the first the catalog), with its cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def pdf_slow_to_read(pages: int, content: bytes = b"") -> bytes:
    """A PDF of `pages` pages that all draw one Flate-compressed content stream, `content`.

    Hostile either way: many pages in a small file (each costs its reader time), or one stream of
    megabytes of operators compressed to a few KB that a reader decompresses and parses per page.
    """
    stream = zlib.compress(content, 9)
    font = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources " + font + b" /Contents 3 0 R >>"
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages)).encode()
    return pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
            *[page] * pages,
        ]
    )


def gif_of_tiny_frames(frames: int) -> bytes:
    """An animated GIF of `frames` one-pixel frames, 24 bytes each: hardly any pixels, a flood of frames."""
    header = b"GIF89a" + (1).to_bytes(2, "little") * 2 + bytes([0x80, 0, 0]) + b"\x00\x00\x00\xff\xff\xff"
    loop = b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    delay = b"\x21\xf9\x04\x00\x01\x00\x00\x00"  # graphic control: 10 ms
    place = b"\x2c" + bytes(4) + (1).to_bytes(2, "little") * 2 + b"\x00"  # at 0,0, 1×1, no local colours
    frame = delay + place + b"\x02\x02\x44\x01\x00"  # one LZW-coded pixel
    return header + loop + frame * frames + b"\x3b"


def exe_as_png() -> bytes:
    """The start of a Windows executable (what a renamed `setup.exe` holds)."""
    return b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 48 + b"This program cannot be run"


def svg_with_script() -> bytes:
    return (
        b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>'
    )


def png_bomb(side: int = 30_000) -> bytes:
    """A PNG that claims `side`×`side` pixels of black in a few dozen KB: a decompression bomb.

    Written by hand (one zlib stream of zero rows) so making it costs no more than the attacker's.
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = side.to_bytes(4, "big") * 2 + bytes([1, 0, 0, 0, 0])  # 1-bit greyscale
    row = b"\x00" * (1 + side // 8)
    compressor = zlib.compressobj(9)
    data = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
