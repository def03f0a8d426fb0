"""A server that accepts the request and never answers: the read timeout ends the pass."""
import unittest

from apiserver import Fault
import test_faults
from test_faults import cluster


class SlowHeaders(test_faults.FaultCase):
    def test_slow_server_no_headers(self):
        self.server(cluster())
        self.srv.on(Fault("slow_headers", seconds=150), times=None, list_only=True)
        r = self.once(taint_after=60, prune_after=300, timeout=150)
        self.fails_cleanly(r)


if __name__ == "__main__":
    unittest.main()
