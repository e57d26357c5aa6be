#!/usr/bin/env python3
"""Writes numpy's `np.argsort` order for tie-heavy float64 arrays (NAVSIM pins numpy 1.23).

gymwire reproduces numpy's default, unstable argsort where NAVSIM keeps the first k of it (envs/navsim/argsort.ts);
test/envs/navsim/argsort.test.ts compares against these vectors.

    python scripts/navsim/numpy_argsort_vectors.py test/fixtures/navsim-reference/numpy-argsort.json
"""
import json
import sys

import numpy as np


def main() -> None:
    rng = np.random.default_rng(7)
    cases = []
    for n, distinct in [(5, 2), (16, 3), (17, 2), (33, 3), (55, 2), (100, 5), (257, 4), (1000, 7), (300, 300)]:
        values = rng.integers(0, distinct, size=n).astype(np.float64) * 0.5 + 25.0
        cases.append({"values": values.tolist(), "argsort": np.argsort(values).tolist()})
    # PDM-Closed's crowd_tie distances: 19 at 25 m, then 36 at 65 m.
    values = np.array([25.0] * 19 + [65.0] * 36)
    cases.append({"values": values.tolist(), "argsort": np.argsort(values).tolist()})
    doc = {"numpy": np.__version__, "kind": "quicksort (the default)", "cases": cases}
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f)
        f.write("\n")


if __name__ == "__main__":
    main()
