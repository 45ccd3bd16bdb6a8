"""Exceptions with a contract: user errors become one sentence and exit code 2.

Anything a user can cause (bad config, unknown name, missing data, malformed predictions)
raises a subclass of :class:`RlabUserError`. The CLI prints ``str(error)`` and exits 2
with no traceback. Every other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import re


class RlabUserError(Exception):
    """A problem the user can fix; the message names the problem and the way out."""

    exit_code = 2


class ConfigError(RlabUserError):
    """A configuration value, file or mode is invalid."""


class UnknownNameError(RlabUserError):
    """A task, benchmark, agent, strategy, sandbox or mode name is not registered."""


class PluginError(RlabUserError):
    """A plugin failed to load (strict mode) or two plugins claim one name."""


class DataUnavailableError(RlabUserError):
    """A benchmark's data is missing and cannot be fetched here; says what to get and where."""


class RunFolderError(RlabUserError):
    """The run folder cannot be created, written or read back."""


class RunLockedError(RunFolderError):
    """Another rlab process owns the run folder (a live ``run``, ``resume`` or ``final``)."""


#: ``errno`` values that mean the storage under the run folder, not the candidate, failed:
#: no space left, a read-only file system, a disk quota exceeded.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EDQUOT})
_ERRNO_TEXT = re.compile(r"\[Errno (\d+)\]")


def storage_errno(error: BaseException) -> int | None:
    """The storage ``errno`` behind ``error`` (see :data:`STORAGE_ERRNOS`), else ``None``.

    ``shutil.copytree`` gathers the errors of its files into one ``shutil.Error`` whose
    entries keep only the text, so the number is read back from that text.
    """
    if not isinstance(error, OSError):
        return None
    if error.errno in STORAGE_ERRNOS:
        return error.errno
    if error.errno is None and error.args and isinstance(error.args[0], list):
        for entry in error.args[0]:
            found = _ERRNO_TEXT.search(str(entry))
            if found and int(found.group(1)) in STORAGE_ERRNOS:
                return int(found.group(1))
    return None


class StorageFullError(RlabUserError):
    """The run folder's storage failed (no space, read-only, quota) while rlab wrote to it.

    The run's failure, not a candidate's: the search stops, the node being written stays
    unfinished (so ``rlab resume`` runs that move again) and the message says what filled up.
    """


class EditError(RlabUserError):
    """An edit could not be applied: missing or ambiguous anchor, or a file outside the boundary.

    Inside the loop this is a candidate fault (the node fails and is kept); it is a user
    error only when a person hands rlab the edit.
    """


class GuardRefusal(RlabUserError):
    """A child candidate introduced tokens its parent did not have and the task forbids."""


class ContractError(RlabUserError):
    """A candidate's outputs break the benchmark's prediction contract."""


class AgentError(Exception):
    """An agent could not produce a proposal (backend unreachable, reply unusable after retries).

    The loop records the failure on the node and goes on. ``usage`` (a
    :class:`~rlab_core.records.Usage`) is what the failed attempt spent; it counts
    against the run's token and cost budgets.
    """

    def __init__(self, message: str, *, usage: object | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class AgentAuthError(RlabUserError):
    """An agent's credentials were refused; the run cannot continue without new ones."""


class SandboxUnavailableError(RlabUserError):
    """A sandbox cannot start here (daemon down, image missing, permission denied)."""


class NothingToPropose(AgentError):
    """The agent has no untried change for this parent; the strategy should look elsewhere."""
