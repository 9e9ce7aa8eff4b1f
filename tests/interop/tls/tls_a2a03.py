"""a2a-sdk 0.3.26 (A2A v0.3) clients over TLS -> `ddwire agent echo`, the harness, an mTLS agent.

Usage: python tls_a2a03.py CONFIG.json      (in the venv of requirements-a2a03.txt)

CONFIG names: "echo" (`ddwire agent echo --tls-cert`), "echo6" (the same bound to ::1), "mecho" (the same with --tls-client-ca:
mTLS), "harness" (`ddwire serve --tls-cert --ca-file`, whose agents are reached over https: the
mTLS echo agent with "tls_client_cert"/"tls_client_key" in its agents-file entry, dd_agent.py
under uvicorn TLS as py.chat and, requiring a client certificate, as py.mtls, and `ddwire agent
hello`, `ddwire agent director`), "agents" (how many the harness is configured with) and "pki" (the copies of
fixtures/tls). Every client is an `httpx.AsyncClient` whose `verify=` is an `ssl.SSLContext`
holding the test CA (and, for mTLS, the client certificate), handed to the SDK as
`httpx_client`, as an a2a-sdk user does.

Tests:
- `agent-echo/card`: `A2ACardResolver` validates the card over TLS 1.2 or 1.3; the server
  presented server.pem's leaf certificate, valid for 127.0.0.1; the card's url is https;
- `agent-echo/send-text`, `agent-echo/send-invocation`: `message/send` answered over TLS: the
  text echoed; an InvocationRequest for echo.wire whose Echo value comes back unchanged;
- `agent-echo/ipv6`: the echo agent bound to ::1: its card says https://[::1]:PORT, the
  certificate is verified for the IP address ::1 (server.pem's subjectAltName), a send is echoed;
- `agent-echo/unknown-ca-refused`: httpx's default trust (certifi) refuses the test CA's
  certificate: the server's certificate really is checked;
- `harness/agents-over-tls`: GET /healthz (https) shows every configured agent available: the
  harness read each card over https, mTLS ones included;
- `harness/card`, `harness/echo-behind-mtls`, `harness/py-agent-behind-mtls`: the harness's card
  says https; runs through the harness to the mTLS ddwire agent and to the a2a-sdk agent under
  uvicorn with ssl_cert_reqs=CERT_REQUIRED succeed (the harness presented the client
  certificate named in the agents file);
- `harness/delegation-over-tls`: director.route (a ddwire TLS agent) delegates to hello.world by
  calling the harness back at its https URL: the parent's envelope lists one succeeded delegation,
  and the child run, read with GET /runs/{id} over https, succeeded;
- `mtls/no-client-cert-refused`, `mtls/other-ca-client-cert-refused`: the mTLS agent answers no
  HTTP at all to a client without a certificate, or with one from another CA;
- `mtls/client-cert-answered`: with client.pem/client.key the same agent answers the card and a
  `message/send`.
"""

import asyncio
import json
import os
import ssl
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

import httpx  # noqa: E402
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory  # noqa: E402
from a2a.types import DataPart, Message, Part, Role, Task, TaskState, TextPart  # noqa: E402

import tls_options  # noqa: E402
from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
PKI = CFG["pki"]
CA = os.path.join(PKI, "ca.pem")
CLIENT = (os.path.join(PKI, "client.pem"), os.path.join(PKI, "client.key"))
OTHER_CLIENT = (os.path.join(PKI, "client-other.pem"), os.path.join(PKI, "client-other.key"))


def context(client=None):
    return tls_options.client_context(CA, *(client or (None, None)))


def message(parts):
    return Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user, parts=parts)


async def send(base, parts, verify, seen=None):
    """Resolve the card over https, send one message/send, return (card, Task)."""

    async def tls_of(response):
        ssl_object = response.extensions["network_stream"].get_extra_info("ssl_object")
        if seen is not None:
            seen.append(ssl_object)

    async with httpx.AsyncClient(timeout=30, verify=verify, event_hooks={"response": [tls_of]}) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        events = [ev async for ev in client.send_message(message(parts))]
    expect(len(events) == 1 and isinstance(events[0], tuple) and isinstance(events[0][0], Task),
           f"the reply is not one Task: {events!r:.300}")
    return card, events[0][0]


