"""A server that accepts the request and never answers: the read timeout ends the pass.

The pass must end within SLOW_LIMIT seconds: the binary's read timeout is 30 s (http.h), and a
request that timed out may be retried once, not again and again (the contract retries a 5xx or
a dropped connection; a hung server is neither, and every retry holds the pass another 30 s)."""
import unittest

from apiserver import Fault
import test_faults
from test_faults import cluster

SLOW_LIMIT = 100


class SlowHeaders(test_faults.FaultCase):
    def test_slow_server_no_headers(self):
        self.server(cluster())
        self.srv.on(Fault("slow_headers", seconds=SLOW_LIMIT + 60), times=None, list_only=True)
        r = self.once(taint_after=60, prune_after=300, timeout=SLOW_LIMIT)
        self.fails_cleanly(r)


if __name__ == "__main__":
    unittest.main()
