#!/usr/bin/env python3
"""Writes random share-partition scenarios: gen.py SEED COUNT STEPS OUTDIR.

Each scenario lays out a log (plain batches, committed and aborted
transactions with their markers) and then runs random acquisitions from
the next fetch offset, acknowledgements of held runs and of random ranges,
lock timeouts, departures and log start movements, with the state shown
after every few commands. regen.sh runs them through Kafka's SharePartition.
"""
import random
import sys


def scenario(rng, steps):
    lines = [f"# random scenario, seed {rng.random():.6f}"]
    lines.append(f"config delivery={rng.randint(2, 6)} locks={rng.randint(8, 40)} lock={rng.randint(5, 20) * 1000} "
                 f"renew={'true' if rng.random() < 0.8 else 'false'}")
    lines.append("load start=0")
    batches, aborted, off, pid = [], [], 0, 100
    while off < 400:
        size = rng.randint(1, 6)
        kind = rng.random()
        if kind < 0.1:
            pid += 1
            aborted.append(f"{pid}@{off}")
            batches.append(f"{off}-{off + size - 1}/t{pid}")
            off += size
            batches.append(f"{off}-{off}/a{pid}")
            off += 1
        elif kind < 0.2:
            batches.append(f"{off}-{off + size - 1}/t7")
            off += size
            batches.append(f"{off}-{off}/c7")
            off += 1
        else:
            batches.append(f"{off}-{off + size - 1}")
            off += size
    lines.append("log batches=" + ",".join(batches))
    committed = rng.random() < 0.7
    members = ["a", "b", "c"]
    logstart = 0
    for i in range(steps):
        op = rng.random()
        m = rng.choice(members)
        if op < 0.35:
            mode = " mode=record_limit" if rng.random() < 0.4 else ""
            extra = (" aborted=" + ",".join(aborted) + " committed") if committed and aborted else ""
            lines.append(f"acquire m={m}{mode} size={rng.randint(1, 8)} max={rng.randint(1, 15)} fetch=next "
                         f"n={rng.randint(1, 4)}{extra}")
        elif op < 0.6:
            lines.append(f"ackheld m={m} t={rng.choice([1, 1, 2, 3, 4])} k={rng.randint(1, 3)}")
        elif op < 0.68:
            first = rng.randint(0, 60)
            last = first + rng.randint(0, 3)
            if rng.random() < 0.5:
                types = str(rng.randint(0, 4))
            else:
                types = ".".join(str(rng.randint(0, 4)) for _ in range(last - first + 1))
            lines.append(f"ack m={m} {first}-{last}:{types}")
        elif op < 0.8:
            lines.append(f"tick {rng.randint(0, 9) * 1000}")
        elif op < 0.85:
            lines.append(f"release m={m}")
        elif op < 0.88:
            logstart += rng.randint(0, 6)
            lines.append(f"logstart {logstart}")
        if i % 4 == 3:
            lines.append("state")
    lines.append("state")
    return "\n".join(lines) + "\n"


def main():
    seed, count, steps, outdir = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    for n in range(count):
        with open(f"{outdir}/random-{n:02d}.txt", "w") as f:
            f.write(scenario(rng, steps))


if __name__ == "__main__":
    main()
