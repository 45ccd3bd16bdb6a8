"""Safety checks around candidate code: new capabilities, the environment allow-list, and
the static audit used by ``rlab final``.

Isolation (the sandbox jail) is the security boundary; this module is a reviewer's aid. It
catches the obvious and the common evasions so that a refused change says why, early and
cheaply, but a determined candidate can still reach what it wants in ways no static check
sees (see :mod:`rlab_core.code_scan` for what the scan covers and what it cannot).

The capability check compares a child with its parent: a capability is refused only when
the child introduces it, so a seed that legitimately uses ``subprocess`` can keep it.
Python files are judged by an AST scan (:func:`rlab_core.code_scan.scan_python`); other
files, and Python files that do not parse, by the text patterns of :data:`DEFAULT_FORBIDDEN`.
A task's extra forbidden tokens are literal strings, matched as text in every file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlab_core.code_scan import scan_python
from rlab_core.errors import GuardRefusal
from rlab_core.task_records import AuditPattern

#: Text patterns per capability label, for files the AST scan does not read (non-Python
#: files, Python that does not parse) and for the line audit. Same labels as the scan.
DEFAULT_FORBIDDEN: dict[str, str] = {
    "subprocess": r"\bsubprocess\b",
    "process spawning": (
        r"\b(?:os|posix|nt)\s*\.\s*(?:system|popen|exec\w*|spawn\w*|fork\w*|posix_spawnp?|startfile)\b"
        r"|\bpty\s*\.\s*(?:spawn|fork)\b|\bcreate_subprocess_(?:exec|shell)\b"
    ),
    "multiprocessing": r"\bmultiprocessing\b|\bProcessPoolExecutor\b",
    "socket": r"\bsocket\b",
    "network": (
        r"\b(?:requests|urllib\d?|httpx|aiohttp|http\.client|ftplib|smtplib|poplib|imaplib"
        r"|telnetlib|xmlrpc|webbrowser)\b"
    ),
    "dynamic code": (
        r"(?<![\w.])(?:eval|exec|compile)\s*\(|\b(?:__import__|importlib|runpy|pkgutil|marshal)\b"
    ),
    "native code": r"\b(?:ctypes|cffi)\b",
    "LLM API": r"\b(?:openai|anthropic)\b",
}

#: Variables always passed to candidates when set (no secrets among them).
BASE_ENV_ALLOW = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "OPENBLAS_CORETYPE",  # wrong results or crashes on some CPUs without it
    "OPENBLAS_L2_SIZE",
)

_SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSW|PWD|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT|SIGNATURE)"
    r"|^(AWS|AZURE|GOOGLE|GCP|GCLOUD|GOOGLE_CLOUD|HF|HUGGING|OPENAI|ANTHROPIC|KAGGLE|WANDB|"
    r"MLFLOW|GITHUB|GH|GITLAB|DOCKER|NPM|PYPI|TWINE|DATABRICKS|SNOWFLAKE|DATABASE|PG|MYSQL)_",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    """True for variables named like a key, token, secret, password or cloud credential."""
    return bool(_SECRET_NAME.search(name))


def candidate_environment(
    parent_env: Mapping[str, str],
    contract: Mapping[str, str],
    extra_allow: Iterable[str] = (),
) -> dict[str, str]:
    """Build a candidate's environment: allow-listed, never a secret, plus the contract vars."""
    env: dict[str, str] = {}
    for name in (*BASE_ENV_ALLOW, *extra_allow):
        if name in parent_env and not is_secret_name(name):
            env[name] = parent_env[name]
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({k: v for k, v in contract.items() if not is_secret_name(k)})
    return env


def _compile(tokens: Mapping[str, str]) -> dict[str, re.Pattern[str]]:
    return {label: re.compile(pattern) for label, pattern in tokens.items()}


def forbidden_patterns(extra: Sequence[str] = ()) -> dict[str, re.Pattern[str]]:
    """The text patterns: :data:`DEFAULT_FORBIDDEN` plus a task's extra tokens (literal)."""
    tokens = dict(DEFAULT_FORBIDDEN)
    for token in extra:
        tokens[token] = re.escape(token)
    return _compile(tokens)


def tokens_present(files: Mapping[str, str], patterns: Mapping[str, re.Pattern[str]]) -> set[str]:
    """Labels of the forbidden tokens that occur anywhere in ``files``."""
    return {label for label, rx in patterns.items() if any(rx.search(t) for t in files.values())}


#: (file, line, detail or None) for each place a capability was seen
_Place = tuple[str, int, str | None]


def _text_places(rel: str, text: str, patterns: Mapping[str, re.Pattern[str]]):
    for label, rx in patterns.items():
        match = rx.search(text)
        if match:
            yield label, (rel, text.count("\n", 0, match.start()) + 1, None)


