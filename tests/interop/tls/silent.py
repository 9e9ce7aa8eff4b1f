"""A TCP listener that accepts connections and never says a word (standard library only).

Usage: python3 silent.py PORT      (binds 127.0.0.1)

A TLS client's ClientHello gets no ServerHello: its handshake can only time out. Connections are
held open (and read, so that nothing is refused) until the client goes away. GET readiness
cannot be asked of it; the suite waits for its port to accept.
"""

import socket
import sys
import threading


def hold(conn):
    with conn:
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass


def main():
    server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
    while True:
        conn, _ = server.accept()
        threading.Thread(target=hold, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
