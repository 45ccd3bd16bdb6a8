"""The RelBench plugin's knowledge pages: shipped in the package, read through the real plugin
host and checked as agents will read them (``rlab_core.testing.check_knowledge_pages``)."""

from __future__ import annotations

from rlab_core.testing import check_knowledge_pages


def test_the_pages_load_and_read_well() -> None:
    pages = check_knowledge_pages(
        "relbench", family="relbench", package="rlab_relbench", min_pages=10
    )
    assert len(pages) >= 10
