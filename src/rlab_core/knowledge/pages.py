"""Curated knowledge pages read from a plugin's folder of markdown files.

A page is one ``NAME.md`` file that opens with a YAML front matter::

    ---
    title: Time censoring
    tags: [leakage, time]
    sources:
      - https://relbench.stanford.edu/
    ---
    Markdown body ...

Its id is ``FAMILY/NAME`` (stable, so re-syncing a page updates it in the knowledge base).
Plugins return the pages from their ``rlab_knowledge_pages`` hook, usually as
``load_pages(Path(__file__).parent / "knowledge", "relbench")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rlab_core.errors import PluginError
from rlab_core.knowledge.records import KnowledgePage

#: The line that opens and closes a page's front matter.
FENCE = "---"


def _split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != FENCE:
        raise PluginError(
            f"Knowledge page {path} does not open with a '---' front matter; "
            "start it with '---', then title/tags/sources, then '---'."
        )
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == FENCE)
    except StopIteration:
        raise PluginError(
            f"Knowledge page {path} has no closing '---' after its front matter; add one."
        ) from None
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise PluginError(f"Knowledge page {path} has malformed front matter: {exc}") from None
    if not isinstance(meta, dict):
        raise PluginError(f"Knowledge page {path}: the front matter must be a YAML mapping.")
    return meta, "\n".join(lines[end + 1 :]).strip()


def _strings(value: Any, key: str, path: Path) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise PluginError(f"Knowledge page {path}: '{key}' must be a list of strings.")


def read_page(path: Path, family: str) -> KnowledgePage:
    """One page from ``path``; a malformed file raises a :class:`PluginError` naming it."""
    meta, body = _split_front_matter(path.read_text(encoding="utf-8"), path)
    unknown = set(meta) - {"title", "tags", "sources"}
    if unknown:
        raise PluginError(
            f"Knowledge page {path} has unknown front-matter keys {sorted(unknown)}; "
            "use title, tags and sources."
        )
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        raise PluginError(f"Knowledge page {path} has no 'title' in its front matter; add one.")
    if not body:
        raise PluginError(f"Knowledge page {path} has an empty body; write the page or drop it.")
    return KnowledgePage(
        id=f"{family}/{path.stem}",
        family=family,
        title=title.strip(),
        body=body,
        tags=_strings(meta.get("tags"), "tags", path),
        sources=_strings(meta.get("sources"), "sources", path),
    )


def load_pages(folder: Path, family: str) -> list[KnowledgePage]:
    """Every ``*.md`` page in ``folder`` (sorted by name; ``README.md`` skipped) of ``family``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PluginError(f"Knowledge page folder {folder} does not exist.")
    paths = sorted(p for p in folder.glob("*.md") if p.name.lower() != "readme.md")
    return [read_page(path, family) for path in paths]
