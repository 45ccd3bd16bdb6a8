"""The official FM baseline in NumPy: a factorization machine over five fields.

Configuration as the organizers ran it: k=16, Adam lr 0.001, batch 8192, up to 40 epochs,
early stopping (patience 4) on the validation primary, pointwise log-loss, L2 1e-6, seed
RLAB_SEED (by default 0, as the organizers ran it: the initialisation and the batch order);
fields user_id, video_id, author_id, tab, dur_bucket (10 train-quantile buckets of
duration_ms, the video's length); unseen values map to a per-field unknown slot. Writes
val_predictions.npy and test_predictions.npy in row order.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from ranking_metric import primary

DATA = Path(os.environ.get("RLAB_DATA_DIR", "."))
OUT = Path(os.environ.get("RLAB_OUTPUT_DIR", "."))
DEBUG = "--debug" in sys.argv
SEED = int(os.environ.get("RLAB_SEED", "0"))

FIELDS = ["user_id", "video_id", "author_id", "tab", "dur_bucket"]
# field additions (one line each)
# the organizers' values; a trailing "tune:" comment declares a value that tuning may set
K = 16  # tune: int 4..64 log
LEARNING_RATE = 0.001  # tune: float 0.0001..0.02 log
BATCH = 8192  # tune: choice 2048|4096|8192|16384
EPOCHS = 40
PATIENCE = 4
L2 = 1e-6  # tune: float 1e-8..0.001 log
DUR_BUCKETS = 10  # tune: int 4..40 log


def load() -> dict[str, pd.DataFrame]:
    limit = 20_000 if DEBUG else None
    frames = {s: pd.read_csv(DATA / f"{s}.csv", nrows=limit) for s in ("train", "val", "test")}
    videos = pd.read_csv(DATA / "video_features_basic.csv").set_index("video_id")
    edges = np.unique(
        np.quantile(frames["train"]["duration_ms"], np.linspace(0, 1, DUR_BUCKETS + 1)[1:-1])
    )
    for frame in frames.values():
        frame["author_id"] = frame["video_id"].map(videos["author_id"]).fillna(-1).astype(np.int64)
        duration = frame["duration_ms"]
        frame["dur_bucket"] = np.where(
            duration.isna(), -1, np.searchsorted(edges, duration.fillna(0))
        )
        frame["hour"] = frame["hourmin"] // 100
        pass  # derived columns
    return frames


def encode(frames: dict[str, pd.DataFrame]) -> tuple[dict[str, np.ndarray], int]:
    """Global feature indices per row and field; slot 0 of each field is 'unknown'."""
    offset, columns = 0, {s: [] for s in frames}
    for field in FIELDS:
        levels = pd.Index(pd.unique(frames["train"][field]))
        for split, frame in frames.items():
            index = levels.get_indexer(frame[field])
            columns[split].append(offset + index + 1)  # -1 (unseen) -> the unknown slot
        offset += len(levels) + 1
    return {s: np.stack(c, axis=1) for s, c in columns.items()}, offset


class FM:
    """Factorization machine with Adam, trained on log-loss."""

    def __init__(self, n_features: int, rng: np.random.Generator) -> None:
        self.params = {
            "w0": np.zeros(1),
            "w": np.zeros(n_features),
            "v": rng.normal(0.0, 0.01, (n_features, K)),
        }
        self.m = {k: np.zeros_like(p) for k, p in self.params.items()}
        self.s = {k: np.zeros_like(p) for k, p in self.params.items()}
        self.t = 0

    def predict(self, x: np.ndarray) -> np.ndarray:
        v = self.params["v"][x]
        pair = 0.5 * ((v.sum(1) ** 2) - (v**2).sum(1)).sum(1)
        return self.params["w0"][0] + self.params["w"][x].sum(1) + pair

    def step(self, x: np.ndarray, y: np.ndarray) -> None:
        v = self.params["v"][x]
        logit = self.params["w0"][0] + self.params["w"][x].sum(1)
        logit += 0.5 * ((v.sum(1) ** 2) - (v**2).sum(1)).sum(1)
        g = (1.0 / (1.0 + np.exp(-logit)) - y) / len(y)
        grads = {k: np.zeros_like(p) for k, p in self.params.items()}
        grads["w0"][0] = g.sum()
        np.add.at(grads["w"], x.ravel(), np.repeat(g, x.shape[1]))
        gv = g[:, None, None] * (v.sum(1, keepdims=True) - v)
        np.add.at(grads["v"], x.ravel(), gv.reshape(-1, K))
        touched = np.unique(x)
        grads["w"][touched] += L2 * self.params["w"][touched]
        grads["v"][touched] += L2 * self.params["v"][touched]
        self.t += 1
        for key, grad in grads.items():
            self.m[key] = 0.9 * self.m[key] + 0.1 * grad
            self.s[key] = 0.999 * self.s[key] + 0.001 * grad**2
            m_hat = self.m[key] / (1 - 0.9**self.t)
            s_hat = self.s[key] / (1 - 0.999**self.t)
            self.params[key] -= LEARNING_RATE * m_hat / (np.sqrt(s_hat) + 1e-8)


def main() -> None:
    frames = load()
    x, n_features = encode(frames)
    rng = np.random.default_rng(SEED)
    model = FM(n_features, rng)
    y = frames["train"]["long_view"].to_numpy(float)
    val = frames["val"]
    best, best_params, waited = -1.0, None, 0
    for epoch in range(2 if DEBUG else EPOCHS):
        order = rng.permutation(len(y))
        for start in range(0, len(y), BATCH):
            batch = order[start : start + BATCH]
            model.step(x["train"][batch], y[batch])
        score = primary(
            val["user_id"].to_numpy(), val["long_view"].to_numpy(), model.predict(x["val"])
        )
        print(f"epoch {epoch + 1}: val primary {score:.4f}")
        if score > best:
            best, waited = score, 0
            best_params = {k: p.copy() for k, p in model.params.items()}
        else:
            waited += 1
            if waited >= PATIENCE:
                break
    model.params = best_params or model.params
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", model.predict(x["val"]))
    np.save(OUT / "test_predictions.npy", model.predict(x["test"]))


if __name__ == "__main__":
    main()
