"""Journal events as MLflow calls: one parent run per rlab run, one nested run per node.

Every method may raise (the server is down, a request timed out); the worker retries the
whole event, so each step is safe to repeat: a run is created once (its id is kept in the
link before anything is logged to it) and logging the same value again changes nothing.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from rlab_mlflow.link import Link

#: MLflow's own tag that nests a run under another (the UI shows the tree from it).
PARENT_TAG = "mlflow.parentRunId"
#: Longest parameter value logged; longer hypotheses are cut (the full text is the note).
PARAM_CHARS = 500
_METRIC_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")


def _ms(seconds: Any) -> int | None:
    return int(float(seconds) * 1000) if isinstance(seconds, int | float) and seconds else None


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def metric_name(name: str) -> str:
    """A benchmark's metric name in the characters MLflow accepts."""
    return _METRIC_NAME.sub("_", str(name))


class Mirror:
    """Applies one event at a time to MLflow through ``client`` (an ``MlflowClient``)."""

    def __init__(self, client: Any, run_dir: Path, experiment: str, tracking_uri: str) -> None:
        self.client = client
        self.run_dir = Path(run_dir)
        self.experiment = experiment
        self.link = Link.read(self.run_dir)
        if self.link.tracking_uri and self.link.tracking_uri != tracking_uri:
            # another store: the ids in the file mean nothing there
            self.link = Link(dropped_events=self.link.dropped_events)
        self.link.tracking_uri = tracking_uri
        self._info: dict[str, Any] | None = None

    # ------------------------------------------------------------------ helpers

    @property
    def info(self) -> dict[str, Any]:
        """``run.json``: the run's facts and configuration, read once."""
        if self._info is None:
            self._info = json.loads((self.run_dir / "run.json").read_text(encoding="utf-8"))
        return self._info

    def _save(self) -> None:
        self.link.write(self.run_dir)

    def _log(
        self,
        run_id: str,
        *,
        params: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None,
        tags: dict[str, Any] | None = None,
        t: Any = None,
        step: int = 0,
    ) -> None:
        from mlflow.entities import Metric, Param, RunTag

        stamp = _ms(t) or 0
        batch_metrics = [
            Metric(metric_name(k), float(v), stamp, step)
            for k, v in (metrics or {}).items()
            if _finite(v)
        ]
        batch_params = [
            Param(k, str(v)[:PARAM_CHARS]) for k, v in (params or {}).items() if v is not None
        ]
        batch_tags = [RunTag(k, str(v)) for k, v in (tags or {}).items() if v is not None]
        if batch_metrics or batch_params or batch_tags:
            self.client.log_batch(
                run_id, metrics=batch_metrics, params=batch_params, tags=batch_tags
            )

    def _run_params(self) -> dict[str, Any]:
        info, config = self.info, self.info.get("config") or {}
        return {
            "task": info.get("task"),
            "agent": info.get("agent") or config.get("agent"),
            "strategy": config.get("strategy"),
            "sandbox": config.get("sandbox"),
            "isolation": (info.get("isolation") or {}).get("level"),
            "seed": config.get("seed"),
        }

    # ------------------------------------------------------------------ the parent run

    def parent(self, t: Any = None) -> str:
        """The MLflow run of this rlab run, created on first need."""
        if self.link.run_id:
            return self.link.run_id
        if self.link.experiment_id is None:
            found = self.client.get_experiment_by_name(self.experiment)
            self.link.experiment_id = (
                found.experiment_id if found else self.client.create_experiment(self.experiment)
            )
        info, config = self.info, self.info.get("config") or {}
        run = self.client.create_run(
            self.link.experiment_id,
            start_time=_ms(t),
            run_name=self.run_dir.name,
            tags={"rlab.run_id": self.run_dir.name, "rlab.run_dir": str(self.run_dir)},
        )
        self.link.run_id = run.info.run_id
        self._save()
        params = {
            **self._run_params(),
            "primary_metric": info.get("primary_metric"),
            "higher_is_better": info.get("higher_is_better"),
            **{
                key: config.get(key)
                for key in ("iterations", "acceptance", "confidence", "workers", "finalists")
            },
        }
        self._log(self.link.run_id, params=params)
        return self.link.run_id

    # ------------------------------------------------------------------ node runs

    def node_run(self, node_id: str, t: Any = None, **tags: Any) -> str:
        """The nested run of node ``node_id``, created on first need."""
        if node_id in self.link.nodes:
            return self.link.nodes[node_id]
        parent = self.parent(t)
        run = self.client.create_run(
            self.link.experiment_id,
            start_time=_ms(t),
            run_name=node_id,
            tags={
                PARENT_TAG: parent,
                "rlab.node_id": node_id,
                **{k: str(v) for k, v in tags.items() if v is not None},
            },
        )
        self.link.nodes[node_id] = run.info.run_id
        self._save()
        return run.info.run_id

    def _node_finished(self, event: dict[str, Any]) -> None:
        node = event["node"]
        node_id = node["id"]
        run_id = self.node_run(node_id, node.get("created_at") or event.get("t"))
        score, execution = node.get("score") or {}, node.get("execution") or {}
        usage, gain, failure = node.get("usage") or {}, node.get("gain") or {}, node.get("failure")
        params = {
            **self._run_params(),
            "isolation": execution.get("isolation") or self._run_params()["isolation"],
            "parent": node.get("parent_id") or "none",
            "hypothesis": node.get("hypothesis"),
            "move": node.get("move_id"),
        }
        metrics: dict[str, Any] = {
            f"val_{name}": value for name, value in (score.get("metrics") or {}).items()
        }
        metrics.update(
            {
                "val_primary": score.get("primary"),
                "val_standard_error": score.get("standard_error"),
                "gain_delta": gain.get("delta"),
                "wall_s": execution.get("wall_s"),
                "cpu_s": execution.get("cpu_s"),
                "peak_memory_mb": execution.get("peak_memory_mb"),
                "input_tokens": usage.get("input_tokens"),
                "output_tokens": usage.get("output_tokens"),
                "tokens": (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0),
                "cost_usd": usage.get("cost_usd"),
            }
        )
        tags = {
            "status": node.get("status"),
            "verdict": gain.get("verdict"),
            "stage": node.get("stage"),
            "iteration": node.get("iteration"),
            "kind": node.get("kind"),
            "accepted": node.get("accepted"),
            "failure_stage": (failure or {}).get("stage"),
            "mlflow.note.content": node.get("hypothesis"),
        }
        self._log(run_id, params=params, metrics=metrics, tags=tags, t=node.get("finished_at"))
        if node.get("diff"):
            self.client.log_text(run_id, node["diff"], "diff.patch")
        log_tail = execution.get("log_tail") or (failure or {}).get("log_tail")
        if log_tail:
            self.client.log_text(run_id, log_tail, "log_tail.txt")
        result = self.run_dir / "nodes" / node_id / "result.json"
        if result.is_file():
            self.client.log_artifact(run_id, str(result))
        status = "FINISHED" if node.get("status") == "evaluated" else "FAILED"
        self.client.set_terminated(run_id, status, end_time=_ms(node.get("finished_at")))

    def _winner(self, node_id: str | None, **parent_tags: Any) -> None:
        if not node_id:
            return
        if self.link.winner and self.link.winner != node_id:
            earlier = self.link.nodes.get(self.link.winner)
            if earlier:
                self.client.delete_tag(earlier, "winner")
        self._log(self.node_run(node_id), tags={"winner": "true"})
        self._log(self.parent(), tags={"winner": node_id, **parent_tags})
        self.link.winner = node_id
        self._save()

    # ------------------------------------------------------------------ events

    def apply(self, event: dict[str, Any]) -> None:
        """Log one journal event (unknown types are skipped)."""
        kind, t = event.get("type"), event.get("t")
        if kind == "run_started":
            self.parent(t)
        elif kind == "run_resumed":
            # the same MLflow run goes on (the link names it); it is running again
            self.client.update_run(self.parent(t), status="RUNNING")
            self._log(self.parent(), tags={"resumed": "true"})
        elif kind == "node_started":
            self.node_run(event["id"], t, kind=event.get("kind"), iteration=event.get("iteration"))
        elif kind == "node_finished":
            self._node_finished(event)
        elif kind == "node_abandoned":
            run_id = self.node_run(event["id"], t)
            self._log(run_id, tags={"status": "abandoned", "abandoned": event.get("reason")})
            self.client.set_terminated(run_id, "KILLED", end_time=_ms(t))
        elif kind == "replicate_scored":
            self._log(
                self.node_run(event["node_id"], t),
                metrics={"val_primary_by_seed": event.get("primary")},
                t=t,
                step=int(event.get("seed") or 0),
            )
        elif kind == "seed_noise_measured":
            self._log(self.parent(t), metrics={"seed_noise_sd": event.get("sd")}, t=t)
        elif kind == "finalists_chosen":
            for row in event.get("finalists") or []:
                if row.get("node"):
                    metrics = {
                        "finalist_mean": row.get("mean"),
                        "finalist_spread": row.get("spread"),
                    }
                    self._log(self.node_run(row["node"], t), metrics=metrics, t=t)
            self._winner(event.get("node_id"), selection_rule=event.get("rule"))
        elif kind == "run_stopped":
            self._winner(event.get("best"))
            parent = self.parent(t)
            self._log(parent, tags={"stop_reason": event.get("reason")})
            self.client.set_terminated(parent, "FINISHED", end_time=_ms(t))
        elif kind == "final":
            self._final(event)

    def _final(self, event: dict[str, Any]) -> None:
        report_path = self.run_dir / str(event.get("report") or "final_report.json")
        report = json.loads(report_path.read_text(encoding="utf-8"))
        metrics = {f"test_{k}": v for k, v in (report.get("test_metrics") or {}).items()}
        metrics.update(
            {
                key: report.get(key)
                for key in ("test_primary", "test_standard_error", "val_primary", "val_test_gap")
            }
        )
        tags = {
            "final_node": event.get("node_id"),
            "audit_clean": (report.get("audit") or {}).get("clean"),
            "test_error": report.get("test_error"),
        }
        parent = self.parent(event.get("t"))
        self._log(parent, metrics=metrics, tags=tags, t=event.get("t"))
        self.client.log_artifact(parent, str(report_path))
        self._winner(event.get("node_id"))

    def record_dropped(self, count: int) -> None:
        """Add ``count`` dropped events to the run's facts in the link file."""
        self.link.dropped_events += count
        self._save()
