# server.py CERT KEY [CLIENT_CA|-] [HOST]: a tiny TLS HTTP/1.1 server for test_http.
# Prints its port, then serves one connection at a time. The path picks the behaviour.
import os, sys, time

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tlsserve  # noqa: E402  (tests/unit/tlsserve.py)

cert, key = sys.argv[1], sys.argv[2]
client_ca = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "-" else None
host = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"
ctx, ls = tlsserve.listen(cert, key, client_ca, host)

conns = 0
drop = 0


def read_request(f):
    req = tlsserve.read_request(f)
    if req is None:
        return None
    head, body = req
    return head.split(b" ", 2)[1].decode(), head, body


def send(s, status, body, extra=b""):
    s.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\n" + extra + b"\r\n" + body)


def serve(s):
    global drop
    f = s.makefile("rb")
    while True:
        req = read_request(f)
        if req is None:
            return
        path, head, body = req
        if drop > 0:
            drop -= 1
            return                  # read the request, answer nothing, close
        if path == "/hello":
            send(s, b"200 OK", b"hello")
        elif path == "/arm-drop":
            drop = 1
            send(s, b"200 OK", b"armed")
        elif path == "/arm-drop2":
            drop = 2
            send(s, b"200 OK", b"armed")
        elif path == "/stats":
            send(s, b"200 OK", str(conns).encode())
        elif path == "/echo":
            send(s, b"200 OK", head + body)
        elif path == "/whoami":
            c = s.getpeercert()
            who = dict(x[0] for x in c["subject"])["commonName"] if c else "nobody"
            send(s, b"200 OK", who.encode())
        elif path == "/chunked":
            s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"5;x=y\r\nhello\r\n7\r\n, world\r\n0\r\nX-T: 1\r\n\r\n")
        elif path == "/big":
            out = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]
            for i in range(300):
                piece = bytes((i + j) % 251 for j in range(1 + i * 7 % 1500))
                out.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
            out.append(b"0\r\n\r\n")
            s.sendall(b"".join(out))
        elif path == "/eof":
            s.sendall(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
            s.unwrap().close()      # with close_notify
            return
        elif path == "/eof-dirty":
            s.sendall(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
            return                  # socket closed without close_notify
        elif path == "/cut":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..")
            return
        elif path == "/stream":
            # a body that streams: a chunk, its line end alone later (framing, no data), then a
            # pause longer than a reader's grace, then the end
            s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd")
            time.sleep(0.05)
            s.sendall(b"\r\n")
            time.sleep(0.6)
            s.sendall(b"0\r\n\r\n")
        elif path == "/slow":
            time.sleep(2)
            send(s, b"200 OK", b"late")
        elif path == "/close":
            send(s, b"200 OK", b"bye", b"Connection: close\r\n")
            return
        elif path == "/429":
            send(s, b"429 Too Many Requests", b"slow down", b"Retry-After: 7\r\n")
        else:
            send(s, b"404 Not Found", b"no such path")


def accepted():
    global conns
    conns += 1


tlsserve.serve_forever(ctx, ls, serve, accepted)
