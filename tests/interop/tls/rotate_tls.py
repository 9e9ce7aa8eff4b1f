"""A ddwire TLS listener's certificate rotated under a live server, as Python's ssl client sees it
(standard library only).

Usage: python3 rotate_tls.py CONFIG.json

CONFIG: {"url": the https base of `ddwire agent hello --tls-cert DIR/cert.pem --tls-key
DIR/key.pem`, "dir": DIR, "pid": its process id, "log": its log file, "pki": the copies of
fixtures/tls}. DIR starts with server.pem / server.key. Each certificate is checked on a new
connection verified against the test CA (`ssl.create_default_context(cafile=ca.pem)`), by the
leaf's DER bytes, and the card is read over it.

Tests:
- rotation/file-change: server2.pem/server2.key written over the files (each replaced whole):
  within 10 s new connections get server2's leaf, with no signal;
- rotation/sighup: server.pem/server.key written back and SIGHUP sent: new connections get
  server.pem's leaf within 10 s; the process is still serving and says on stderr that SIGHUP
  read the certificate;
- rotation/bad-pair-keeps-old: server2.pem with server.key (a key that is not the certificate's):
  the old certificate stays served, the process says so, and it still answers.
"""

import json
import os
import re
import signal
import socket
import ssl
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
PKI, DIR = CFG["pki"], CFG["dir"]
CONTEXT = ssl.create_default_context(cafile=os.path.join(PKI, "ca.pem"))
HOST, PORT = urllib.parse.urlsplit(CFG["url"]).hostname, urllib.parse.urlsplit(CFG["url"]).port


def leaf_der(name):
    text = open(os.path.join(PKI, name)).read()
    end = "-----END CERTIFICATE-----"
    return ssl.PEM_cert_to_DER_cert(text[:text.index(end) + len(end)])


def served_leaf():
    with socket.create_connection((HOST, PORT), timeout=5) as raw:
        with CONTEXT.wrap_socket(raw, server_hostname=HOST) as tls:
            return tls.getpeercert(True)


def card_name():
    with urllib.request.urlopen(CFG["url"] + "/.well-known/agent-card.json", timeout=10, context=CONTEXT) as r:
        return json.load(r)["name"]


def write(cert, key):
    """Replace DIR/cert.pem and DIR/key.pem, each whole (written aside, then renamed)."""
    for src, dst, mode in ((cert, "cert.pem", 0o644), (key, "key.pem", 0o600)):
        tmp = os.path.join(DIR, f".{dst}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f, open(os.path.join(PKI, src), "rb") as s:
            f.write(s.read())
        os.replace(tmp, os.path.join(DIR, dst))


def wait_for_leaf(name, seconds=10):
    want, deadline = leaf_der(name), time.monotonic() + seconds
    while True:
        if served_leaf() == want:
            return
        expect(time.monotonic() < deadline, f"{name}'s leaf is still not served after {seconds} s")
        time.sleep(0.2)


def log_since(offset):
    with open(CFG["log"], encoding="utf-8", errors="replace") as f:
        f.seek(offset)
        return f.read()


def alive():
    try:
        os.kill(CFG["pid"], 0)
        return True
    except OSError:
        return False


def test_file_change():
    expect(served_leaf() == leaf_der("server.pem"), "the server does not start with server.pem's leaf")
    write("server2.pem", "server2.key")
    wait_for_leaf("server2.pem")
    expect(card_name() == "hello.world", "the card after the rotation")


def test_sighup():
    offset = os.path.getsize(CFG["log"])
    write("server.pem", "server.key")
    os.kill(CFG["pid"], signal.SIGHUP)
    wait_for_leaf("server.pem")
    time.sleep(0.3)
    expect(alive(), "the process died of SIGHUP")
    expect(card_name() == "hello.world", "the card after SIGHUP")
    said = log_since(offset)
    expect(re.search(r"SIGHUP: TLS certificate (reloaded|read again)", said), f"stderr after SIGHUP: {said[-400:]!r}")


def test_bad_pair_keeps_old():
    offset = os.path.getsize(CFG["log"])
    write("server2.pem", "server.key")
    os.kill(CFG["pid"], signal.SIGHUP)
    deadline = time.monotonic() + 5
    while "not reloaded" not in log_since(offset) and time.monotonic() < deadline:
        time.sleep(0.2)
    said = log_since(offset)
    expect("not reloaded, the old one stays" in said, f"stderr after a mismatched pair: {said[-400:]!r}")
    expect(served_leaf() == leaf_der("server.pem"), "the server no longer serves the old leaf")
    expect(card_name() == "hello.world", "the card with the old certificate")
    write("server.pem", "server.key")


if __name__ == "__main__":
    sys.exit(run([
        ("rotation/file-change", test_file_change),
        ("rotation/sighup", test_sighup),
        ("rotation/bad-pair-keeps-old", test_bad_pair_keeps_old),
    ]))
