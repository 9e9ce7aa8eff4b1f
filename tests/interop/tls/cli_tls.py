"""`ddwire send` and `ddwire export` as TLS clients of the real upstream servers, under each way of
trusting a CA (standard library only).

Usage: python3 cli_tls.py CONFIG.json

CONFIG: {"ddwire", "pki" (the copies of fixtures/tls), "logs", "s03" (server_a2a03.py, a2a-sdk
0.3.26 under uvicorn with server.pem), "wrong" (wronghost.pem), "expired" (expired.pem),
"untrusted" (untrusted.pem, signed by other-ca.pem), "mecho" (`ddwire agent echo
--tls-client-ca ca.pem`), "harness" (`ddwire serve --tls-cert`), "runs" (a run store), "sink" /
"sink_file" (sink.py serving TLS), "msink" / "msink_file" (the same requiring a client
certificate)}. Every command runs with DD_CA_FILE, SSL_CERT_FILE and SSL_CERT_DIR unset unless
the test sets them.

Tests:
- send/ca-file, send/dd-ca-file-env, send/ssl-cert-file-env, send/ssl-cert-dir-env: the test
  CA given by --ca-file, by DD_CA_FILE, by SSL_CERT_FILE (the system store's file) and by
  SSL_CERT_DIR (a hashed directory made with `openssl rehash`): exit 0, the a2a-sdk agent echoed
  the data part;
- send/unknown-ca-refused: no CA given: exit 2, naming the unknown CA and --ca-file;
- send/ca-only: with SSL_CERT_FILE=ca.pem, `--ca-file other-ca.pem --ca-only` no longer trusts
  ca.pem (exit 2) and trusts the server other-ca signed (exit 0);
- send/wrong-host-refused, send/expired-refused: exit 2, each naming its cause;
- send/mtls: the mTLS ddwire agent refuses a send without a client certificate (exit 2, naming
  --tls-client-cert) and completes one with client.pem/client.key (exit 0);
- send/harness: `ddwire send` to the TLS harness: the run completes;
- invoke/harness: `ddwire invoke --harness https://…` with --ca-file prints the succeeded
  envelope (exit 0); without it, exit 2 naming the unknown CA;
- agent/key-readable-by-others-refused: `ddwire agent echo --tls-key` with a key file of mode 0644
  does not start: exit 2, naming chmod 600;
- otlp/export-unknown-ca-refused: `ddwire export` to the TLS sink without the CA exits 1,
  naming the cause, and nothing arrives;
- otlp/export-mtls-no-client-cert-refused: to the sink that requires a client certificate,
  without one: exit 1, nothing arrives.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
PKI = CFG["pki"]
CA, OTHER_CA = os.path.join(PKI, "ca.pem"), os.path.join(PKI, "other-ca.pem")
CLIENT = ["--tls-client-cert", os.path.join(PKI, "client.pem"), "--tls-client-key", os.path.join(PKI, "client.key")]
DATA = {"tls": True, "n": [1, 2]}


def ddwire(*args, env=None, data=None):
    """Run ddwire with a clean trust environment; return (exit code, stdout, stderr)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("DD_CA_FILE", "SSL_CERT_FILE", "SSL_CERT_DIR")}
    clean.update(env or {})
    path = os.path.join(CFG["logs"], "cli-data.json")
    with open(path, "w") as f:
        json.dump(DATA if data is None else data, f)
    cmd = [CFG["ddwire"], *args]
    if args[0] == "send":
        cmd += ["--data", path]
    elif args[0] == "invoke":
        cmd += ["--input", path]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=clean)
    shown = " ".join(f"{k}={v}" for k, v in (env or {}).items())
    print(f"$ {shown} {' '.join(cmd)}\n  exit {done.returncode}\n"
          + "".join(f"  | {line}\n" for line in (done.stdout + done.stderr).splitlines()[:40]), flush=True)
    return done.returncode, done.stdout, done.stderr


def sent_ok(result):
    code, out, err = result
    expect(code == 0, f"exit {code}: {err.strip()[-300:]}")
    task = json.loads(out)["task"]
    echo = task["artifacts"][0]["parts"][0]["data"]["echo"]
    expect(echo == DATA, f"the agent echoed {echo}")


def refused(result, pattern, code=2):
    got, out, err = result
    expect(got == code, f"exit {got}, expected {code}: {(out + err).strip()[-300:]}")
    expect(re.search(pattern, err, re.I), f"stderr does not match /{pattern}/i: {err.strip()[-300:]}")


def test_ca_file():
    sent_ok(ddwire("send", CFG["s03"], "--ca-file", CA))


def test_dd_ca_file_env():
    sent_ok(ddwire("send", CFG["s03"], env={"DD_CA_FILE": CA}))


def test_ssl_cert_file_env():
    sent_ok(ddwire("send", CFG["s03"], env={"SSL_CERT_FILE": CA}))


