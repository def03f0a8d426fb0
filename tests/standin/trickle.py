"""A trickling TCP proxy: what a network path with no key or certificate can do.

It listens on 127.0.0.1 and forwards to the stand-in. The client's bytes go through at once;
the server's go through whole up to a point and then one byte every `every` seconds:

    start="handshake"  from the first byte (the TLS handshake never quite ends)
    start="response"   from the server's first TLS application-data record (the first response)

It reads only TLS record headers (5 bytes: type, version, length), never decrypts. Every loop
is bounded by the proxy's stop flag.
"""
import select
import socket
import threading
import time

APPLICATION_DATA = 23


class TrickleProxy:
    def __init__(self, target_port, start="handshake", every=0.5):
        assert start in ("handshake", "response")
        self.target_port = target_port
        self.start_at = start
        self.every = every
        self.trickling = threading.Event()  # set when the first byte was held back
        self.connections = 0
        self._stop = threading.Event()
        self._socks = []
        self._threads = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = "https://127.0.0.1:%d" % self.port

    def start(self):
        self._spawn(self._accept_loop)
        return self

    def stop(self):
        self._stop.set()
        for s in list(self._socks) + [self.sock]:
            try:
                s.close()
            except OSError:
                pass
        for t in list(self._threads):
            t.join(timeout=5)

    def _spawn(self, fn, *a):
        t = threading.Thread(target=fn, args=a, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                client, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            self.connections += 1
            self._socks += [client, server]
            self._spawn(self._pipe, client, server)

    def _pipe(self, client, server):
        held = b""           # server bytes not yet passed on
        whole = b""          # server bytes still being sorted into records
        slow = self.start_at == "handshake"
        next_byte = time.monotonic()
        try:
            while not self._stop.is_set():
                wait = max(0.0, next_byte - time.monotonic()) if held else 0.2
                r, _, _ = select.select([client, server], [], [], min(wait, 0.2))
                if client in r:
                    d = client.recv(65536)
                    if not d:
                        return
                    server.sendall(d)
                if server in r:
                    d = server.recv(65536)
                    if not d and not held:
                        return
                    if slow:
                        held += d
                    else:
                        whole += d
                        # pass whole records until the first application-data record
                        while len(whole) >= 5 and not slow:
                            if whole[0] == APPLICATION_DATA:
                                slow = True
                                held += whole
                                whole = b""
                                break
                            n = 5 + int.from_bytes(whole[3:5], "big")
                            if len(whole) < n:
                                break
                            client.sendall(whole[:n])
                            whole = whole[n:]
                if held and time.monotonic() >= next_byte:
                    self.trickling.set()
                    client.sendall(held[:1])
                    held = held[1:]
                    next_byte = time.monotonic() + self.every
        except OSError:
            return
        finally:
            for s in (client, server):
                try:
                    s.close()
                except OSError:
                    pass
