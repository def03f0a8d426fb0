# recorder.py CERT KEY DIR: a TLS HTTP/1.1 server for test_kube that records what it is sent.
# Prints its port. For each request it writes the raw bytes it received (head and body) to
# DIR/request, then answers with the bytes of DIR/response (a whole HTTP response, removed once
# sent) if that file exists, else 200 with "{}". One connection at a time, kept alive.
import os, sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tlsserve  # noqa: E402  (tests/unit/tlsserve.py)

cert, key, out = sys.argv[1], sys.argv[2], sys.argv[3]
ctx, ls = tlsserve.listen(cert, key, backlog=4)


def serve(s):
    f = s.makefile("rb")
    while True:
        req = tlsserve.read_request(f)
        if req is None:
            return
        head, body = req
        with open(os.path.join(out, "request.tmp"), "wb") as w:
            w.write(head + body)
        os.rename(os.path.join(out, "request.tmp"), os.path.join(out, "request"))
        resp = os.path.join(out, "response")
        if os.path.exists(resp):
            with open(resp, "rb") as r:
                data = r.read()
            os.remove(resp)
        else:
            data = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        s.sendall(data)


tlsserve.serve_forever(ctx, ls, serve)
