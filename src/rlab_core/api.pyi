"""The types of :mod:`rlab_core.api`, for type checkers and readers.

This stub is also the table the module loads lazily from: each name imported here is
what ``rlab_core.api`` exports (``from MODULE import NAME as NAME``).
"""

from __future__ import annotations

from rlab_core import __version__ as __version__
from rlab_core.agent_context import (
    AgentContext as AgentContext,
    BudgetProgress as BudgetProgress,
    NodeSummary as NodeSummary,
    RepairContext as RepairContext,
)
from rlab_core.budget import (
    ENSEMBLE_STAGE_FROM as ENSEMBLE_STAGE_FROM,
    MINI_STAGE_BELOW as MINI_STAGE_BELOW,
    budget_stop_reason as budget_stop_reason,
    stage_by_progress as stage_by_progress,
)
from rlab_core.builtin.candidate_group import (
    CandidateGroup as CandidateGroup,
    DiskWatch as DiskWatch,
)
from rlab_core.builtin.convergence import (
    common_stop_reason as common_stop_reason,
    convergence_reason as convergence_reason,
    target_reason as target_reason,
)
from rlab_core.builtin.jail import ISOLATION_LEVELS as ISOLATION_LEVELS
from rlab_core.builtin.local_sandbox import (
    LocalSandbox as LocalSandbox,
    LocalSandboxConfig as LocalSandboxConfig,
    read_tail as read_tail,
)
from rlab_core.cache import (
    PreparedBuild as PreparedBuild,
    build_prepared as build_prepared,
    cache_home as cache_home,
    read_marker as read_marker,
    remove_tree as remove_tree,
)
from rlab_core.child import ChildSource as ChildSource, build_child as build_child
from rlab_core.edits import (
    MAX_SOURCE_FILE_BYTES as MAX_SOURCE_FILE_BYTES,
    SourceFiles as SourceFiles,
    apply_edit as apply_edit,
    apply_edits as apply_edits,
    apply_rewrite as apply_rewrite,
    changed_files as changed_files,
    check_boundary as check_boundary,
    copy_source as copy_source,
    read_source as read_source,
    unified_diff as unified_diff,
    write_source as write_source,
)
from rlab_core.errors import (
    AgentAuthError as AgentAuthError,
    AgentError as AgentError,
    ConfigError as ConfigError,
    ContractError as ContractError,
    DataUnavailableError as DataUnavailableError,
    EditError as EditError,
    GuardRefusal as GuardRefusal,
    NothingToPropose as NothingToPropose,
    PluginError as PluginError,
    RlabUserError as RlabUserError,
    RunFolderError as RunFolderError,
    SandboxUnavailableError as SandboxUnavailableError,
    UnknownNameError as UnknownNameError,
)
from rlab_core.events import (
    BestExported as BestExported,
    BranchClosed as BranchClosed,
    Event as Event,
    FinalScored as FinalScored,
    NodeAbandoned as NodeAbandoned,
    NodeFinished as NodeFinished,
    NodeStarted as NodeStarted,
    ParentExhausted as ParentExhausted,
    RunResumed as RunResumed,
    RunStarted as RunStarted,
    RunStopped as RunStopped,
    parse_event as parse_event,
)
from rlab_core.guard import (
    BASE_ENV_ALLOW as BASE_ENV_ALLOW,
    candidate_environment as candidate_environment,
    check_new_tokens as check_new_tokens,
    is_secret_name as is_secret_name,
)
from rlab_core.hookspecs import (
    AgentInfo as AgentInfo,
    BenchmarkInfo as BenchmarkInfo,
    EmptyConfig as EmptyConfig,
    ModeInfo as ModeInfo,
    SandboxInfo as SandboxInfo,
    StrategyInfo as StrategyInfo,
    hookimpl as hookimpl,
)
from rlab_core.interfaces import (
    Agent as Agent,
    Benchmark as Benchmark,
    PreparedTask as PreparedTask,
    Sandbox as Sandbox,
    Split as Split,
    Step as Step,
    StopRules as StopRules,
    Strategy as Strategy,
    StrategyState as StrategyState,
)
from rlab_core.knowledge.pages import load_pages as load_pages
from rlab_core.knowledge.records import (
    KnowledgePage as KnowledgePage,
    TaskFingerprint as TaskFingerprint,
)
from rlab_core.knowledge.retrieve import KnowledgeDigest as KnowledgeDigest
from rlab_core.outputs import (
    OutputsRefused as OutputsRefused,
    TakenOutputs as TakenOutputs,
    disk_usage_bytes as disk_usage_bytes,
    take_outputs as take_outputs,
)
from rlab_core.package_data import package_data_dir as package_data_dir
from rlab_core.playbook_rules import (
    applicable_moves as applicable_moves,
    fix_proposal as fix_proposal,
    lineage_of as lineage_of,
    move_proposal as move_proposal,
    moves_on_lineage as moves_on_lineage,
    order_by_knowledge as order_by_knowledge,
)
from rlab_core.records import (
    Edit as Edit,
    Execution as Execution,
    Failure as Failure,
    FailureStage as FailureStage,
    Gain as Gain,
    Node as Node,
    NodeKind as NodeKind,
    NodeStatus as NodeStatus,
    Proposal as Proposal,
    Record as Record,
    Score as Score,
    Timing as Timing,
    TuningTrial as TuningTrial,
    Usage as Usage,
)
from rlab_core.resampling import (
    Resampling as Resampling,
    WeightedAuroc as WeightedAuroc,
    draw_counts as draw_counts,
    fingerprint as fingerprint,
    indexed_statistic as indexed_statistic,
    paired_difference as paired_difference,
    replicate_scores as replicate_scores,
    row_weights as row_weights,
    rows_statistic as rows_statistic,
    standard_error as standard_error,
    unit_index as unit_index,
    weighted_mean as weighted_mean,
)
from rlab_core.task_records import (
    AuditPattern as AuditPattern,
    CandidateLimits as CandidateLimits,
    PlaybookMove as PlaybookMove,
    SandboxRequest as SandboxRequest,
    SeedCandidate as SeedCandidate,
    TaskListing as TaskListing,
)
from rlab_core.tree import Tree as Tree
from rlab_core.tuning.policy import (
    burst_size as burst_size,
    next_move_kind as next_move_kind,
    pending_burst as pending_burst,
)
from rlab_core.tuning.space import (
    TunableParam as TunableParam,
    TunableSpecError as TunableSpecError,
    declared_params as declared_params,
    format_value as format_value,
    seed_setting as seed_setting,
    setting_edits as setting_edits,
)
from rlab_core.tuning.study import (
    study_base as study_base,
    study_trials as study_trials,
    tuning_proposal as tuning_proposal,
)

def run_cli(args: list[str]) -> int: ...
