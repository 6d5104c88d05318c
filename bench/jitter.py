#!/usr/bin/env python3
"""The machine's own stalls, without reqlife: how late a 50 us sleep wakes, per core.

Before quoting schedule-lag figures (issue 14), tell the generator's lateness from the
machine's. On each CPU of --cpus, pinned there, this sleeps 50 us over and over for --seconds
and records how late each wake-up came (the oversleep: the time slept minus 50 us, Python's
own cost of about 10 us included). Printed per CPU: the worst oversleep in each 300 ms slice,
the count of wake-ups later than 1 ms, and the worst. A core whose worst is several
milliseconds with nothing else running stalls by itself: a kernel thread of its own (DAMON's
kdamond, see nginx.py's warning), or the host. On the 2-core VM of the 2026-11-23 figures, core
1 stalled 1-5 ms about once a second in some runs and not in others, kdamond moved off it or not,
with no other task of the guest on the core and no steal time in /proc/stat: the host's.

It measures; it does not judge: exit 0 whenever it ran.

    python3 bench/jitter.py [--cpus 0,1] [--seconds 3] [--rounds 3]
"""

import argparse
import os
import time

SLEEP_S = 50e-6
SLICE_S = 0.3


def probe(seconds):
    """Oversleeps of one run on the calling thread's CPU: the worst per slice (us), the count
    over 1 ms and the worst (us)."""
    start = time.monotonic()
    slices = [0.0] * max(1, int(seconds / SLICE_S))
    over_1ms = 0
    while True:
        before = time.monotonic()
        time.sleep(SLEEP_S)
        after = time.monotonic()
        i = int((after - start) / SLICE_S)
        if i >= len(slices):
            break
        late = (after - before - SLEEP_S) * 1e6
        slices[i] = max(slices[i], late)
        over_1ms += late > 1000
    return slices, over_1ms, max(slices)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpus", default="0,1", help="CPUs to probe, one after the other")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    for cpu in [int(c) for c in a.cpus.split(",")]:
        os.sched_setaffinity(0, {cpu})
        for r in range(1, a.rounds + 1):
            slices, over, worst = probe(a.seconds)
            per_slice = " ".join(f"{s:.0f}" for s in slices)
            print(f"cpu {cpu} round {r}: worst {worst:.0f} us, {over} wake-ups over 1 ms; "
                  f"worst per {SLICE_S * 1000:.0f} ms: {per_slice}")


if __name__ == "__main__":
    main()
