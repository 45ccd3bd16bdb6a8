"""``report.html``: a self-contained dashboard of one run, readable from disk with no network.

The page is one file: the run's data embedded as JSON, and the stylesheet and script that
draw the tree, the chart and the table inlined from this package (``template.html``,
``report.css``, ``report.js`` and the panels' ``report_*.js``). Every piece of run text
(hypotheses, diffs, logs, paths) reaches the page only as JSON and is put on it with
``textContent``, never as markup.
"""

from __future__ import annotations

import html
import json
import logging
import os
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from rlab_core.report.data import collect_report_data
from rlab_core.run_folder import RunFolder

log = logging.getLogger(__name__)

REPORT_NAME = "report.html"

#: characters that could end the <script> element or confuse an HTML parser inside it
_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


@cache
def _asset(name: str) -> str:
    return files("rlab_core.report").joinpath(name).read_text(encoding="utf-8")


def _script() -> str:
    """The page's script: the panels, then the page that draws them, in one strict scope."""
    # the panels' functions first: report.js draws the page with them when it runs
    names = ("report_detail.js", "report_chart.js", "report_winner.js", "report.js")
    parts = tuple(_asset(name) for name in names)
    return '(function () {\n"use strict";\n' + "\n".join(parts) + "})();\n"


def embed_json(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">`` (no ``</script>``)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for char, escaped in _JSON_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def render_report(data: dict[str, Any]) -> str:
    """The dashboard page for data from :func:`collect_report_data`."""
    run = data["run"]
    title = f"rlab · {run['id']} · {run.get('task') or ''}"
    page = _asset("template.html")
    # the data goes last: nothing inserted after it can be mistaken for a placeholder
    for placeholder, value in (
        ("{{TITLE}}", html.escape(title)),
        ("{{CSS}}", _asset("report.css")),
        ("{{JS}}", _script()),
        ("{{DATA}}", embed_json(data)),
    ):
        page = page.replace(placeholder, value, 1)
    return page


def write_report(run: RunFolder, output: Path | None = None) -> Path:
    """Write the dashboard (default ``RUN/report.html``) atomically and return its path."""
    target = Path(output) if output is not None else run.root / REPORT_NAME
    page = render_report(collect_report_data(run))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(target)
    return target


def write_report_quietly(run: RunFolder) -> Path | None:
    """:func:`write_report`, but a failure is a logged warning: the report never fails a run."""
    try:
        return write_report(run)
    except Exception as exc:
        log.warning(
            "could not write %s: %s (run `rlab report %s` to retry)", REPORT_NAME, exc, run.root
        )
        log.debug("report failure", exc_info=True)
        return None
