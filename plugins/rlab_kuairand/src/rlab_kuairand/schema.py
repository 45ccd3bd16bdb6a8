"""The KuaiRand file names, columns and the organizers' split (see the benchmark README)."""

from __future__ import annotations

ZENODO_RECORD = "10439422"
VARIANTS = {"pure": "pure", "1k": "1k"}  # task name -> file-name suffix
ARCHIVES = {"pure": "KuaiRand-Pure.tar.gz", "1k": "KuaiRand-1K.tar.gz"}

LOG_COLUMNS = [
    "user_id",
    "video_id",
    "date",
    "hourmin",
    "time_ms",
    "is_click",
    "is_like",
    "is_follow",
    "is_comment",
    "is_forward",
    "is_hate",
    "long_view",
    "play_time_ms",
    "duration_ms",
    "profile_stay_time",
    "comment_stay_time",
    "is_profile_enter",
    "is_rand",
    "tab",
]
#: The impression's outcomes: the reference's "every column from is_click to is_profile_enter"
#: (the label, or leaks of it: play_time_ms decides long_view) except duration_ms. duration_ms
#: sits among them in file order, but it is the length of the video (KuaiRand documents it so;
#: video_features_basic carries it as video_duration), fixed before the impression and not
#: an outcome of it; the organizers' FM reads it on the rows it predicts (its dur_bucket
#: field), so test rows keep it. Pinned by test_data.py.
OUTCOME_COLUMNS = [
    "is_click",
    "is_like",
    "is_follow",
    "is_comment",
    "is_forward",
    "is_hate",
    "long_view",
    "play_time_ms",
    "profile_stay_time",
    "comment_stay_time",
    "is_profile_enter",
]
#: what is known at impression time: the only log columns test rows keep
IMPRESSION_COLUMNS = [c for c in LOG_COLUMNS if c not in OUTCOME_COLUMNS]
LABEL = "long_view"

USER_COLUMNS = [
    "user_id",
    "user_active_degree",
    "is_lowactive_period",
    "is_live_streamer",
    "is_video_author",
    "follow_user_num",
    "follow_user_num_range",
    "fans_user_num",
    "fans_user_num_range",
    "friend_user_num",
    "friend_user_num_range",
    "register_days",
    "register_days_range",
    *[f"onehot_feat{i}" for i in range(18)],
]
VIDEO_BASIC_COLUMNS = [
    "video_id",
    "author_id",
    "video_type",
    "upload_dt",
    "upload_type",
    "visible_status",
    "video_duration",
    "server_width",
    "server_height",
    "music_id",
    "music_type",
    "tag",
]
_STAT_COUNTS = [
    "show",
    "play",
    "complete_play",
    "valid_play",
    "long_time_play",
    "short_time_play",
    "like",
    "comment",
    "follow",
    "share",
    "download",
    "report",
    "collect",
]
VIDEO_STAT_COLUMNS = [
    "video_id",
    *[f"{name}_{kind}" for name in _STAT_COUNTS for kind in ("cnt", "user_num")],
    "play_duration",
    "play_progress",
    "comment_stay_duration",
]

SPLITS = {
    "train": (20220408, 20220421),
    "val": (20220422, 20220428),
    "test": (20220429, 20220508),
}


def standard_logs(variant: str) -> list[str]:
    """The two scored logs, in the order they are read."""
    suffix = VARIANTS[variant]
    return [
        f"log_standard_4_08_to_4_21_{suffix}.csv",
        f"log_standard_4_22_to_5_08_{suffix}.csv",
    ]


def random_log(variant: str) -> str:
    """The randomly exposed log (not scored)."""
    return f"log_random_4_22_to_5_08_{VARIANTS[variant]}.csv"


def feature_files(variant: str) -> dict[str, str]:
    """Public name -> real file name of the three feature files."""
    suffix = VARIANTS[variant]
    return {
        "user_features.csv": f"user_features_{suffix}.csv",
        "video_features_basic.csv": f"video_features_basic_{suffix}.csv",
        "video_features_statistic.csv": f"video_features_statistic_{suffix}.csv",
    }


def expected_files(variant: str) -> list[str]:
    """Every real file name the task needs (the random log is optional)."""
    return [*standard_logs(variant), *feature_files(variant).values()]
