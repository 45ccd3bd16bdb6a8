"""Text from a run, made safe to print: control characters are shown, never obeyed.

Hypotheses come from agents, failure messages quote candidates' logs, and a run folder can
be copied from anywhere: any of it may hold an ANSI/OSC escape sequence (a fake hyperlink,
a cleared screen, a retitled window), a bell, a carriage return that overwrites the line,
or a bidirectional override that reorders what the eye reads. Every such character is
written as a visible escape (``\\x1b``, ``\\x07``, ``\\u202e``) before the text reaches a
terminal, and rich markup in the text stays literal (``[red]`` prints as ``[red]``).

(``--json`` output needs none of this: :func:`json.dumps` writes every non-ASCII
character as a ``\\u`` escape, so JSON keeps the text exact and the terminal safe.)
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape

#: Characters a terminal may obey: C0 controls, DEL, C1 controls, and the bidirectional
#: marks, embeddings, overrides and isolates (U+061C, U+200E-F, U+202A-E, U+2066-9).
#: Tab and newline are kept apart: :func:`clean` decides about them.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: Any, *, newlines: bool = True) -> str:
    """``text`` with every control character written as a visible escape.

    Tabs stay; newlines stay where ``newlines`` (a multi-line block), else each becomes a
    space. ``None`` is the empty string; anything else is ``str()``-ed first.
    """
    if text is None:
        return ""
    text = str(text)
    if not newlines:
        text = text.replace("\r\n", " ").replace("\n", " ")
    return _CONTROL.sub(_visible, text)


def safe(text: Any, *, newlines: bool = True) -> str:
    """:func:`clean` text, escaped for rich markup: print it inside a markup string."""
    return escape(clean(text, newlines=newlines))


def one_line(text: Any, limit: int | None = None) -> str:
    """Clean text on one line, runs of whitespace as one space, cut to ``limit`` with ``…``."""
    flat = " ".join(clean(text, newlines=False).split())
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)] + "…"
    return flat
