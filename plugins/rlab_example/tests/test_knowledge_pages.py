"""The example knowledge pages: shipped in the package, read through the real plugin host.

The plugin is found by its entry point (only it and the core's builtin plugin loaded), its
``rlab_knowledge_pages`` hook is called, and every page is checked as agents will read it:
a title, tags, at least one source, a body of 150-500 words, and Python
snippets that compile.
"""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from rlab_core.api import KnowledgePage
from rlab_core.plugins import PluginHost

ENTRY_POINT = "example"
FAMILY = "example"
PACKAGE = "rlab_example"
MIN_PAGES = 3
MIN_WORDS, MAX_WORDS = 150, 500
SNIPPET = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


@pytest.fixture(scope="module")
def pages() -> list[KnowledgePage]:
    """The pages this plugin's hook returns, with only this plugin loaded from entry points."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_LOAD_PLUGINS", ENTRY_POINT)
        patch.delenv("RLAB_DISABLE_PLUGINS", raising=False)
        patch.delenv("RLAB_PLUGIN_MODULES", raising=False)
        host = PluginHost(strict=True)
    assert host.records[ENTRY_POINT].status == "loaded"
    impls = {i.plugin_name: i for i in host.manager.hook.rlab_knowledge_pages.get_hookimpls()}
    assert ENTRY_POINT in impls, f"the {ENTRY_POINT} plugin implements no rlab_knowledge_pages"
    return list(impls[ENTRY_POINT].function())


def test_every_page_file_loads_as_a_page_of_the_family(pages: list[KnowledgePage]) -> None:
    shipped = sorted(
        p.name[: -len(".md")]
        for p in files(PACKAGE).joinpath("knowledge").iterdir()
        if p.name.endswith(".md")
    )
    assert len(pages) >= MIN_PAGES
    assert all(isinstance(p, KnowledgePage) and p.family == FAMILY for p in pages)
    assert sorted(p.id for p in pages) == [f"{FAMILY}/{name}" for name in shipped]
    assert len({p.id for p in pages}) == len(pages)
    assert len({p.title for p in pages}) == len(pages)


def test_every_page_has_title_tags_sources_and_a_body_within_limits(
    pages: list[KnowledgePage],
) -> None:
    problems = []
    for page in pages:
        words = len(page.body.split())
        if not page.title.strip():
            problems.append(f"{page.id}: no title")
        if not page.tags or not all(t.strip() for t in page.tags):
            problems.append(f"{page.id}: no tags")
        if not page.sources or not all(s.strip() for s in page.sources):
            problems.append(f"{page.id}: no source")
        if not MIN_WORDS <= words <= MAX_WORDS:
            problems.append(f"{page.id}: {words} words, not {MIN_WORDS}-{MAX_WORDS}")
        if page.body.count("```") % 2:
            problems.append(f"{page.id}: an unclosed code fence")
    assert not problems, "\n".join(problems)


def test_python_snippets_compile(pages: list[KnowledgePage]) -> None:
    snippets = [(p.id, i, code) for p in pages for i, code in enumerate(SNIPPET.findall(p.body))]
    assert len({page_id for page_id, _, _ in snippets}) >= len(pages) // 2  # most pages show code
    for page_id, i, code in snippets:
        compile(code, f"{page_id} (python snippet {i + 1})", "exec")
