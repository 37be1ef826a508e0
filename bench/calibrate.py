"""How fast this host runs Python right now: a fixed pure-Python workload, timed in CPU milliseconds.

    python -m bench.calibrate     # prints {"reference_cpu_ms": ...}

The machines are shared and their speed varies from day to day (the same commit has measured
2-3x more CPU per turn on one host than on another). `bench.run` times this workload on the
server's core at the start and the end of a run; compare it before comparing absolute figures of
two runs. Ratios between rows of one run need no such correction.
"""

from __future__ import annotations

import json
import time

DOC = {"role": "assistant", "parts": [{"type": "text", "text": "word " * 20}], "usage": {"input_tokens": 900}}


def workload() -> None:
    """JSON, string formatting, dict and attribute access: the kind of work a request does."""
    for i in range(20_000):
        text = json.dumps(DOC)
        back = json.loads(text)
        _ = f"id: {i}\nevent: text\ndata: {back['parts'][0]['text'][:10]}\n\n"
        _ = sorted(back) + list(back.items())


def reference_cpu_ms(repeat: int = 5) -> float:
    """The best of `repeat` timings (the least disturbed by other work on the host)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        workload()
        best = min(best, time.process_time() - started)
    return round(best * 1000, 1)


if __name__ == "__main__":
    print(json.dumps({"reference_cpu_ms": reference_cpu_ms()}))
