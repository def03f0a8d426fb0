"""A server that stops sending mid-body: the page's deadline ends the pass (exit 1),
no action, within the same limit as test_slow_headers."""
import unittest

from apiserver import Fault
import test_faults
from test_faults import cluster
from test_slow_headers import SLOW_LIMIT


class SlowBody(test_faults.FaultCase):
    def test_slow_server_mid_body(self):
        self.server(cluster())
        self.srv.on(Fault("slow", seconds=SLOW_LIMIT + 60), times=None, list_only=True)
        r = self.once(taint_after=60, prune_after=300, timeout=SLOW_LIMIT)
        self.fails_cleanly(r)


if __name__ == "__main__":
    unittest.main()
