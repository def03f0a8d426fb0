"""A server that stops sending mid-body: the binary's read timeout ends the pass (exit 1),
no action. Its own module so the runner starts it first, beside the others."""
import time
import unittest

from apiserver import Fault
import test_faults
from test_faults import cluster


class SlowBody(test_faults.FaultCase):
    def test_slow_server_mid_body(self):
        self.server(cluster())
        self.srv.on(Fault("slow", seconds=150), times=None, list_only=True)
        t0 = time.monotonic()
        r = self.once(taint_after=60, prune_after=300, timeout=150)
        self.fails_cleanly(r)
        self.assertLess(time.monotonic() - t0, 140)


if __name__ == "__main__":
    unittest.main()
