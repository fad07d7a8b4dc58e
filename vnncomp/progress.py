"""Progress on stderr: one rewritten line on a terminal, one line per finished model otherwise."""

import sys
import threading
import time


class Progress:
    def __init__(self, total, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.lock = threading.Lock()
        self.counts = {"pass": 0, "fail": 0, "error": 0, "skipped": 0}
        self.finished = 0
        self.current = ""
        self.start_time = time.monotonic()

    def _status(self):
        c = self.counts
        elapsed = time.monotonic() - self.start_time
        skipped = f", {c['skipped']} skipped" if c["skipped"] else ""
        return (f"[{self.finished}/{self.total}] {c['pass']} pass, {c['fail']} fail, "
                f"{c['error']} error{skipped}, {elapsed:.0f} s")

    def _redraw(self):
        line = self._status() + (f" | {self.current}" if self.current else "")
        width = 160
        self.stream.write("\r\x1b[K" + line[:width])
        self.stream.flush()

    def start(self, entry):
        with self.lock:
            self.current = f"{entry.benchmark}/{entry.model}"
            if self.tty:
                self._redraw()

    def done(self, row):
        with self.lock:
            self.finished += 1
            self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1
            if self.tty:
                self._redraw()
                return
            if row["status"] == "skipped":
                return
            err = f"  {row['error']}" if row.get("error") else ""
            secs = row.get("validate_s")
            took = f" ({secs:.1f} s)" if isinstance(secs, (int, float)) else ""
            self.stream.write(f"[{self.finished}/{self.total}] {row['status']:5} "
                              f"{row['benchmark']}/{row['model']}{took}{err[:300]}\n")
            self.stream.flush()

    def close(self):
        with self.lock:
            if self.tty:
                self.current = ""
                self._redraw()
                self.stream.write("\n")
                self.stream.flush()
