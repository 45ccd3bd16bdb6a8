"""Time the organizers' metrics on 1.4M rows (KuaiRand-Pure scale) and print the figure.

uv run python plugins/rlab_kuairand/bench/score_speed.py
"""

from __future__ import annotations

import time

import numpy as np
from rlab_kuairand.metrics import evaluate

ROWS, USERS = 1_436_609, 27_285


def main() -> None:
    rng = np.random.default_rng(0)
    users = np.sort(rng.integers(0, USERS, ROWS))
    rng.shuffle(users[: ROWS // 2])  # half interleaved, half grouped, like real logs
    labels = (rng.random(ROWS) < 0.33).astype(np.int8)
    scores = rng.random(ROWS).round(3)  # ties
    evaluate(users[:1000], labels[:1000], scores[:1000])  # warm up
    times = []
    for _ in range(3):
        start = time.perf_counter()
        result = evaluate(users, labels, scores)
        times.append(time.perf_counter() - start)
    print(
        f"scored {ROWS:,} rows / {int(result['users']):,} users: best {min(times):.3f} s, "
        f"worst {max(times):.3f} s (GAUC {result['GAUC']:.4f}, nDCG@5 {result['nDCG@5']:.4f})"
    )


if __name__ == "__main__":
    main()
