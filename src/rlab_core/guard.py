"""Safety checks around candidate code: new forbidden tokens, the environment allow-list,
and the static audit used by ``rlab final``.

The token check compares a child with its parent: a dangerous token is refused only when
the child introduces it, so a seed that legitimately uses ``subprocess`` can keep it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlab_core.errors import GuardRefusal
from rlab_core.interfaces import AuditPattern

#: Tokens a child may not introduce unless its parent had them (regex, label).
DEFAULT_FORBIDDEN: dict[str, str] = {
    "subprocess": r"\bsubprocess\b",
    "socket": r"\bsocket\b",
    "requests": r"\brequests\b",
    "urllib": r"\burllib\d?\b",
    "httpx": r"\bhttpx\b",
    "openai": r"\bopenai\b",
    "anthropic": r"\banthropic\b",
    "os.system": r"\bos\s*\.\s*(system|popen|exec\w*|spawn\w*|fork)\b",
    "eval(": r"(?<![\w.])eval\s*\(",
    "exec(": r"(?<![\w.])exec\s*\(",
    "importlib": r"\bimportlib\b",
    "__import__": r"\b__import__\b",
    "ctypes": r"\bctypes\b",
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
    """The default denylist plus a task's extra tokens (matched literally)."""
    tokens = dict(DEFAULT_FORBIDDEN)
    for token in extra:
        tokens[token] = re.escape(token)
    return _compile(tokens)


def tokens_present(files: Mapping[str, str], patterns: Mapping[str, re.Pattern[str]]) -> set[str]:
    """Labels of the forbidden tokens that occur anywhere in ``files``."""
    return {label for label, rx in patterns.items() if any(rx.search(t) for t in files.values())}


def check_new_tokens(
    child: Mapping[str, str],
    parent: Mapping[str, str],
    extra: Sequence[str] = (),
    only: Iterable[str] | None = None,
) -> None:
    """Raise :class:`GuardRefusal` when ``child`` adds a forbidden token its parent lacked.

    ``only`` limits the check to the files that changed (faster on big candidates).
    """
    patterns = forbidden_patterns(extra)
    scope = set(only) if only is not None else set(child)
    changed = {p: t for p, t in child.items() if p in scope}
    new = tokens_present(changed, patterns) - tokens_present(parent, patterns)
    if new:
        where = sorted(
            p for p, t in changed.items() if any(patterns[label].search(t) for label in new)
        )
        raise GuardRefusal(
            f"Change refused: it introduces {', '.join(sorted(new))} (in {', '.join(where)}), "
            "which the parent did not use; candidates may not start processes, open the "
            "network or load code dynamically."
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
    """The core's audit patterns: dangerous tokens and any mention of a hidden path."""
    patterns = [
        AuditPattern(pattern=rx, reason=f"uses {label}") for label, rx in DEFAULT_FORBIDDEN.items()
    ]
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
