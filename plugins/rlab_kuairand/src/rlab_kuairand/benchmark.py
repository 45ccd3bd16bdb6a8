"""The ``kuairand`` benchmark: tasks ``pure``, ``1k`` (real data) and ``sample`` (synthetic)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from rlab_core.api import (
    Benchmark,
    DataUnavailableError,
    PreparedTask,
    TaskListing,
    UnknownNameError,
    remove_tree,
)
from rlab_kuairand import build, sample, source
from rlab_kuairand.options import KuaiRandOptions
from rlab_kuairand.task import SYNTHETIC_NOTE, KuaiRandTask

TASKS = {
    "pure": "KuaiRand-Pure: 1.44M impressions, 27,285 users; the published FM / LightGBM numbers.",
    "1k": "KuaiRand-1K: 11.7M impressions, 1,000 heavy users.",
    "sample": "Synthetic KuaiRand-shaped sample generated on first use (offline, under a minute).",
}


class KuaiRandBenchmark(Benchmark[KuaiRandOptions]):
    """KuaiRand ranking of long_view with the organizers' split and metrics."""

    def list_tasks(self) -> list[TaskListing]:
        options = self.config
        listings = []
        for task, summary in TASKS.items():
            if task == "sample":
                listings.append(
                    TaskListing(
                        name="kuairand:sample", summary=summary, available=True, note=SYNTHETIC_NOTE
                    )
                )
                continue
            given = options.data_dir or os.environ.get(source.ENV_VAR)
            found = source.find_files(Path(given), task) if given else None
            note = f"data in {found}" if found else source.offline_message(task)
            listings.append(
                TaskListing(
                    name=f"kuairand:{task}", summary=summary, available=found is not None, note=note
                )
            )
        return listings

    def prepare(self, task: str, cache_root: Path, *, rebuild_cache: bool = False) -> PreparedTask:
        options = self.config
        if task not in TASKS:
            names = ", ".join(f"kuairand:{t}" for t in TASKS)
            raise UnknownNameError(f"Unknown kuairand task '{task}'; available: {names}.")
        if task == "sample":
            key = f"sample-{options.sample_users}-{options.sample_videos}-{options.sample_seed}"
            raw = cache_root / f"{key}-raw"
            target = cache_root / key
            if (
                rebuild_cache
                or not build.is_current(target)
                or source.find_files(raw, "pure") is None
            ):
                # the generated raw files are staged too: a killed run never leaves half of them
                staging = raw.with_name(raw.name + ".partial")
                remove_tree(staging)
                sample.generate(
                    staging, options.sample_users, options.sample_videos, options.sample_seed
                )
                remove_tree(raw)
                staging.replace(raw)
                build.build(raw, target, "pure", synthetic=True)
            return KuaiRandTask("kuairand:sample", target, raw)
        raw = source.locate(task, options.data_dir, cache_root, options.download)
        digest = hashlib.sha256(str(raw.resolve()).encode()).hexdigest()[:10]
        target = cache_root / f"{task}-{digest}"
        if rebuild_cache or not build.is_current(target):
            try:
                build.build(raw, target, task, synthetic=False)
            except (ValueError, KeyError, OSError) as exc:
                raise DataUnavailableError(
                    source.offline_message(task, f"{raw} is unreadable: {exc}")
                ) from None
        return KuaiRandTask(f"kuairand:{task}", target, raw)
