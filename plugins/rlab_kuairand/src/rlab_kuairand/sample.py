"""Generate the synthetic ``kuairand:sample``: the real file names, columns, dtypes and dates.

Not real data. The structure is modelled on KuaiRand-Pure so that the same code runs on both
and the same modelling ideas pay off: skewed user activity (log-normal impressions per day),
power-law video popularity, author effects, duration-dependent ``long_view`` (short videos
are watched to the end more often; the label is derived from ``play_time_ms`` exactly as in
the real logs), scenario (``tab``) effects, user-video affinity through latent tastes, video
quality that drifts over the month and fresh uploads whose appeal fades within days (so
recent history carries signal a static model lacks),
about 3% repeated (user, video) pairs, and each file in (user, time) order.
"""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from rlab_kuairand import schema

START = dt.date(2022, 4, 8)
DAYS = 31  # 2022-04-08 .. 2022-05-08
RANDOM_START_DAY = 14  # 2022-04-22
IMPRESSIONS_PER_USER_DAY = 2.6
LATENT = 8
TAB_PROBS = np.array([40, 5, 12, 3, 20, 2, 1, 6, 1, 1, 4, 1, 2, 1, 1], float)
TAB_EFFECT = np.linspace(-0.4, 0.4, 15)[np.random.default_rng(15).permutation(15)]


def _date_int(day: np.ndarray) -> np.ndarray:
    dates = [START + dt.timedelta(days=int(d)) for d in range(DAYS)]
    table = np.array([d.year * 10000 + d.month * 100 + d.day for d in dates])
    return table[day]


