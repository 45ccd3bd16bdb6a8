"""Numbers as the views print them: a score with its standard error, a gain with its verdict.

One place for the rounding, so ``rlab show``, the live lines, ``rlab final`` and the
dashboard say the same thing:

- a score keeps five decimals (paired comparisons resolve differences far smaller than a
  node's own standard error, so rounding the score to its error would hide real gains) and
  its standard error gets two significant digits: ``0.66733 ± 0.0073``;
- a gain is rounded to two significant digits of its own uncertainty (the distance to its
  one-sided bound) and says its verdict: ``+0.0046 within noise``, ``-0.49 worse``;
- minus signs are printed as the typographic minus (U+2212), as the dashboard writes them,
  and intervals with an en dash; the docstrings here spell both with ASCII.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

from rlab_core.records import Gain

MINUS = "\u2212"
PLUS_MINUS = "\u00b1"
#: Decimals of a score (as the views printed scores before they carried an error).
SCORE_DECIMALS = 5
#: The most decimals any rounded figure gets.
MAX_DECIMALS = 8


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def sig_decimals(value: float, digits: int = 2) -> int:
    """Decimals that show ``value`` to ``digits`` significant digits (0 for large values)."""
    if not _finite(value) or value == 0:
        return 0
    return min(MAX_DECIMALS, max(0, digits - 1 - math.floor(math.log10(abs(value)))))


def format_number(value: float | None, decimals: int = SCORE_DECIMALS) -> str:
    """``value`` with ``decimals`` decimals and a typographic minus (``-`` when missing)."""
    if not _finite(value):
        return "-"
    text = f"{value:.{decimals}f}"
    return MINUS + text[1:] if text.startswith("-") else text


def format_se(se: float | None) -> str:
    """A standard error to two significant digits: ``0.0073``, ``0.12``, ``12``."""
    if not _finite(se):
        return "-"
    if se == 0:
        return "0"
    return f"{se:.{sig_decimals(se)}f}"


def format_score(primary: float | None, se: float | None = None) -> str:
    """``0.66733 ± 0.0073``; the score alone where it has no standard error."""
    if not _finite(primary):
        return "-"
    text = format_number(primary)
    return f"{text} {PLUS_MINUS} {format_se(se)}" if _finite(se) else text


def signed(value: float, decimals: int) -> str:
    """``+0.0046``, ``-0.0030``; zero has no sign."""
    text = f"{abs(value):.{decimals}f}"
    if float(text) == 0:
        return text
    return ("+" if value > 0 else MINUS) + text


def _gain_fields(gain: Gain | Mapping[str, Any]) -> tuple[float, float | None, float | None]:
    if isinstance(gain, Gain):
        return gain.delta, gain.low, gain.high
    return float(gain["delta"]), gain.get("low"), gain.get("high")


def gain_decimals(gain: Gain | Mapping[str, Any]) -> int:
    """Two significant digits of the gain's uncertainty (three of the gain when unmeasured)."""
    delta, low, high = _gain_fields(gain)
    margins = [abs(delta - b) for b in (low, high) if _finite(b) and abs(delta - b) > 0]
    if margins:
        return sig_decimals(max(margins), 2)
    return sig_decimals(delta, 3) if delta else SCORE_DECIMALS


def level_text(level: float) -> str:
    """``90 %`` for 0.9."""
    return f"{level * 100:g} %"


def gain_verdict(gain: Gain | Mapping[str, Any]) -> str:
    return str(gain.verdict if isinstance(gain, Gain) else gain.get("verdict", "unmeasured"))


def gain_text(gain: Gain | Mapping[str, Any] | None) -> str:
    """``+0.0046 within noise``, ``+0.021 better``, ``-0.49 worse``, ``+0.516 unmeasured``."""
    if gain is None:
        return ""
    delta, _, _ = _gain_fields(gain)
    return f"{signed(delta, gain_decimals(gain))} {gain_verdict(gain)}"