def fixture_leaf_der(name):
    """The DER bytes of the first certificate (the leaf) in fixtures/tls/<name>."""
    text = open(os.path.join(PKI, name)).read()
    end = "-----END CERTIFICATE-----"
    return ssl.PEM_cert_to_DER_cert(text[:text.index(end) + len(end)])


def test_echo_card():
    seen = []
    card, task = asyncio.run(send(CFG["echo"], [Part(root=TextPart(text="card"))], context(), seen))
    expect(card.name == "echo.wire", f"card name {card.name!r}")
    expect(card.url == CFG["echo"] + "/a2a", f"card url {card.url!r}, not {CFG['echo']}/a2a")
    expect(seen, "no response seen")
    for ssl_object in seen:
        expect(ssl_object is not None, "a response came over a connection without TLS")
        expect(ssl_object.version() in ("TLSv1.2", "TLSv1.3"), f"TLS version {ssl_object.version()}")
        cert = ssl_object.getpeercert()
        expect(ssl_object.getpeercert(True) == fixture_leaf_der("server.pem"),
               f"the server presented serial {cert['serialNumber']}, not server.pem's leaf")
        expect(("IP Address", "127.0.0.1") in cert.get("subjectAltName", ()), f"SAN {cert.get('subjectAltName')}")
    print(f"echo agent: {seen[0].version()} {seen[0].cipher()[0]}")


def test_echo_send_text():
    _, task = asyncio.run(send(CFG["echo"], [Part(root=TextPart(text="hello over TLS"))], context()))
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    text = [p.root.text for p in (task.status.message.parts if task.status.message else [])
            if isinstance(p.root, TextPart)]
    expect(text == ["hello over TLS"], f"echoed {text}")


VALUE = {"over": "tls", "n": [1, 2.5, None, True], "nested": {"é": "ü"}}


def echo_invocation():
    return {"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": VALUE}}


def test_echo_send_invocation():
    _, task = asyncio.run(send(CFG["echo"], [Part(root=DataPart(data=echo_invocation()))], context()))
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    arts = task.artifacts or []
    expect([a.name for a in arts] == ["agent-result"], f"artifacts {[a.name for a in arts]}")
    result = arts[0].parts[0].root.data["result"]
    expect(result["outcome"]["status"] == "succeeded", f"outcome {result['outcome']}")
    expect(result["payload"].get("value") == VALUE, f"payload {result['payload']}")


def test_echo_ipv6():
    card, task = asyncio.run(send(CFG["echo6"], [Part(root=TextPart(text="over ::1"))], context()))
    expect(card.url == CFG["echo6"] + "/a2a", f"card url {card.url!r}, not {CFG['echo6']}/a2a")
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    text = [p.root.text for p in task.status.message.parts if isinstance(p.root, TextPart)]
    expect(text == ["over ::1"], f"echoed {text}")


def test_echo_unknown_ca_refused():
    try:
        asyncio.run(send(CFG["echo"], [Part(root=TextPart(text="x"))], True))
    except Exception as e:  # noqa: BLE001 - the SDK wraps httpx's error
        chain, cause = [], e
        while cause is not None:
            chain.append(f"{type(cause).__name__}: {cause}")
            cause = cause.__cause__ or cause.__context__
        expect(any("CERTIFICATE_VERIFY_FAILED" in c for c in chain), f"refused, but not for the certificate: {chain}")
        return
    raise AssertionError("httpx's default trust store accepted the test CA's certificate")


def get_json(url, verify):
    with httpx.Client(timeout=10, verify=verify) as http:
        r = http.get(url)
        return r.status_code, r.json()


