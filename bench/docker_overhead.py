"""Per-candidate container overhead of the docker sandbox: a candidate that does nothing.

Runs ``DockerSandbox.run`` on a ``main.py`` that is one ``pass`` statement, ``--runs`` times
(default 15, after one unmeasured warm-up), with the default options: the offline
host-interpreter image, the same mounts, limits and hidden-path covers a real candidate gets.
The judged figure is the whole ``run()`` call, start to exit: mount planning, create, start,
the interpreter starting and exiting, the log drain, the exit status, and the container's
removal. Skips (exit 0, with a message) when no Docker daemon answers at DOCKER_HOST.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import bare_python, bench_workspace, median, percentile, process_start_s, verdict

from rlab_core.errors import SandboxUnavailableError
from rlab_core.task_records import SandboxRequest

TARGET_S = 1.5


def _request(root: Path, index: int) -> SandboxRequest:
    folders = {name: root / f"{name}-{index}" for name in ("work", "data", "out")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    (folders["work"] / "main.py").write_text("pass\n")
    cache = root / "cache-dir"
    cache.mkdir(exist_ok=True)
    return SandboxRequest(
        workdir=folders["work"],
        command=["python", "main.py"],
        env={"RLAB_DATA_DIR": str(folders["data"]), "RLAB_OUTPUT_DIR": str(folders["out"])},
        data_dir=folders["data"],
        output_dir=folders["out"],
        cache_dir=cache,
        log_path=root / f"log-{index}.txt",
        timeout_s=60,
        memory_mb=512,
        max_output_mb=1,
    )


def _row(name: str, values: list[float]) -> str:
    return f"    {name:<44} median {median(values):.3f} s   p90 {percentile(values, 90):.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="measured candidate runs")
    args = parser.parse_args()

    from rlab_core.builtin.docker_sandbox import DockerSandbox, DockerSandboxConfig

    try:
        start = time.perf_counter()
        sandbox = DockerSandbox(DockerSandboxConfig())
        setup = time.perf_counter() - start
    except SandboxUnavailableError as exc:
        print(f"docker overhead: SKIP ({exc})")
        return
    print(
        f"docker sandbox overhead per candidate: `pass` candidate, image {sandbox.image} "
        f"({sandbox.image_kind}), daemon {sandbox.daemon} ({sandbox.server_version}), "
        f"{args.runs} runs after one warm-up"
    )
    print(f"    sandbox construction (connect, leftover sweep, image check)  {setup:.3f} s")
    print(
        f"    `python -c pass` on the host (median of 15)                  {process_start_s(bare_python()):.3f} s"
    )
    totals, before, inside, after = [], [], [], []
    with bench_workspace("docker") as root:
        for index in range(args.runs + 1):
            request = _request(root, index)
            start = time.perf_counter()
            execution = sandbox.run(request)
            total = time.perf_counter() - start
            if not execution.ok:
                raise RuntimeError(f"the noop candidate failed: {execution.log_tail}")
            if index == 0:
                print(
                    f"    warm-up run                                                  {total:.3f} s"
                )
                continue
            totals.append(total)
            before.append(execution.start_overhead_s)
            inside.append(execution.wall_s)
            after.append(total - execution.start_overhead_s - execution.wall_s)
    sandbox.close()
    print(_row("run() start to exit, container removed", totals))
    print(_row("  create + start (start_overhead_s)", before))
    print(_row("  started -> exited, log drained (wall_s)", inside))
    print(_row("  exit status + removal", after))
    print()
    print(verdict("docker overhead", median(totals), TARGET_S))


if __name__ == "__main__":
    main()
