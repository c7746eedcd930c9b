"""A cap on request body size, enforced before any route parses the body."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodySizeLimit:
    """ASGI middleware: a body over `max_bytes` gets 413 naming the limit. A declared
    Content-Length over the cap is refused before reading; a chunked body is counted as it
    arrives, so a client cannot get past the cap by not declaring its length."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        received = 0
        refused = False

        async def counted() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes and not refused:
                    # Answer now; the route sees a client that went away and whatever it sends
                    # after is dropped, so nothing it did half-way is reported as done.
                    refused = True
                    await self._refuse(send)
            return {"type": "http.disconnect"} if refused else message

        async def unless_refused(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counted, unless_refused)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "detail": f"the request body is larger than {self.max_bytes} bytes "
                "(GALERA_DOE_MAX_BODY_BYTES)"
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
