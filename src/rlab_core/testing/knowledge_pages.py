"""``check_knowledge_pages``: a benchmark plugin's curated pages, read as agents will read them.

The plugin is found by its entry point (only it and the core's builtin plugin loaded), its
``rlab_knowledge_pages`` hook is called, and every page is checked: each ``.md`` file of the
package's ``knowledge/`` folder loads as a page of the family, ids and titles are unique,
every page has a title, tags, at least one source and a body of ``words`` words, its code
fences are closed, and its Python snippets compile (most pages should show code).
"""

from __future__ import annotations

import os
import re
from importlib.resources import files

from rlab_core.knowledge.records import KnowledgePage
from rlab_core.plugins import PluginHost

SNIPPET = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def plugin_pages(entry_point: str) -> list[KnowledgePage]:
    """The pages the ``entry_point`` plugin's hook returns, with only it loaded."""
    names = ("RLAB_LOAD_PLUGINS", "RLAB_DISABLE_PLUGINS", "RLAB_PLUGIN_MODULES")
    saved = {name: os.environ.pop(name, None) for name in names}
    os.environ["RLAB_LOAD_PLUGINS"] = entry_point
    try:
        host = PluginHost(strict=True)
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
    assert host.records[entry_point].status == "loaded"
    impls = {i.plugin_name: i for i in host.manager.hook.rlab_knowledge_pages.get_hookimpls()}
    assert entry_point in impls, f"the {entry_point} plugin implements no rlab_knowledge_pages"
    return list(impls[entry_point].function())


def check_knowledge_pages(
    entry_point: str,
    *,
    family: str,
    package: str,
    min_pages: int = 10,
    words: tuple[int, int] = (150, 500),
) -> list[KnowledgePage]:
    """Check the plugin's pages (see the module docstring); returns them. Raises
    ``AssertionError`` naming every problem found."""
    pages = plugin_pages(entry_point)
    shipped = sorted(
        p.name[: -len(".md")]
        for p in files(package).joinpath("knowledge").iterdir()
        if p.name.endswith(".md")
    )
    assert len(pages) >= min_pages, f"{len(pages)} pages, at least {min_pages} expected"
    assert all(isinstance(p, KnowledgePage) and p.family == family for p in pages)
    assert sorted(p.id for p in pages) == [f"{family}/{name}" for name in shipped]
    assert len({p.id for p in pages}) == len(pages), "page ids repeat"
    assert len({p.title for p in pages}) == len(pages), "page titles repeat"
    problems = []
    low, high = words
    for page in pages:
        count = len(page.body.split())
        if not page.title.strip():
            problems.append(f"{page.id}: no title")
        if not page.tags or not all(t.strip() for t in page.tags):
            problems.append(f"{page.id}: no tags")
        if not page.sources or not all(s.strip() for s in page.sources):
            problems.append(f"{page.id}: no source")
        if not low <= count <= high:
            problems.append(f"{page.id}: {count} words, not {low}-{high}")
        if page.body.count("```") % 2:
            problems.append(f"{page.id}: an unclosed code fence")
    assert not problems, "\n".join(problems)
    snippets = [(p.id, i, code) for p in pages for i, code in enumerate(SNIPPET.findall(p.body))]
    shown = len({page_id for page_id, _, _ in snippets})
    assert shown >= len(pages) // 2, f"only {shown} of {len(pages)} pages show Python code"
    for page_id, i, code in snippets:
        compile(code, f"{page_id} (python snippet {i + 1})", "exec")
    return pages
