"""Refusing an oversized upload as it arrives, before Django buffers it (the first FILE_UPLOAD_HANDLERS entry).

A multipart body longer than a message may carry (its Content-Length) is not read at all; a file
that grows past the per-file limit, or files past the per-message total or count, stop the parse.
Either way the handler keeps the calm sentence (`refusal_of(request)`) for the view to answer
with; the view then stores nothing. Django calls the handler through its documented upload
handler API (`handle_raw_input`, `new_file`, `receive_data_chunk`).
"""

from __future__ import annotations

from typing import Any

from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, QueryDict
from django.utils.datastructures import MultiValueDict

from agent.uploads import Limits, too_large_file, too_large_total, too_many_files

#: Room for the message's text and the multipart framing on top of the files themselves.
OVERHEAD = 256 * 1024


class UploadLimitHandler(FileUploadHandler):
    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.limits = Limits.from_settings()
        self.refusal: tuple[str, str] | None = None  # (code, sentence)
        self.total = self.current = self.count = 0

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None) -> Any:
        if content_length > self.limits.per_message + OVERHEAD:
            self.refusal = ("too_large", too_large_total(self.limits))
            return QueryDict(encoding=encoding), MultiValueDict()  # the body is never read
        return None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.current, self.count = 0, self.count + 1
        if self.count > self.limits.files:
            self._stop("too_many_files", too_many_files(self.limits))

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.current += len(raw_data)
        self.total += len(raw_data)
        if self.current > self.limits.per_file:
            self._stop("too_large", too_large_file(self.file_name or "", self.limits))
        if self.total > self.limits.per_message:
            self._stop("too_large", too_large_total(self.limits))
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handlers keep the file

    def _stop(self, code: str, message: str) -> None:
        self.refusal = (code, message)
        # The rest of the body (bounded by the Content-Length check) is read and dropped, so the
        # client gets the answer rather than a reset connection.
        raise StopUpload(connection_reset=False)


def refusal_of(request: HttpRequest) -> tuple[str, str] | None:
    """The (code, sentence) of an upload refused while its body was parsed, if any."""
    for handler in request.upload_handlers:
        if isinstance(handler, UploadLimitHandler):
            return handler.refusal
    return None
