"""The public API of rlab-core: everything a plugin may import, in one place.

Plugins (ours included) import from here, from :mod:`rlab_core` itself (``hookimpl``,
``__version__``) and, in their tests, from :mod:`rlab_core.testing` — nothing else of the
core, which may change without notice (a test in the core's suite enforces it). Groups:

- **hooks**: ``hookimpl`` and the ``*Info`` records a registration hook returns;
- **contracts**: the abstract bases of the four extension points, generic over their
  options model (``class MyBenchmark(Benchmark[MyOptions])``), and what strategies are told;
- **records**: what flows between them (nodes, proposals, executions, scores, task and
  agent-context records, the sandbox request);
- **errors**: the exceptions a plugin raises or handles;
- **editing**: reading and writing candidate sources, anchored edits, the edit boundary,
  diffs, and building a child from a proposal exactly as the loop does (``build_child``,
  for an agent's dry run);
- **guard and environment**: the capability check and the candidate environment allow-list;
- **budgets and stop rules**: stages by budget progress, budget stop reasons, the
  convergence rule;
- **sandboxes**: taking outputs as data, the local sandbox (for sandboxes that run
  candidates on other machines), the process supervisor's pieces and the log-tail reader;
- **cache**: rlab's cache folder and the one prepared-folder builder;
- **events**: the journal's typed events and ``parse_event``, for observers
  (``rlab_observe_event`` receives each event as its journal line);
- **command line**: running an ``rlab`` command in-process.
"""

# ruff: noqa: F401 - the imports below exist for type checkers; _EXPORTS loads them
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names for type checkers and readers; at run time they load lazily
    from rlab_core import (
        __version__,
    )
    from rlab_core.agent_context import (
        AgentContext,
        BudgetProgress,
        NodeSummary,
        RepairContext,
    )
    from rlab_core.budget import (
        ENSEMBLE_STAGE_FROM,
        MINI_STAGE_BELOW,
        budget_stop_reason,
        stage_by_progress,
    )
    from rlab_core.builtin.candidate_group import (
        CandidateGroup,
        DiskWatch,
    )
    from rlab_core.builtin.convergence import (
        common_stop_reason,
        convergence_reason,
        target_reason,
    )
    from rlab_core.builtin.jail import (
        LEVELS as ISOLATION_LEVELS,
    )
    from rlab_core.builtin.local_sandbox import (
        LocalSandbox,
        LocalSandboxConfig,
        read_tail,
    )
    from rlab_core.cache import (
        PreparedBuild,
        build_prepared,
        cache_home,
        read_marker,
        remove_tree,
    )
    from rlab_core.child import (
        ChildSource,
        build_child,
    )
    from rlab_core.edits import (
        MAX_SOURCE_FILE_BYTES,
        SourceFiles,
        apply_edit,
        apply_edits,
        apply_rewrite,
        changed_files,
        check_boundary,
        copy_source,
        read_source,
        unified_diff,
        write_source,
    )
    from rlab_core.errors import (
        AgentAuthError,
        AgentError,
        ConfigError,
        ContractError,
        DataUnavailableError,
        EditError,
        GuardRefusal,
        NothingToPropose,
        PluginError,
        RlabUserError,
        RunFolderError,
        SandboxUnavailableError,
        UnknownNameError,
    )
    from rlab_core.events import (
        BestExported,
        BranchClosed,
        Event,
        FinalScored,
        NodeAbandoned,
        NodeFinished,
        NodeStarted,
        ParentExhausted,
        RunResumed,
        RunStarted,
        RunStopped,
        parse_event,
    )
    from rlab_core.guard import (
        BASE_ENV_ALLOW,
        candidate_environment,
        check_new_tokens,
        is_secret_name,
    )
    from rlab_core.hookspecs import (
        AgentInfo,
        BenchmarkInfo,
        EmptyConfig,
        ModeInfo,
        SandboxInfo,
        StrategyInfo,
        hookimpl,
    )
    from rlab_core.interfaces import (
        Agent,
        Benchmark,
        PreparedTask,
        Sandbox,
        Split,
        Step,
        StopRules,
        Strategy,
        StrategyState,
    )
    from rlab_core.outputs import (
        OutputsRefused,
        TakenOutputs,
        disk_usage_bytes,
        take_outputs,
    )
    from rlab_core.package_data import (
        package_data_dir,
    )
    from rlab_core.playbook_rules import (
        applicable_moves,
        fix_proposal,
        lineage_of,
        move_proposal,
        moves_on_lineage,
    )
    from rlab_core.records import (
        Edit,
        Execution,
        Failure,
        FailureStage,
        Node,
        NodeKind,
        NodeStatus,
        Proposal,
        Record,
        Score,
        Timing,
        Usage,
    )
    from rlab_core.task_records import (
        AuditPattern,
        CandidateLimits,
        PlaybookMove,
        SandboxRequest,
        SeedCandidate,
        TaskListing,
    )
    from rlab_core.tree import (
        Tree,
    )

