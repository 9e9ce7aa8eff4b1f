-- wrk script for `benches/agent.sh --tls`: POST the file WRK_BODY names as application/json
-- (the A2A message/send the plain mode sends), and end with one line the script parses:
--   wrk-result <requests> <duration us> <connect> <read> <write> <status> <timeout> <mean us> <p50 us> <p99 us>
-- (errors by kind: "status" counts answers outside 2xx/3xx). wrk's latency runs from the
-- request's first byte written to the response's last byte read: TCP connect and TLS handshake
-- are not in it.
local path = os.getenv("WRK_BODY")
local f = assert(io.open(path or "", "rb"), "WRK_BODY must name the request body file")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("wrk-result %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.1f %.1f %.1f\n",
        summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
        latency.mean, latency:percentile(50), latency:percentile(99)))
end
