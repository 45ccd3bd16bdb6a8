"""Per-candidate overhead of the ray sandbox against the local sandbox: a candidate doing nothing.

Starts a local Ray cluster the way ``rlab run --sandbox ray`` does (``address=local``; 2 CPUs
and a 100 MiB object store by default), then calls ``run()`` ``--runs`` times (default 20,
after one unmeasured warm-up) on a ``main.py`` that is one ``pass`` statement, first with the
``local`` sandbox, then with the ``ray`` sandbox, both with the same isolation (``auto``: the
bubblewrap jail where it works). The judged figure is the whole ``run()`` call, start to
exit; for ray that adds packing the source, the Ray task round trip, unpacking it in a
temporary folder on the worker, the worker's local sandbox, and the outputs and log coming
back. Cluster start is reported apart and not counted. Needs rlab-ray installed.

    uv run python bench/ray_overhead.py [--runs 20] [--num-cpus 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import bench_workspace, median, percentile

from rlab_core.interfaces import Sandbox
from rlab_core.task_records import SandboxRequest


def _request(root: Path, index: int) -> SandboxRequest:
    folders = {name: root / f"{name}-{index}" for name in ("work", "out")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    (folders["work"] / "main.py").write_text("pass\n")
    data, cache = root / "data", root / "cache-dir"
    data.mkdir(exist_ok=True)
    cache.mkdir(exist_ok=True)
    return SandboxRequest(
        workdir=folders["work"],
        command=["python", "main.py"],
        env={
            "RLAB_DATA_DIR": str(data),
            "RLAB_OUTPUT_DIR": str(folders["out"]),
            "RLAB_CACHE_DIR": str(cache),
            "RLAB_THREADS": "1",
            "HOME": str(folders["work"]),
        },
        data_dir=data,
        output_dir=folders["out"],
        cache_dir=cache,
        log_path=root / f"log-{index}.txt",
        timeout_s=60,
        memory_mb=512,
        max_output_mb=1,
    )


def _measure(sandbox: Sandbox, root: Path, runs: int) -> tuple[list[float], list[float], float]:
    """Whole run() times, candidate wall times, and the warm-up run's time."""
    totals, walls, warm = [], [], 0.0
    for index in range(runs + 1):
        request = _request(root, index)
        start = time.perf_counter()
        execution = sandbox.run(request)
        total = time.perf_counter() - start
        if not execution.ok:
            raise RuntimeError(f"the noop candidate failed: {execution.log_tail}")
        if index == 0:
            warm = total
            continue
        totals.append(total)
        walls.append(execution.wall_s)
    return totals, walls, warm


def _row(name: str, values: list[float]) -> str:
    return f"    {name:<50} median {median(values):.3f} s   p90 {percentile(values, 90):.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="measured candidate runs per sandbox")
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    args = parser.parse_args()

    from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig

    try:
        from rlab_ray.options import RaySandboxConfig
        from rlab_ray.sandbox import RaySandbox
    except ImportError as exc:
        print(f"ray overhead: SKIP (rlab-ray is not installed: {exc})")
        return

    with bench_workspace("ray") as root:
        local = LocalSandbox(LocalSandboxConfig())
        local_totals, local_walls, local_warm = _measure(local, root / "local", args.runs)

        start = time.perf_counter()
        ray_box = RaySandbox(
            RaySandboxConfig(address="local", num_cpus=args.num_cpus, object_store_mb=100)
        )
        cluster_start = time.perf_counter() - start
        try:
            ray_totals, ray_walls, ray_warm = _measure(ray_box, root / "ray", args.runs)
        finally:
            start = time.perf_counter()
            ray_box.close()
            shutdown = time.perf_counter() - start

    print(
        f"ray sandbox overhead per candidate: `pass` candidate, {args.runs} runs per sandbox "
        f"after one warm-up, isolation {local.isolation_level()} (local) / "
        f"{ray_box.isolation_level()} (ray)"
    )
    print(f"    ray cluster start + worker probe (not counted)  {cluster_start:.3f} s")
    print(f"    ray cluster shutdown (not counted)              {shutdown:.3f} s")
    print(f"    warm-up run: local {local_warm:.3f} s, ray {ray_warm:.3f} s")
    print(_row("local run() start to exit", local_totals))
    print(_row("  candidate process (wall_s)", local_walls))
    print(_row("ray run() start to exit", ray_totals))
    print(_row("  candidate process on the worker (wall_s)", ray_walls))
    ray_extra = [t - w for t, w in zip(ray_totals, ray_walls, strict=True)]
    print(_row("  everything else (pack, Ray round trip, unpack)", ray_extra))
    print()
    added = median(ray_totals) - median(local_totals)
    added_p90 = percentile(ray_totals, 90) - percentile(local_totals, 90)
    print(
        f"ray overhead: median {median(ray_totals):.3f} s vs local {median(local_totals):.3f} s "
        f"(+{added:.3f} s per candidate; p90 {percentile(ray_totals, 90):.3f} s vs "
        f"{percentile(local_totals, 90):.3f} s, +{added_p90:.3f} s)"
    )


if __name__ == "__main__":
    main()
