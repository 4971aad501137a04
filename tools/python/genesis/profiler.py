"""genesis.profiler: records every op call (host time) and writes a Chrome trace.

    with genesis.profiler.profile() as prof:
        y = genesis.matmul(x, x.T)
    prof.export_chrome_trace("trace.json")   # open in Perfetto / chrome://tracing
    print(prof.summary())                    # calls, total and mean time per op
"""
from genesis import _C


class profile:
    """Context manager recording op calls between enter and exit."""

    def __init__(self, trace_path=None, print_summary=False):
        self.trace_path, self.print_summary, self._running = trace_path, print_summary, False

    def __enter__(self):
        _C.profiler_start()
        self._running = True
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def stop(self):
        if self._running:
            _C.profiler_stop()
            self._running = False
            if self.trace_path:
                _C.profiler_export_chrome_trace(self.trace_path)
            if self.print_summary:
                print(self.summary())

    def export_chrome_trace(self, path):
        """Writes the recording as Chrome-trace JSON (stops first if still running)."""
        self.stop()
        _C.profiler_export_chrome_trace(path)

    def summary(self):
        """The per-op table: name, calls, total and mean host time, share."""
        return _C.profiler_summary()

    def key_averages(self):
        return _Table(self.summary())

    def memory_summary(self, device=None):
        return _C.memory_summary(device)


class _Table(str):
    def table(self, **kwargs):
        return str(self)
