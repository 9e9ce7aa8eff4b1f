"""A deliberately broken A2A v0.3 agent, for `ddwire check` to fail against.

Usage: python3 broken_server.py PORT      (standard library only; loopback only)

It speaks A2A v0.3 JSON-RPC well enough (card at /.well-known/agent-card.json, message/send
answered with a completed Task, tasks/get, -32700/-32600/-32601/-32602/-32001, no body for a
notification, batches refused with -32600, push notifications refused with -32003), except
for two defects, on purpose:

- it echoes every request id as a string (`7` comes back as `"7"`), which JSON-RPC 2.0 §5
  forbids;
- its card declares `capabilities.streaming: true`, yet it refuses `message/stream` with
  -32004.

`ddwire check` must fail on exactly those two probes (jsonrpc.id and a2a.streaming) and name
the specification section and what came back for each.
"""

import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TASKS = {}


def error(code, message):
    return {"code": code, "message": message}


def answer(request):
    """The JSON-RPC response object for one request object, or None for a notification."""
    if not isinstance(request, dict):
        return {"jsonrpc": "2.0", "id": None, "error": error(-32600, "a request must be an object")}
    has_id = "id" in request
    rid = request.get("id")
    # The first defect: the id comes back as a string whatever it was.
    echoed = rid if rid is None or isinstance(rid, str) else str(rid)

    def reply(result=None, err=None):
        out = {"jsonrpc": "2.0", "id": echoed}
        if err is not None:
            out["error"] = err
        else:
            out["result"] = result
        return out if has_id else None

    if request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return {"jsonrpc": "2.0", "id": echoed, "error": error(-32600, "Invalid Request")}
    method, params = request["method"], request.get("params") or {}
    if method == "message/send":
        message = params.get("message") if isinstance(params, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            return reply(err=error(-32602, "params.message is required"))
        task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
        user = dict(message, taskId=task_id, contextId=context_id, kind="message")
        task = {
            "kind": "task", "id": task_id, "contextId": context_id,
            "status": {"state": "completed"},
            "artifacts": [{"artifactId": str(uuid.uuid4()), "name": "echo", "parts": message["parts"]}],
            "history": [user],
        }
        TASKS[task_id] = task
        return reply(task)
    if method == "tasks/get":
        if not isinstance(params, dict) or not isinstance(params.get("id"), str):
            return reply(err=error(-32602, "params.id is required"))
        task = TASKS.get(params["id"])
        return reply(task) if task else reply(err=error(-32001, "Task not found"))
    if method in ("message/stream", "tasks/resubscribe"):
        # The second defect: the card says streaming: true.
        return reply(err=error(-32004, "Streaming is not supported"))
    if method.startswith("tasks/pushNotificationConfig/"):
        return reply(err=error(-32003, "Push Notification is not supported"))
    return reply(err=error(-32601, "Method not found"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            port = self.server.server_address[1]
            self.send_json(200, {
                "name": "broken", "description": "a deliberately broken A2A v0.3 agent",
                "url": f"http://127.0.0.1:{port}/", "version": "0.0.1",
                "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
                "capabilities": {"streaming": True, "pushNotifications": False},
                "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": ["echo"]}],
            })
        else:
            self.send_json(405 if self.path == "/" else 404, {"error": "not here"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            doc = json.loads(raw)
        except ValueError:
            return self.send_json(200, {"jsonrpc": "2.0", "id": None, "error": error(-32700, "Parse error")})
        if isinstance(doc, list):
            return self.send_json(200, {"jsonrpc": "2.0", "id": None,
                                        "error": error(-32600, "Batch requests are not supported")})
        out = answer(doc)
        if out is None:
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_json(200, out)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