def gain_detail(gain: Gain | Mapping[str, Any] | None) -> str:
    """The gain with the one-sided bound that decided it: ``+0.0046, 90 % lower bound -0.0030:
    within noise``; a worse (or negative) gain shows its upper bound instead."""
    if gain is None:
        return ""
    delta, low, high = _gain_fields(gain)
    level = gain.level if isinstance(gain, Gain) else float(gain.get("level", 0.9))
    verdict = gain_verdict(gain)
    decimals = gain_decimals(gain)
    point = signed(delta, decimals)
    if verdict == "unmeasured" or not (_finite(low) or _finite(high)):
        return f"{point}: unmeasured (the benchmark offers no resampling of its metric)"
    use_upper = (verdict == "worse" or delta < 0) and _finite(high)
    if not use_upper and not _finite(low):
        use_upper = True
    name, bound = ("upper", high) if use_upper else ("lower", low)
    return f"{point}, {level_text(level)} {name} bound {signed(bound, decimals)}: {verdict}"  # type: ignore[arg-type]


def format_interval(low: float | None, high: float | None, decimals: int) -> str:
    """``0.654-0.676`` (``-0.01 to 0.02`` when a bound is negative)."""
    if not (_finite(low) and _finite(high)):
        return "-"
    a, b = format_number(low, decimals), format_number(high, decimals)
    return f"{a} to {b}" if low < 0 or high < 0 else f"{a}\u2013{b}"  # type: ignore[operator]


def seed_order(rows: list[Mapping[str, Any]]) -> list[str]:
    """Every seed a finalists' table names, in numeric order."""
    seeds: set[str] = set()
    for row in rows:
        seeds.update(str(s) for s in (row.get("scores") or {}))
        seeds.update(str(s) for s in (row.get("failures") or {}))
    return sorted(seeds, key=lambda s: (int(s) if s.lstrip("-").isdigit() else 0, s))


def mean_spread_text(row: Mapping[str, Any], decimals: int = SCORE_DECIMALS) -> str:
    """``1.1611 ± 0.021`` (mean ± the spread of a finalist's seed scores)."""
    if not _finite(row.get("mean")):
        return "-"
    spread = format_se(row.get("spread") or 0.0)
    return f"{format_number(row['mean'], decimals)} {PLUS_MINUS} {spread}"


def final_test_text(report: Mapping[str, Any]) -> str:
    """``test rmse 1.16309 ± 0.13 (90 % interval 0.94-1.37, over points)``, from a
    ``final_report.json``."""
    metric, se = report.get("primary_metric") or "score", report.get("test_standard_error")
    line = f"test {metric} {format_score(report.get('test_primary'), se)}"
    interval = report.get("test_interval")
    extras = []
    if interval and len(interval) == 2 and _finite(se):
        level = level_text(float(report.get("test_interval_level") or 0.9))
        decimals = sig_decimals(se) if se else SCORE_DECIMALS
        extras.append(f"{level} interval {format_interval(interval[0], interval[1], decimals)}")
    if report.get("test_resample_unit"):
        extras.append(f"over {report['test_resample_unit']}")
    if report.get("test_interval_error"):
        extras.append(f"no interval: {report['test_interval_error']}")
    return line + (f" ({', '.join(extras)})" if extras else "")


def final_gap_text(report: Mapping[str, Any]) -> str | None:
    """``val-test gap (test - val) -0.02 ± 0.18: better on test, within noise at 90 %``.

    The gap's standard error combines the two splits' (independent samples); the verdict
    compares the gap with the two-sided interval at the report's level.
    """
    gap = report.get("val_test_gap")
    if not _finite(gap):
        return None
    errors = [report.get("val_standard_error"), report.get("test_standard_error")]
    se = math.hypot(*errors) if all(_finite(e) for e in errors) else None
    decimals = sig_decimals(se) if se else SCORE_DECIMALS
    higher = bool(report.get("higher_is_better", True))
    if gap == 0:
        says = "the same on test"
    else:
        says = ("better" if (gap > 0) == higher else "worse") + " on test"
    if se:
        level = float(report.get("test_interval_level") or 0.9)
        z = NormalDist().inv_cdf(0.5 + level / 2)
        says += f", {'within' if abs(gap) <= z * se else 'beyond'} noise at {level_text(level)}"
    spread = f" {PLUS_MINUS} {format_se(se)}" if se else ""
    return f"val\u2013test gap (test {MINUS} val) {signed(gap, decimals)}{spread}: {says}"


