"""A deliberately wrong AG-UI server, the control for client_agui.mjs's warning check.

Usage: python3 bad_sse.py PORT      (standard library only; loopback)

Any GET or POST gets the same two-event stream: RUN_STARTED with a field no AG-UI model has
(`bogus`), and RUN_FINISHED with `result: null`. @ag-ui/client 1.0.0 warns about both ("Removed
unrecognised material", "deprecated RUN_FINISHED.result: null"); if the test's capture of
console.warn missed them, its "no warnings" assertions against ddwire would prove nothing.
GET /.well-known/ready answers 200 for the suite's readiness poll.
"""

import http.server
import sys

BODY = (b'data: {"type":"RUN_STARTED","threadId":"T","runId":"R","bogus":1}\n\n'
        b'data: {"type":"RUN_FINISHED","threadId":"T","runId":"R","result":null}\n\n')


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    do_GET = do_POST

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
