# recorder.py CERT KEY DIR: a TLS HTTP/1.1 server for test_kube that records what it is sent.
# Prints its port. For each request it writes the raw bytes it received (head and body) to
# DIR/request, then answers with the bytes of DIR/response (a whole HTTP response, removed once
# sent) if that file exists, else 200 with "{}". One connection at a time, kept alive.
import os, socket, ssl, sys

cert, key, out = sys.argv[1], sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(4)
print(ls.getsockname()[1], flush=True)


def serve(s):
    f = s.makefile("rb")
    while True:
        head = b""
        length = 0
        while True:
            line = f.readline()
            if not line:
                return
            head += line
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        body = f.read(length) if length else b""
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


while True:
    c, _ = ls.accept()
    try:
        s = ctx.wrap_socket(c, server_side=True)
        serve(s)
    except (OSError, ssl.SSLError):
        pass
    finally:
        c.close()
