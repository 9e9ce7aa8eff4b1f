"""A pure ASGI middleware that remembers the last JSON-RPC POST an echo server received.

The echo servers copy `LAST` into their replies, so a test of `ddwire send` can see on the
wire which binding ddwire chose: the JSON-RPC `method`, its `id`, the `A2A-Version` header
and the path. Standard library only; the tests send one request at a time.
"""

import json

LAST = {}


class WireTap:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        LAST.clear()
        LAST.update({"path": scope["path"], "a2a_version": headers.get("a2a-version")})
        chunks = []

        async def tapped_receive():
            msg = await receive()
            if msg["type"] == "http.request":
                chunks.append(msg.get("body", b""))
                if not msg.get("more_body"):
                    try:
                        body = json.loads(b"".join(chunks))
                        LAST.update({"method": body.get("method"), "id": body.get("id")})
                    except (ValueError, AttributeError):
                        LAST.update({"method": None, "id": None})
            return msg

        return await self.app(scope, tapped_receive, send)
