"""What the unit tests' small TLS servers share (http/server.py, kube/recorder.py): the listening
socket and its TLS context, the port printed for the C test to read, one HTTP/1.1 request read
with its Content-Length body, and the accept loop that serves one connection at a time. Loopback
only; it never chooses what to answer: each server does that.
"""
import socket
import ssl
import sys


def listen(cert, key, client_ca=None, host="127.0.0.1", backlog=8):
    """A TLS context and a socket bound to host on a free port, whose number is printed on its
    own line (or "unavailable", and exit 0, when host cannot be bound: no IPv6 loopback)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    if client_ca:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(client_ca)
    try:
        ls = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, 0))
    except OSError:
        print("unavailable", flush=True)
        sys.exit(0)
    ls.listen(backlog)
    print(ls.getsockname()[1], flush=True)
    return ctx, ls


def read_request(f):
    """One request from the file f: (head, body), the head with its request line and the empty
    line that ends it, or None when the connection ends first."""
    head = []
    length = 0
    while True:
        line = f.readline()
        if not line:
            return None
        head.append(line)
        if len(head) > 1 and line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        if len(head) > 1 and name.strip().lower() == b"content-length":
            length = int(value.strip())
    body = f.read(length) if length else b""
    return b"".join(head), body


def serve_forever(ctx, ls, serve, on_accept=None):
    """Accepts connections one at a time, calls serve(tls_socket) for each, closes it after.
    on_accept() is called for every connection accepted, before its handshake."""
    while True:
        c, _ = ls.accept()
        if on_accept:
            on_accept()
        try:
            s = ctx.wrap_socket(c, server_side=True)
        except (ssl.SSLError, OSError):
            c.close()
            continue
        try:
            serve(s)
        except (ssl.SSLError, OSError):
            pass
        try:
            s.close()
        except OSError:
            pass