def test_harness_agents_over_tls():
    deadline = time.monotonic() + 30
    while True:
        status, body = get_json(CFG["harness"] + "/healthz", context())
        agents = body.get("agents", {})
        if agents.get("available") == CFG["agents"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    expect(agents.get("configured") == CFG["agents"], f"configured {agents.get('configured')}")
    expect(agents.get("available") == CFG["agents"] and status == 200,
           f"HTTP {status}: {agents.get('available')} of {CFG['agents']} available; "
           f"unavailable {agents.get('unavailable')}; incompatible {agents.get('incompatible')}")


def test_harness_card():
    async def go():
        async with httpx.AsyncClient(timeout=30, verify=context()) as http:
            return await A2ACardResolver(http, CFG["harness"]).get_agent_card()
    card = asyncio.run(go())
    expect(card.url == CFG["harness"] + "/a2a", f"card url {card.url!r}, not {CFG['harness']}/a2a")


def envelope(task):
    expect(task.status.state == TaskState.completed, f"task {task.status.state}: {task.status!r:.400}")
    arts = task.artifacts or []
    expect([a.name for a in arts] == ["envelope"], f"artifacts {[a.name for a in arts]}")
    env = arts[0].parts[0].root.data
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    return env


def test_harness_echo_behind_mtls():
    _, task = asyncio.run(send(CFG["harness"], [Part(root=DataPart(data=echo_invocation()))], context()))
    env = envelope(task)
    expect(env["payload"].get("value") == VALUE, f"payload {env['payload']}")


def test_harness_py_agent_behind_mtls():
    text = "over mutual TLS"
    doc = {"agent_id": "py.mtls", "input": {"schema_class": "Message", "message_text": text}}
    _, task = asyncio.run(send(CFG["harness"], [Part(root=DataPart(data=doc))], context()))
    env = envelope(task)
    expect(env["payload"]["reply_text"] == f"Python heard: {text}", f"payload {env['payload']!s:.300}")


def test_harness_delegation_over_tls():
    doc = {"agent_id": "director.route", "input": {"schema_class": "Message", "message_text": "Say hello"}}
    _, task = asyncio.run(send(CFG["harness"], [Part(root=DataPart(data=doc))], context()))
    env = envelope(task)
    dels = env.get("delegations") or []
    expect(len(dels) == 1 and dels[0]["delegated_agent_id"] == "hello.world"
           and dels[0]["delegated_status"] == "succeeded", f"delegations {dels}")
    status, child = get_json(f"{CFG['harness']}/runs/{dels[0]['delegated_invocation_id']}", context())
    expect(status == 200 and child["outcome"]["status"] == "succeeded", f"child run: HTTP {status} {str(child)[:300]}")


def refused(client):
    """GET the mTLS agent's card: no HTTP answer at all, a transport (TLS) error instead."""
    try:
        status, _ = get_json(CFG["mecho"] + "/.well-known/agent-card.json", context(client))
    except httpx.TransportError as e:
        print(f"refused as wanted: {type(e).__name__}: {e}")
        return
    raise AssertionError(f"the mTLS agent answered HTTP {status}")


def test_mtls_no_client_cert_refused():
    refused(None)


def test_mtls_other_ca_client_cert_refused():
    refused(OTHER_CLIENT)


def test_mtls_client_cert_answered():
    card, task = asyncio.run(send(CFG["mecho"], [Part(root=TextPart(text="mutual"))], context(CLIENT)))
    expect(card.url == CFG["mecho"] + "/a2a", f"card url {card.url!r}")
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    text = [p.root.text for p in task.status.message.parts if isinstance(p.root, TextPart)]
    expect(text == ["mutual"], f"echoed {text}")


if __name__ == "__main__":
    sys.exit(run([
        ("a2a03/agent-echo/card", test_echo_card),
        ("a2a03/agent-echo/send-text", test_echo_send_text),
        ("a2a03/agent-echo/send-invocation", test_echo_send_invocation),
        ("a2a03/agent-echo/ipv6", test_echo_ipv6),
        ("a2a03/agent-echo/unknown-ca-refused", test_echo_unknown_ca_refused),
        ("a2a03/harness/agents-over-tls", test_harness_agents_over_tls),
        ("a2a03/harness/card", test_harness_card),
        ("a2a03/harness/echo-behind-mtls", test_harness_echo_behind_mtls),
        ("a2a03/harness/py-agent-behind-mtls", test_harness_py_agent_behind_mtls),
        ("a2a03/harness/delegation-over-tls", test_harness_delegation_over_tls),
        ("mtls/no-client-cert-refused", test_mtls_no_client_cert_refused),
        ("mtls/other-ca-client-cert-refused", test_mtls_other_ca_client_cert_refused),
        ("mtls/client-cert-answered", test_mtls_client_cert_answered),
    ]))
