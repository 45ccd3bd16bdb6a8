"""Building a child's source from its parent's and a proposal, exactly as the loop does.

A pure function over files in memory: the proposal's whole-file rewrites, then its
anchored edits, the edit boundary (only files the task allows), the unified diff, and the
guard against capabilities the parent did not have. Agents call it for their dry run, so a
proposal they hand over is one the loop will accept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rlab_core.edits import SourceFiles, apply_edits, apply_rewrite, check_boundary, unified_diff
from rlab_core.errors import EditError, GuardRefusal
from rlab_core.guard import check_new_tokens
from rlab_core.records import Failure, FailureStage, Proposal

NOTHING_CHANGED = "The proposal changes nothing."


@dataclass(frozen=True)
class ChildSource:
    """A child's source, or why the proposal cannot make one.

    On failure ``files`` are the parent's. A guard refusal keeps the ``diff`` and
    ``changed`` files it refused (they are the evidence); an edit failure has neither.
    """

    files: SourceFiles
    changed: list[str] = field(default_factory=list)
    diff: str = ""
    failure: Failure | None = None

    @property
    def ok(self) -> bool:
        """True when the child differs from its parent and may run."""
        return self.failure is None


def build_child(
    parent: SourceFiles,
    proposal: Proposal,
    editable: Sequence[str],
    forbidden_tokens: Sequence[str] = (),
    *,
    rerun: bool = False,
) -> ChildSource:
    """Apply ``proposal`` to the ``parent`` files: the child's files, changed files and diff.

    ``editable`` are the task's editable patterns, ``forbidden_tokens`` its extra guard
    tokens. Never raises for a bad proposal: an edit outside the boundary, an anchor that
    does not occur exactly once or a change that changes nothing fails at stage ``edit``, a
    new capability at stage ``guard``. ``rerun``: the core's own re-run of the parent
    (a screen's yardstick, a promotion), where an unchanged source is the point.
    """
    changed: list[str] = []
    diff = ""
    try:
        child = parent
        if proposal.files is not None:
            child = apply_rewrite(child, proposal.files, editable)
        child = apply_edits(child, proposal.edits, editable)
        changed = check_boundary(parent, child, editable)
        diff = unified_diff(parent, child)
        # only the changed files are scanned: the parent passed the guard when it was a child
        check_new_tokens(child, parent, forbidden_tokens, only=changed)
    except EditError as exc:
        return ChildSource(parent, failure=Failure(stage=FailureStage.EDIT, message=str(exc)))
    except GuardRefusal as exc:
        failure = Failure(stage=FailureStage.GUARD, message=str(exc))
        return ChildSource(parent, changed=changed, diff=diff, failure=failure)
    if not changed and not rerun:
        failure = Failure(stage=FailureStage.EDIT, message=NOTHING_CHANGED)
        return ChildSource(parent, diff=diff, failure=failure)
    return ChildSource(child, changed=changed, diff=diff)