def test_ssl_cert_dir_env():
    folder = os.path.join(CFG["logs"], "cert-dir")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    shutil.copy(CA, folder)
    subprocess.run(["openssl", "rehash", folder], check=True, capture_output=True)
    expect(any(re.fullmatch(r"[0-9a-f]{8}\.0", n) for n in os.listdir(folder)), f"openssl rehash made {os.listdir(folder)}")
    sent_ok(ddwire("send", CFG["s03"], env={"SSL_CERT_DIR": folder}))


def test_unknown_ca_refused():
    refused(ddwire("send", CFG["s03"]), r"unknown CA.*--ca-file")


def test_ca_only():
    refused(ddwire("send", CFG["s03"], "--ca-file", OTHER_CA, "--ca-only", env={"SSL_CERT_FILE": CA}), r"unknown CA")
    sent_ok(ddwire("send", CFG["untrusted"], "--ca-file", OTHER_CA, "--ca-only"))


def test_wrong_host_refused():
    refused(ddwire("send", CFG["wrong"], "--ca-file", CA), r"wrong host|not valid for 127\.0\.0\.1")


def test_expired_refused():
    refused(ddwire("send", CFG["expired"], "--ca-file", CA), r"expired")


def echo_invocation():
    return {"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": DATA}}


def test_mtls():
    refused(ddwire("send", CFG["mecho"], "--ca-file", CA, data=echo_invocation()), r"client certificate.*--tls-client-cert")
    code, out, err = ddwire("send", CFG["mecho"], "--ca-file", CA, *CLIENT, data=echo_invocation())
    expect(code == 0, f"with a client certificate: exit {code}: {(out + err).strip()[-300:]}")
    task = json.loads(out)["task"]
    result = task["artifacts"][0]["parts"][0]["data"]["result"]
    expect(result["payload"]["value"] == DATA, f"payload {result['payload']}")


def test_harness():
    doc = {"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "ddwire to ddwire, over TLS"}}
    code, out, err = ddwire("send", CFG["harness"], "--ca-file", CA, data=doc)
    expect(code == 0, f"exit {code}: {(out + err).strip()[-300:]}")
    task = json.loads(out)["task"]
    env = next(a for a in task["artifacts"] if a["name"] == "envelope")["parts"][0]["data"]
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")


def test_invoke_harness():
    message = {"schema_class": "Message", "message_text": "invoked over TLS"}
    code, out, err = ddwire("invoke", "--agent", "hello.world", "--harness", CFG["harness"], "--ca-file", CA, data=message)
    expect(code == 0, f"exit {code}: {err.strip()[-300:]}")
    env = json.loads(out)
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    refused(ddwire("invoke", "--agent", "hello.world", "--harness", CFG["harness"], data=message), r"unknown CA")


def test_key_readable_by_others_refused():
    key = os.path.join(CFG["logs"], "server-0644.key")
    shutil.copy(os.path.join(PKI, "server.key"), key)
    os.chmod(key, 0o644)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    cmd = [CFG["ddwire"], "agent", "echo", "--port", port, "--tls-cert", os.path.join(PKI, "server.pem"), "--tls-key", key]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"ddwire served with a key others can read: {out.strip()[-300:]}")
    print(f"$ {' '.join(cmd)}\n  exit {proc.returncode}\n  | {out.strip()}")
    expect(proc.returncode == 2, f"exit {proc.returncode}: {out.strip()[-300:]}")
    expect("chmod 600" in out, f"the message does not say chmod 600: {out.strip()[-300:]}")


def export_refused(sink, sink_file, pattern, *trust):
    before = os.path.getsize(sink_file)
    result = ddwire("export", "--all", "--runs", CFG["runs"], "--otlp-endpoint", sink, *trust)
    code, out, err = result
    expect(code == 1, f"exit {code}, expected 1: {(out + err).strip()[-300:]}")
    expect(re.search(pattern, out + err, re.I), f"the output does not match /{pattern}/i: {(out + err).strip()[-300:]}")
    expect(os.path.getsize(sink_file) == before, "spans arrived anyway")


def test_export_unknown_ca_refused():
    export_refused(CFG["sink"], CFG["sink_file"], r"unknown CA")


def test_export_mtls_no_client_cert_refused():
    export_refused(CFG["msink"], CFG["msink_file"], r"client certificate", "--ca-file", CA)


if __name__ == "__main__":
    sys.exit(run([
        ("send/ca-file", test_ca_file),
        ("send/dd-ca-file-env", test_dd_ca_file_env),
        ("send/ssl-cert-file-env", test_ssl_cert_file_env),
        ("send/ssl-cert-dir-env", test_ssl_cert_dir_env),
        ("send/unknown-ca-refused", test_unknown_ca_refused),
        ("send/ca-only", test_ca_only),
        ("send/wrong-host-refused", test_wrong_host_refused),
        ("send/expired-refused", test_expired_refused),
        ("send/mtls", test_mtls),
        ("send/harness", test_harness),
        ("invoke/harness", test_invoke_harness),
        ("agent/key-readable-by-others-refused", test_key_readable_by_others_refused),
        ("otlp/export-unknown-ca-refused", test_export_unknown_ca_refused),
        ("otlp/export-mtls-no-client-cert-refused", test_export_mtls_no_client_cert_refused),
    ]))