def _epoch_ms(day: np.ndarray, minute_of_day: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    base = int(dt.datetime(2022, 4, 8, tzinfo=dt.timezone(dt.timedelta(hours=8))).timestamp())
    seconds = base + day * 86400 + minute_of_day * 60 + rng.integers(0, 60, len(day))
    return seconds * 1000 + rng.integers(0, 1000, len(day))


class _World:
    """The hidden generative state: users, authors, videos and their effects."""

    def __init__(self, n_users: int, n_videos: int, rng: np.random.Generator) -> None:
        self.n_users, self.n_videos = n_users, n_videos
        self.activity = rng.lognormal(0.0, 0.75, n_users)
        self.user_bias = rng.normal(0.0, 0.5, n_users)
        self.user_taste = rng.normal(0.0, 0.45, (n_users, LATENT))
        n_authors = max(10, n_videos // 4)
        author_weight = rng.zipf(1.6, n_authors).astype(float)
        self.author = rng.choice(n_authors, n_videos, p=author_weight / author_weight.sum())
        self.author_effect = rng.normal(0.0, 0.45, n_authors)
        style = rng.normal(0.0, 0.45, (n_authors, LATENT))
        self.video_taste = style[self.author] + rng.normal(0.0, 0.25, (n_videos, LATENT))
        self.quality = rng.normal(0.0, 0.35, n_videos)
        self.trend = rng.normal(0.0, 0.7, n_videos)  # quality drift over the month
        self.popularity = rng.pareto(1.8, n_videos) + 0.02
        self.popularity *= np.exp(0.6 * self.quality)
        self.duration = np.clip(rng.lognormal(np.log(22_000), 0.8, n_videos), 3_000, 600_000)
        self.duration = self.duration.astype(np.int64)
        # a third of the videos is uploaded during the month and shown only afterwards
        self.upload_day = np.where(
            rng.random(n_videos) < 0.33,
            rng.integers(0, DAYS, n_videos),
            -rng.integers(1, 400, n_videos),
        )
        self.favourite = rng.integers(0, n_authors, (n_users, 3))

    def logit(self, user, video, day, tab, repeated) -> np.ndarray:
        """log-odds of ``long_view`` for each impression."""
        affinity = np.einsum("ij,ij->i", self.user_taste[user], self.video_taste[video])
        follows = (self.favourite[user] == self.author[video][:, None]).any(axis=1)
        seconds = self.duration[video] / 1000.0
        duration_effect = 0.9 - 0.55 * np.log(seconds / 10.0).clip(-1.0, 3.0)
        drift = self.trend[video] * (day - DAYS / 2) / (DAYS / 2)
        # fresh uploads get a boost that fades within days
        freshness = 0.8 * np.exp(-np.maximum(day - self.upload_day[video], 0) / 3.0)
        return (
            -1.3
            + self.user_bias[user]
            + self.quality[video]
            + drift
            + freshness
            + self.author_effect[self.author[video]]
            + 1.6 * affinity
            + 0.8 * follows
            + duration_effect
            + TAB_EFFECT[tab]
            - 0.5 * repeated
        )


def _impressions(world: _World, rng: np.random.Generator, random_log: bool) -> pd.DataFrame:
    days = np.arange(RANDOM_START_DAY if random_log else 0, DAYS)
    rate = world.activity * (0.12 if random_log else IMPRESSIONS_PER_USER_DAY)
    counts = rng.poisson(np.outer(rate, np.ones(len(days))))
    user = np.repeat(np.repeat(np.arange(world.n_users), len(days)), counts.ravel())
    day = np.repeat(np.tile(days, world.n_users), counts.ravel())
    n = len(user)
    if random_log:
        video = rng.integers(0, world.n_videos, n)
    else:
        video = rng.choice(world.n_videos, n, p=world.popularity / world.popularity.sum())
    # a video not yet uploaded is replaced by an old one
    weights = world.popularity / world.popularity.sum()
    for _ in range(6):
        # a video not yet uploaded, or already shown to this user, is drawn again: the
        # recommender rarely repeats itself (intended repeats are added below)
        redo = (world.upload_day[video] > day) | pd.DataFrame(
            {"u": user, "v": video}
        ).duplicated().to_numpy()
        if random_log or not redo.any():
            break
        video[redo] = rng.choice(world.n_videos, redo.sum(), p=weights)
    late = world.upload_day[video] > day
    old = np.flatnonzero(world.upload_day < 0)
    video[late] = rng.choice(old, late.sum())
    minute = np.clip(rng.normal(20 * 60, 4 * 60, n), 0, 24 * 60 - 1).astype(np.int64)
    time_ms = _epoch_ms(day, minute, rng)
    order = np.lexsort((time_ms, user))
    user, day, video, minute, time_ms = (a[order] for a in (user, day, video, minute, time_ms))
    repeated = np.zeros(n, dtype=bool)
    if not random_log:
        # about 3% of impressions show again a video the user saw a few impressions earlier
        back = rng.integers(1, 30, n)
        source = np.arange(n) - back
        pick = (rng.random(n) < 0.03) & (source >= 0)
        pick &= user[np.clip(source, 0, None)] == user
        video[pick] = video[source[pick]]
        repeated = pick
    tab = rng.choice(15, n, p=TAB_PROBS / TAB_PROBS.sum())
    p = 1.0 / (1.0 + np.exp(-world.logit(user, video, day, tab, repeated)))
    watched = rng.random(n) < p
    duration = world.duration[video]
    threshold = np.where(duration <= 18_000, duration, 18_000)
    play = np.where(
        watched,
        threshold + rng.exponential(0.3, n) * duration,
        rng.random(n) * (threshold - 1),
    ).astype(np.int64)
    long_view = np.where(duration <= 18_000, play >= duration, play >= 18_000).astype(np.int64)
    click = rng.random(n) < 0.25 + 0.5 * long_view
    like = rng.random(n) < 0.005 + 0.04 * long_view
    profile = rng.random(n) < 0.01 + 0.03 * long_view
    comment = rng.random(n) < 0.002 + 0.01 * long_view
    return pd.DataFrame(
        {
            "user_id": user,
            "video_id": video,
            "date": _date_int(day),
            "hourmin": (minute // 60) * 100 + minute % 60,
            "time_ms": time_ms,
            "is_click": click.astype(np.int64),
            "is_like": like.astype(np.int64),
            "is_follow": (rng.random(n) < 0.002 + 0.01 * long_view).astype(np.int64),
            "is_comment": comment.astype(np.int64),
            "is_forward": (rng.random(n) < 0.001 + 0.004 * long_view).astype(np.int64),
            "is_hate": (rng.random(n) < 0.001).astype(np.int64),
            "long_view": long_view,
            "play_time_ms": play,
            "duration_ms": duration,
            "profile_stay_time": np.where(profile, rng.integers(1, 120, n), 0),
            "comment_stay_time": np.where(comment, rng.integers(1, 90, n), 0),
            "is_profile_enter": profile.astype(np.int64),
            "is_rand": np.full(n, int(random_log)),
            "tab": tab,
        }
    )[schema.LOG_COLUMNS]


def _users(world: _World, rng: np.random.Generator) -> pd.DataFrame:
    n = world.n_users
    degree = np.select(
        [world.activity > 2.0, world.activity > 0.8, world.activity > 0.3],
        ["high_active", "full_active", "middle_active"],
        "UNKNOWN",
    )
    follow = rng.negative_binomial(1, 0.02, n)
    fans = rng.negative_binomial(1, 0.05, n)
    friends = rng.negative_binomial(1, 0.2, n)
    register = rng.integers(8, 2500, n)

    def bucket(values: np.ndarray, edges: list[int]) -> np.ndarray:
        labels = [f"[{a},{b})" for a, b in itertools.pairwise(edges)]
        return np.array([*labels, f"{edges[-1]}+"])[np.searchsorted(edges, values, "right") - 1]

    frame = {
        "user_id": np.arange(n),
        "user_active_degree": degree,
        "is_lowactive_period": (rng.random(n) < 0.05).astype(int),
        "is_live_streamer": (rng.random(n) < 0.03).astype(int),
        "is_video_author": (rng.random(n) < 0.3).astype(int),
        "follow_user_num": follow,
        "follow_user_num_range": bucket(follow, [0, 1, 10, 50, 100, 150, 250, 500]),
        "fans_user_num": fans,
        "fans_user_num_range": bucket(fans, [0, 1, 10, 100, 1000]),
        "friend_user_num": friends,
        "friend_user_num_range": bucket(friends, [0, 1, 5, 30, 60, 120, 250]),
        "register_days": register,
        "register_days_range": bucket(register, [0, 15, 31, 61, 91, 181, 366, 730]),
    }
    for i in range(18):
        frame[f"onehot_feat{i}"] = rng.integers(0, [2, 10, 50, 3, 8][i % 5], n)
    return pd.DataFrame(frame)[schema.USER_COLUMNS]


def _videos(world: _World, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    n = world.n_videos
    upload = [START + dt.timedelta(days=int(d)) for d in world.upload_day]
    duration = world.duration.astype(float)
    duration[rng.random(n) < 0.05] = np.nan  # missing in the real file too
    basic = pd.DataFrame(
        {
            "video_id": np.arange(n),
            "author_id": world.author,
            "video_type": np.where(rng.random(n) < 0.04, "AD", "NORMAL"),
            "upload_dt": [d.isoformat() for d in upload],
            "upload_type": rng.choice(["ShortImport", "LongImport", "Web", "PictureSet"], n),
            "visible_status": "public",
            "video_duration": duration,
            "server_width": rng.choice([720, 1080, 576], n),
            "server_height": rng.choice([1280, 1920, 1024], n),
            "music_id": rng.integers(0, n // 3 + 1, n),
            "music_type": rng.choice([0, 4, 9, 11], n),
            "tag": [
                ",".join(map(str, rng.choice(60, rng.integers(1, 4), replace=False)))
                for _ in range(n)
            ],
        }
    )[schema.VIDEO_BASIC_COLUMNS]
    # statistics of the months before the logs: popularity and quality as seen then
    shows = rng.poisson(world.popularity * 400) + 1
    rate = 1.0 / (1.0 + np.exp(-(world.quality - 0.5)))
    stats = {"video_id": np.arange(n)}
    for name in schema.VIDEO_STAT_COLUMNS[1:]:
        stats[name] = np.zeros(n)
    for column in schema.VIDEO_STAT_COLUMNS[1:-3]:
        share = {"show": 1.0, "play": 0.8, "complete_play": 0.3, "valid_play": 0.6}.get(
            column.rsplit("_", 1)[0].removesuffix("_user"), 0.02
        )
        users = column.endswith("user_num")
        stats[column] = rng.binomial(
            shows, np.minimum(1.0, share * (0.9 if users else 1.0) * (0.5 + rate))
        )
    stats["play_duration"] = shows * rng.gamma(2.0, 4000.0, n)
    stats["play_progress"] = np.clip(rate + rng.normal(0, 0.05, n), 0, 1)
    stats["comment_stay_duration"] = rng.gamma(1.0, 20.0, n)
    return basic, pd.DataFrame(stats)[schema.VIDEO_STAT_COLUMNS]


def generate(
    folder: Path, n_users: int, n_videos: int, seed: int, variant: str = "pure"
) -> dict[str, int]:
    """Write the synthetic raw files into ``folder`` under the real names of ``variant``.

    ``kuairand:sample`` uses the Pure names; tests also write small folders with either
    variant's names to exercise the real-data path end to end.
    """
    rng = np.random.default_rng(seed)
    world = _World(n_users, n_videos, rng)
    logs = _impressions(world, rng, random_log=False)
    folder.mkdir(parents=True, exist_ok=True)
    first, second = schema.standard_logs(variant)
    cut = logs["date"] <= schema.SPLITS["train"][1]
    logs[cut].to_csv(folder / first, index=False)
    logs[~cut].to_csv(folder / second, index=False)
    _impressions(world, rng, random_log=True).to_csv(
        folder / schema.random_log(variant), index=False
    )
    names = schema.feature_files(variant)
    _users(world, rng).to_csv(folder / names["user_features.csv"], index=False)
    basic, stats = _videos(world, rng)
    basic.to_csv(folder / names["video_features_basic.csv"], index=False)
    stats.to_csv(folder / names["video_features_statistic.csv"], index=False)
    return {"rows": len(logs), "users": n_users, "videos": n_videos}
