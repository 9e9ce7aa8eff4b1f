import hashlib, hmac, re, secrets, time

HEADERS = ("dd-key-id", "dd-timestamp", "dd-nonce", "dd-signature")

def canonical(direction, key_id, method, target, timestamp, nonce, body):
    lines = ["DD-HMAC-SHA256-V1", direction, key_id, method, target, str(timestamp), nonce]
    return "\n".join(lines + [hashlib.sha256(body).hexdigest()]).encode("ascii")

def tag(secret, *fields):
    return "v1=" + hmac.new(secret, canonical(*fields), hashlib.sha256).hexdigest()

def sign(secret, key_id, direction, method, target, body, timestamp=None, nonce=None):
    timestamp, nonce = timestamp or int(time.time()), nonce or secrets.token_hex(16)
    values = (key_id, str(timestamp), nonce, tag(secret, direction, key_id, method, target, timestamp, nonce, body))
    return dict(zip(HEADERS, values))

def verify(secret, key_id, direction, method, target, body, headers, seen, window=300, now=None):
    """headers: lower-case names. seen: {nonce: timestamp}, pruned here. Raises ValueError(reason)."""
    kid, ts, nonce, sig = (headers.get(h) for h in HEADERS)
    if None in (kid, ts, nonce, sig): raise ValueError("missing")
    if kid != key_id or not re.fullmatch(r"[1-9][0-9]{0,11}|0", ts) or not re.fullmatch(r"[A-Za-z0-9_-]{16,64}", nonce): raise ValueError("malformed")
    now = int(time.time()) if now is None else now
    if abs(now - int(ts)) > window: raise ValueError("stale")
    if not hmac.compare_digest(sig, tag(secret, direction, key_id, method, target, int(ts), nonce, body)): raise ValueError("bad-signature")
    for old in [n for n, t in seen.items() if abs(now - t) > window]: del seen[old]
    if nonce in seen: raise ValueError("replayed")
    if len(seen) >= 65536: raise ValueError("stale")  # full: refuse rather than forget a nonce
    seen[nonce] = int(ts)
