"""TLS options shared by the interop servers and clients (standard library only).

The test servers server_a2a03.py and ../relay/server_stream.py accept, after their own
arguments (and ../harness/dd_agent.py, through its argparse, the same flags):

    --tls-cert FILE --tls-key FILE   serve over TLS (uvicorn's ssl_certfile / ssl_keyfile, what its
                                     --ssl-certfile / --ssl-keyfile flags set); the card says https
    --tls-client-ca FILE             also require a client certificate signed by FILE (uvicorn's
                                     ssl_cert_reqs=CERT_REQUIRED, ssl_ca_certs=FILE)

and the clients (client_a2a03.py, ../harness/harness_a2a03.py) `--ca FILE`: trust FILE's CA (an
`ssl.SSLContext` given to httpx as `verify=`, and to urllib as `context=`). Without them nothing
changes: plain HTTP, and the default trust.
"""

import ssl

SERVER_FLAGS = ("--tls-cert", "--tls-key", "--tls-client-ca")


def split(argv, flags=SERVER_FLAGS + ("--ca",)):
    """Take `--flag VALUE` pairs named in `flags` out of argv: (the other arguments, {flag: value})."""
    rest, found, i = [], {}, 0
    while i < len(argv):
        if argv[i] in flags and i + 1 < len(argv):
            found[argv[i]] = argv[i + 1]
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    return rest, found


def scheme(opts):
    return "https" if opts.get("--tls-cert") else "http"


def uvicorn_kwargs(opts):
    """Keyword arguments for `uvicorn.run` (the same settings as `uvicorn --ssl-certfile ...`)."""
    if not opts.get("--tls-cert"):
        return {}
    kwargs = {"ssl_certfile": opts["--tls-cert"], "ssl_keyfile": opts["--tls-key"]}
    if opts.get("--tls-client-ca"):
        kwargs.update(ssl_cert_reqs=ssl.CERT_REQUIRED, ssl_ca_certs=opts["--tls-client-ca"])
    return kwargs


def client_context(ca=None, cert=None, key=None):
    """A client SSLContext trusting only `ca` (none: the default store), presenting cert/key if given."""
    ctx = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def verify(opts):
    """httpx's `verify=` for `--ca FILE`: an SSLContext, or True (httpx's default) without it."""
    return client_context(opts["--ca"]) if opts.get("--ca") else True


def urlopen_context(opts):
    """urllib's `context=` for `--ca FILE`, or None (the default) without it."""
    return client_context(opts["--ca"]) if opts.get("--ca") else None