def _capabilities(
    files: Mapping[str, str], extra: Sequence[str]
) -> tuple[dict[str, list[_Place]], set[str]]:
    """Labels found in ``files`` with where; and the Python files that did not parse."""
    default = _compile(DEFAULT_FORBIDDEN)
    literal = {token: re.compile(re.escape(token)) for token in extra}
    found: dict[str, list[_Place]] = {}
    unparsed: set[str] = set()
    for rel, text in files.items():
        hits = scan_python(text) if rel.endswith(".py") else None
        if hits is None:
            if rel.endswith(".py"):
                unparsed.add(rel)
            places = list(_text_places(rel, text, default))
        else:
            places = [(hit.label, (rel, hit.line, hit.detail)) for hit in hits]
        places.extend(_text_places(rel, text, literal))
        for label, place in places:
            found.setdefault(label, []).append(place)
    return found, unparsed


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _describe(label: str, places: list[_Place], shown: int = 3) -> str:
    first: dict[tuple[str, str | None], int] = {}
    for rel, line, detail in places:
        key = (rel, detail)
        first[key] = min(line, first.get(key, line))
    where = sorted(first.items(), key=lambda item: (item[0][0], item[1]))
    text = [f"{d} at {rel}:{line}" if d else f"{rel}:{line}" for (rel, d), line in where]
    more = f" and {len(text) - shown} more" if len(text) > shown else ""
    return f"{label} ({', '.join(text[:shown])}{more})"


def check_new_tokens(
    child: Mapping[str, str],
    parent: Mapping[str, str],
    extra: Sequence[str] = (),
    only: Iterable[str] | None = None,
) -> None:
    """Raise :class:`GuardRefusal` when ``child`` adds a capability its parent lacked.

    ``only`` limits the child side to the files that changed; the parent counts as a whole,
    so moving a capability from one file to another is allowed. Each file is parsed once
    (results are cached by content, so the parent, scanned when it was a child, is free),
    and the parent is not read at all when the changed files introduce nothing.
    """
    scope = set(only) if only is not None else set(child)
    changed = {p: t for p, t in child.items() if p in scope}
    found, unparsed = _capabilities(changed, extra)
    if not found:
        return
    had, _ = _capabilities(parent, extra)
    new = {label: places for label, places in found.items() if label not in had}
    if not new:
        return
    files = sorted({rel for places in new.values() for rel, _, _ in places})
    text_only = [rel for rel in files if rel in unparsed]
    note = ""
    if text_only:
        one = len(text_only) == 1
        note = (
            f"; {_and(text_only)} {'does' if one else 'do'} not parse as Python, so "
            f"{'it was' if one else 'they were'} checked as text"
        )
    raise GuardRefusal(
        f"Change refused: it introduces {_and([_describe(k, new[k]) for k in sorted(new)])}, "
        f"which the parent did not use{note}; candidates may not start processes, open the "
        "network, load code or native libraries dynamically, or reach these through reflection."
    )


@dataclass(frozen=True)
class Finding:
    """One line the audit flags."""

    file: str
    line: int
    reason: str
    text: str

    def as_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "reason": self.reason, "text": self.text}


def core_audit_patterns(hidden_paths: Iterable[Path] = ()) -> list[AuditPattern]:
    """The core's text patterns for the audit: any mention of a hidden path.

    Capabilities (processes, network, dynamic code...) are audited by :func:`audit_code`.
    """
    patterns: list[AuditPattern] = []
    for path in hidden_paths:
        text = str(path).rstrip("/")
        if len(text) > 1:
            patterns.append(
                AuditPattern(pattern=re.escape(text), reason=f"names the hidden path {text}")
            )
    return patterns


def audit_source(files: Mapping[str, str], patterns: Sequence[AuditPattern]) -> list[Finding]:
    """Every line of ``files`` that matches an audit pattern."""
    compiled = [(re.compile(p.pattern), p.reason) for p in patterns]
    findings: list[Finding] = []
    for rel, text in sorted(files.items()):
        for number, line in enumerate(text.splitlines(), start=1):
            for rx, reason in compiled:
                if rx.search(line):
                    findings.append(Finding(rel, number, reason, line.strip()[:200]))
    return findings


def audit_code(files: Mapping[str, str]) -> list[Finding]:
    """File and line of every capability in ``files``.

    Python files are read by the AST scan; other files, and Python files that do not parse,
    by :data:`DEFAULT_FORBIDDEN` line by line (and the reason says so). Complements
    :func:`audit_source`, which matches the hidden paths and the task's own patterns.
    """
    findings: list[Finding] = []
    default = _compile(DEFAULT_FORBIDDEN)
    for rel, text in sorted(files.items()):
        lines = text.splitlines()
        hits = scan_python(text) if rel.endswith(".py") else None
        if hits is None:
            why = " (text match: the file does not parse)" if rel.endswith(".py") else ""
            for number, line in enumerate(lines, start=1):
                for label, rx in default.items():
                    if rx.search(line):
                        findings.append(
                            Finding(rel, number, f"uses {label}{why}", line.strip()[:200])
                        )
            continue
        for hit in hits:
            line = lines[hit.line - 1].strip()[:200] if 0 < hit.line <= len(lines) else ""
            findings.append(Finding(rel, hit.line, f"uses {hit.label}: {hit.detail}", line))
    return findings