#: Public name -> (module, attribute). Loaded on first use, so a plugin module that imports
#: ``hookimpl`` and an ``*Info`` from here stays as cheap to import as ``rlab --help`` needs.
_EXPORTS: dict[str, tuple[str, str]] = {
    "__version__": ("rlab_core", "__version__"),
    "Agent": ("rlab_core.interfaces", "Agent"),
    "AgentAuthError": ("rlab_core.errors", "AgentAuthError"),
    "AgentContext": ("rlab_core.agent_context", "AgentContext"),
    "AgentError": ("rlab_core.errors", "AgentError"),
    "AgentInfo": ("rlab_core.hookspecs", "AgentInfo"),
    "applicable_moves": ("rlab_core.playbook_rules", "applicable_moves"),
    "apply_edit": ("rlab_core.edits", "apply_edit"),
    "apply_edits": ("rlab_core.edits", "apply_edits"),
    "apply_rewrite": ("rlab_core.edits", "apply_rewrite"),
    "AuditPattern": ("rlab_core.task_records", "AuditPattern"),
    "BASE_ENV_ALLOW": ("rlab_core.guard", "BASE_ENV_ALLOW"),
    "Benchmark": ("rlab_core.interfaces", "Benchmark"),
    "BenchmarkInfo": ("rlab_core.hookspecs", "BenchmarkInfo"),
    "BestExported": ("rlab_core.events", "BestExported"),
    "BranchClosed": ("rlab_core.events", "BranchClosed"),
    "budget_stop_reason": ("rlab_core.budget", "budget_stop_reason"),
    "BudgetProgress": ("rlab_core.agent_context", "BudgetProgress"),
    "build_child": ("rlab_core.child", "build_child"),
    "build_prepared": ("rlab_core.cache", "build_prepared"),
    "cache_home": ("rlab_core.cache", "cache_home"),
    "candidate_environment": ("rlab_core.guard", "candidate_environment"),
    "CandidateGroup": ("rlab_core.builtin.candidate_group", "CandidateGroup"),
    "CandidateLimits": ("rlab_core.task_records", "CandidateLimits"),
    "changed_files": ("rlab_core.edits", "changed_files"),
    "check_boundary": ("rlab_core.edits", "check_boundary"),
    "check_new_tokens": ("rlab_core.guard", "check_new_tokens"),
    "ChildSource": ("rlab_core.child", "ChildSource"),
    "common_stop_reason": ("rlab_core.builtin.convergence", "common_stop_reason"),
    "ConfigError": ("rlab_core.errors", "ConfigError"),
    "ContractError": ("rlab_core.errors", "ContractError"),
    "convergence_reason": ("rlab_core.builtin.convergence", "convergence_reason"),
    "copy_source": ("rlab_core.edits", "copy_source"),
    "DataUnavailableError": ("rlab_core.errors", "DataUnavailableError"),
    "disk_usage_bytes": ("rlab_core.outputs", "disk_usage_bytes"),
    "DiskWatch": ("rlab_core.builtin.candidate_group", "DiskWatch"),
    "Edit": ("rlab_core.records", "Edit"),
    "EditError": ("rlab_core.errors", "EditError"),
    "EmptyConfig": ("rlab_core.hookspecs", "EmptyConfig"),
    "ENSEMBLE_STAGE_FROM": ("rlab_core.budget", "ENSEMBLE_STAGE_FROM"),
    "Event": ("rlab_core.events", "Event"),
    "Execution": ("rlab_core.records", "Execution"),
    "Failure": ("rlab_core.records", "Failure"),
    "FailureStage": ("rlab_core.records", "FailureStage"),
    "FinalScored": ("rlab_core.events", "FinalScored"),
    "fix_proposal": ("rlab_core.playbook_rules", "fix_proposal"),
    "GuardRefusal": ("rlab_core.errors", "GuardRefusal"),
    "hookimpl": ("rlab_core.hookspecs", "hookimpl"),
    "is_secret_name": ("rlab_core.guard", "is_secret_name"),
    "ISOLATION_LEVELS": ("rlab_core.builtin.jail", "LEVELS"),
    "lineage_of": ("rlab_core.playbook_rules", "lineage_of"),
    "LocalSandbox": ("rlab_core.builtin.local_sandbox", "LocalSandbox"),
    "LocalSandboxConfig": ("rlab_core.builtin.local_sandbox", "LocalSandboxConfig"),
    "MAX_SOURCE_FILE_BYTES": ("rlab_core.edits", "MAX_SOURCE_FILE_BYTES"),
    "MINI_STAGE_BELOW": ("rlab_core.budget", "MINI_STAGE_BELOW"),
    "ModeInfo": ("rlab_core.hookspecs", "ModeInfo"),
    "move_proposal": ("rlab_core.playbook_rules", "move_proposal"),
    "moves_on_lineage": ("rlab_core.playbook_rules", "moves_on_lineage"),
    "Node": ("rlab_core.records", "Node"),
    "NodeAbandoned": ("rlab_core.events", "NodeAbandoned"),
    "NodeFinished": ("rlab_core.events", "NodeFinished"),
    "NodeKind": ("rlab_core.records", "NodeKind"),
    "NodeStarted": ("rlab_core.events", "NodeStarted"),
    "NodeStatus": ("rlab_core.records", "NodeStatus"),
    "NodeSummary": ("rlab_core.agent_context", "NodeSummary"),
    "NothingToPropose": ("rlab_core.errors", "NothingToPropose"),
    "OutputsRefused": ("rlab_core.outputs", "OutputsRefused"),
    "package_data_dir": ("rlab_core.package_data", "package_data_dir"),
    "ParentExhausted": ("rlab_core.events", "ParentExhausted"),
    "parse_event": ("rlab_core.events", "parse_event"),
    "PlaybookMove": ("rlab_core.task_records", "PlaybookMove"),
    "PluginError": ("rlab_core.errors", "PluginError"),
    "PreparedBuild": ("rlab_core.cache", "PreparedBuild"),
    "PreparedTask": ("rlab_core.interfaces", "PreparedTask"),
    "Proposal": ("rlab_core.records", "Proposal"),
    "read_marker": ("rlab_core.cache", "read_marker"),
    "read_source": ("rlab_core.edits", "read_source"),
    "read_tail": ("rlab_core.builtin.local_sandbox", "read_tail"),
    "Record": ("rlab_core.records", "Record"),
    "remove_tree": ("rlab_core.cache", "remove_tree"),
    "RepairContext": ("rlab_core.agent_context", "RepairContext"),
    "RlabUserError": ("rlab_core.errors", "RlabUserError"),
    "RunFolderError": ("rlab_core.errors", "RunFolderError"),
    "RunResumed": ("rlab_core.events", "RunResumed"),
    "RunStarted": ("rlab_core.events", "RunStarted"),
    "RunStopped": ("rlab_core.events", "RunStopped"),
    "Sandbox": ("rlab_core.interfaces", "Sandbox"),
    "SandboxInfo": ("rlab_core.hookspecs", "SandboxInfo"),
    "SandboxRequest": ("rlab_core.task_records", "SandboxRequest"),
    "SandboxUnavailableError": ("rlab_core.errors", "SandboxUnavailableError"),
    "Score": ("rlab_core.records", "Score"),
    "SeedCandidate": ("rlab_core.task_records", "SeedCandidate"),
    "SourceFiles": ("rlab_core.edits", "SourceFiles"),
    "Split": ("rlab_core.interfaces", "Split"),
    "stage_by_progress": ("rlab_core.budget", "stage_by_progress"),
    "Step": ("rlab_core.interfaces", "Step"),
    "StopRules": ("rlab_core.interfaces", "StopRules"),
    "Strategy": ("rlab_core.interfaces", "Strategy"),
    "StrategyInfo": ("rlab_core.hookspecs", "StrategyInfo"),
    "StrategyState": ("rlab_core.interfaces", "StrategyState"),
    "take_outputs": ("rlab_core.outputs", "take_outputs"),
    "TakenOutputs": ("rlab_core.outputs", "TakenOutputs"),
    "target_reason": ("rlab_core.builtin.convergence", "target_reason"),
    "TaskListing": ("rlab_core.task_records", "TaskListing"),
    "Timing": ("rlab_core.records", "Timing"),
    "Tree": ("rlab_core.tree", "Tree"),
    "unified_diff": ("rlab_core.edits", "unified_diff"),
    "UnknownNameError": ("rlab_core.errors", "UnknownNameError"),
    "Usage": ("rlab_core.records", "Usage"),
    "write_source": ("rlab_core.edits", "write_source"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"rlab_core.api has no {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*_EXPORTS, "run_cli"])


def run_cli(args: list[str]) -> int:
    """Run one ``rlab`` command (``["run", "mle:x", "-i", "3"]``) in this process; its exit code.

    For plugins that offer a command line of their own on top of rlab's (``rlab-mle``).
    """
    import typer

    from rlab_core.cli.app import app

    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="rlab", standalone_mode=False)
    except SystemExit as exc:  # user errors and interrupts end with their own code
        return int(exc.code or 0)
    return code if isinstance(code, int) else 0


__all__ = sorted([*_EXPORTS, "run_cli"])