def acceptance_line(acceptance: Mapping[str, Any] | None, unit: str | None = None) -> str | None:
    """``run.json``'s acceptance rule in words (``None`` for runs from before the rule)."""
    if not acceptance:
        return None
    if acceptance.get("rule") == "significant":
        over = f" over {unit}" if unit else ""
        text = (
            f"acceptance: a gain counts when its {level_text(float(acceptance.get('confidence', 0.9)))} "
            f"one-sided paired bootstrap bound clears zero ({acceptance.get('resamples')} "
            f"resamples{over})"
        )
    else:
        text = "acceptance: any validation gain counts"
    if acceptance.get("note"):
        text += f"; note: {acceptance['note']}"
    return text


def seed_noise_text(event: Mapping[str, Any] | None) -> str | None:
    """The run's training-seed noise (a ``seed_noise_measured`` event) in words."""
    if not event:
        return None
    scores = event.get("scores") or {}
    seeds = ", ".join(f"{seed}: {format_number(value)}" for seed, value in scores.items())
    sd = event.get("sd")
    if sd is None:
        return (
            f"training-seed noise not measured: {event.get('node_id')} scored under "
            f"{len(scores)} seed(s) only ({seeds}); verdicts count the rows' noise only"
        )
    return (
        f"training-seed noise: {event.get('node_id')} over seeds {seeds}: "
        f"SD {format_number(sd)}, counted in every verdict"
    )


#: The medal fields of a Kaggle-style grading report (mle-bench's): the medal won, the
#: thresholds, the median and the board's direction; :func:`medal_text` says them in words.
MEDAL_FIELDS = (
    "is_lower_better",
    "gold_medal",
    "silver_medal",
    "bronze_medal",
    "any_medal",
    "above_median",
    "gold_threshold",
    "silver_threshold",
    "bronze_threshold",
    "median_threshold",
)


def _compact(value: Any) -> str:
    """A threshold as a short number: ``0.95``, ``1234.5``, ``1.2e-05``."""
    return f"{value:.6g}".replace("-", MINUS) if _finite(value) else "-"


def medal_text(report: Mapping[str, Any]) -> str | None:
    """``medal: gold (gold >= 0.95, silver >= 0.9, bronze >= 0.85, above the median 0.8)``
    from a ``final_report.json`` whose test grading names medals (``None`` otherwise).

    The grading report in ``test_details`` is read first, else the test metrics, where
    the medals are numbers (1.0 for the medal won).
    """
    details = report.get("test_details") or {}
    grading = details.get("grading_report") if isinstance(details, Mapping) else None
    fields = grading if isinstance(grading, Mapping) else report.get("test_metrics") or {}
    if not any(f"{tier}_medal" in fields for tier in ("gold", "silver", "bronze")):
        return None
    won = next((t for t in ("gold", "silver", "bronze") if fields.get(f"{t}_medal")), "none")
    lower = fields.get("is_lower_better")
    if lower is None:
        lower = not bool(report.get("higher_is_better", True))
    reach = "\u2264" if lower else "\u2265"
    bars = [
        f"{tier} {reach} {_compact(fields[f'{tier}_threshold'])}"
        for tier in ("gold", "silver", "bronze")
        if _finite(fields.get(f"{tier}_threshold"))
    ]
    if _finite(fields.get("median_threshold")) and "above_median" in fields:
        side = "above" if fields.get("above_median") else "not above"
        bars.append(f"{side} the median {_compact(fields['median_threshold'])}")
    return f"medal: {won}" + (f" ({', '.join(bars)})" if bars else "")
