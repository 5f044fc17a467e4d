"""uvicorn's HTTP/1.1 protocol (h11), with toolsift's error shape for requests it cannot read.

uvicorn answers a request it cannot parse (headers over h11's size limit, a malformed request
line) itself, before the app sees it, with a plain-text 400. This subclass sends the same 400 as
JSON, ``{"error": {"type", "message"}}``, like every other error toolsift gives.
"""

from __future__ import annotations

import h11
import orjson
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEADER_BYTES = 64 * 1024
"""h11's limit on a request's head (request line and headers): larger ones are refused."""


def unreadable_request_body(detail: str) -> bytes:
    message = (
        f"the HTTP request could not be read ({detail.rstrip('.')}): check the request line and headers, "
        f"which must fit in {MAX_HEADER_BYTES // 1024} KiB together"
    )
    return orjson.dumps({"error": {"type": "BadHTTPRequest", "message": message}})


class JsonErrorH11Protocol(H11Protocol):
    """``uvicorn.run(..., http=JsonErrorH11Protocol)``."""

    def send_400_response(self, msg: str) -> None:
        body = unreadable_request_body(msg)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body)):
            self.transport.write(self.conn.send(event))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()
