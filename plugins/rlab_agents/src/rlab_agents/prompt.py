"""What an agent is told: problem, solution tree, what worked before, tuning so far, parent
source, budget, output contract.

The tree is rendered oldest first. When it outgrows the character budget, the oldest
nodes are compacted first — their diffs dropped, then their entries shortened to one line —
so the newest evidence always arrives whole. Tuning trials show in the tree without their
diffs: the "Tuning so far" section lists each trial's setting once.
"""

from __future__ import annotations

from typing import Any

from rlab_agents.reply import MAX_BURST
from rlab_core.api import (
    AgentContext,
    NodeSummary,
    RepairContext,
    TunableSpecError,
    declared_params,
    study_base,
)

OUTPUT_CONTRACT = """\
Reply with ONE JSON object and nothing else:
{"hypothesis": "<one sentence: what the change should do and why>",
 "rationale": "<optional, a few sentences>",
 "edits": [{"file": "<path relative to the candidate folder>",
            "anchor": "<exact text that occurs exactly once in that file>",
            "replacement": "<text that takes the anchor's place>"}]}
Rules: one focused hypothesis per reply; each anchor must be copied exactly from the current
file and occur there exactly once (include surrounding lines to make it unique); edits apply
in order, each to the result of the previous one; to create a file use an empty anchor;
only these files may change: {editable}. The framework scores validation itself from the
prediction files; never read test labels, never use the network, never start processes."""

SYSTEM = (
    "You are a careful ML research engineer improving a program step by step. Each step you "
    "propose exactly one hypothesis and the minimal code edit that tests it. You learn from "
    "every earlier result in the solution tree, including failures."
)


#: How a gain's verdict reads in the tree an agent sees.
VERDICT_WORDS = {
    "better": "better than its parent beyond the noise",
    "within noise": "within the noise of its parent",
    "worse": "worse than its parent beyond the noise",
}


def _score(node: NodeSummary, metric: str) -> str:
    if node.primary is None:
        return "no score"
    text = f"val {metric}={node.primary:.6g}"
    if node.standard_error is not None:
        text += f" ± {node.standard_error:.2g}"
    if node.parent_id is None:
        return text
    # the paired bootstrap's verdict where measured: a gain inside the noise is no finding
    if node.verdict in VERDICT_WORDS:
        return f"{text} ({VERDICT_WORDS[node.verdict]})"
    return text + (" (improved on its parent)" if node.improved_on_parent else "")


def render_node(node: NodeSummary, metric: str, *, with_diff: bool, short: bool = False) -> str:
    """One node of the tree as markdown."""
    origin = f"{node.kind} of {node.parent_id}" if node.parent_id else "seed"
    if node.repair_of:
        origin += f", repairing {node.repair_of}"
    head = f"- {node.id} ({origin}) {node.status}, {_score(node, metric)}: {node.hypothesis}"
    if short:
        return head[:240]
    lines = [head]
    if node.failure:
        lines.append(f"  failure: {node.failure[:600]}")
    if with_diff and node.diff and node.tuning is None:  # a trial's setting is in "Tuning so far"
        lines.append(
            "  ```diff\n" + "\n".join("  " + line for line in node.diff.splitlines()) + "\n  ```"
        )
    return "\n".join(lines)


def render_tree(context: AgentContext, budget_chars: int) -> str:
    """The whole tree, oldest first, compacted from the oldest end to fit ``budget_chars``."""
    nodes = context.tree
    metric = context.primary_metric
    levels = [2] * len(nodes)  # 2 = full with diff, 1 = without diff, 0 = one line

    def render() -> str:
        return "\n".join(
            render_node(n, metric, with_diff=level == 2, short=level == 0)
            for n, level in zip(nodes, levels, strict=True)
        )

    text = render()
    for target in (1, 0):
        index = 0
        while len(text) > budget_chars and index < len(nodes) - 1:  # the newest stays whole
            if levels[index] > target:
                levels[index] = target
                text = render()
            index += 1
    if len(text) > budget_chars:
        kept = text[-budget_chars:]
        text = "(older nodes omitted)\n" + kept[kept.find("\n") + 1 :]
    compacted = sum(level < 2 for level in levels)
    note = f"({compacted} oldest nodes compacted to fit the prompt budget)\n" if compacted else ""
    return note + text


def render_source(files: dict[str, str], budget_chars: int) -> str:
    """The parent's source files as fenced blocks (truncated past the budget)."""
    parts, used = [], 0
    for path, text in sorted(files.items()):
        block = f"### {path}\n```\n{text}\n```"
        if used + len(block) > budget_chars:
            parts.append(
                f"### {path}\n(omitted: the prompt budget is spent; {len(text)} characters)"
            )
            continue
        parts.append(block)
        used += len(block)
    return "\n\n".join(parts)


def render_knowledge(context: AgentContext) -> str:
    """The "What worked before" section from earlier runs (empty with ``--no-kg`` or nothing
    relevant); the core keeps it within its size budget and free of test-side numbers."""
    return context.knowledge.render() if context.knowledge is not None else ""


def render_progress(context: AgentContext) -> str:
    p = context.progress
    parts = [
        f"iterations {p.iterations_used}/{p.iterations_max or '∞'}",
        f"elapsed {p.elapsed_s:.0f}s",
    ]
    if p.time_budget_s:
        parts.append(f"of {p.time_budget_s:.0f}s")
    if p.max_tokens:
        parts.append(f"tokens {p.tokens_used}/{p.max_tokens}")
    if p.max_cost:
        parts.append(f"cost ${p.cost_used:.2f}/${p.max_cost:.2f}")
    return f"{', '.join(parts)}; phase: {p.phase} (explore early, refine late)"


#: Trials of the parent's study listed one by one (older ones are summed up).
MAX_TRIALS_SHOWN = 30

#: How a candidate declares a tunable parameter (rlab_core.tuning.space), for every agent.
DECLARE_NOTE = (
    "A parameter is declared on the line that sets it: `NAME = value  # tune: float LOW..HIGH "
    '[log]` (or `int LOW..HIGH [log]`, `choice A|B|C`; also `name=value,` and `"name": '
    "value,` inside a call or dict literal). A code change may add, drop or re-range "
    "declarations; keep the comment on a line you edit so the value stays tunable."
)

#: The offer of a tuning burst (LLM agents only: the reply form ``{"tune": N}``).
BURST_NOTE = (
    'Instead of a code change you may reply {"tune": N} (1 <= N <= MAX; optionally with a '
    '"rationale"): rlab then runs a tuning burst of N trials of Optuna\'s TPE sampler over '
    "the parameters declared above, each trial one node whose diff sets only their values, "
    "learning from the study's earlier trials; you are not called again until the burst is "
    "done. Tuning pays when the program's structure is sound and its values were never "
    "searched; a code change pays when the trials have flattened out."
).replace("MAX", str(MAX_BURST))


#: Added to the output contract where a burst is offered.
TUNE_CONTRACT = (
    'Or, instead of a code change, reply {"tune": N} to run a tuning burst of N trials '
    '(see "Tuning so far").'
)


def _value(value: Any) -> str:
    """A parameter's value as a Python literal, floats to 6 significant digits."""
    if not isinstance(value, float):
        return repr(value)
    text = f"{value:.6g}"
    return text if any(c in text for c in ".en") else text + ".0"  # 'n': nan, inf


def _direction_key(context: AgentContext):
    sign = -1.0 if context.higher_is_better else 1.0
    return lambda node: sign * node.primary


def render_trial(node: NodeSummary, metric: str) -> str:
    """One tuning trial on one line: its setting, then its score or what became of it."""
    trial = node.tuning
    assert trial is not None
    burst = f", burst of {trial.burst}" if trial.burst else ""
    setting = ", ".join(f"{name}={_value(value)}" for name, value in trial.params.items())
    rerun = f", {node.move_id}" if node.move_id not in (None, "tune") else ""  # promote, ...
    head = f"- trial {trial.number} ({node.id}{rerun}{burst}): {setting} -> "
    if node.primary is None:
        failure = f": {node.failure[:160]}" if node.failure else ""
        return head + node.status + failure
    outcome = f"val {metric}={node.primary:.6g}"
    if node.standard_error is not None:
        outcome += f" ± {node.standard_error:.2g}"
    outcome += f" ({node.fidelity})"
    if node.verdict in VERDICT_WORDS:
        outcome += f", {VERDICT_WORDS[node.verdict]}"
    if node.accepted:
        outcome += ", accepted as its lineage's best"
    return head + outcome


def render_tuning(context: AgentContext, *, offer_burst: bool = False) -> str:
    """The "Tuning so far" section: the parent's declared parameters (ranges, values now) and
    the trials of its study, other studies in one line each; empty when the parent declares
    nothing and no trial exists. ``offer_burst``: explain the ``{"tune": N}`` reply."""
    try:
        params, problem = declared_params(context.parent_source), ""
    except TunableSpecError as exc:
        params, problem = [], str(exc)
    trials = sorted(
        (n for n in context.tree if n.tuning is not None),
        key=lambda n: (n.tuning.base, n.tuning.number),  # type: ignore[union-attr]
    )
    if not params and not trials and not problem:
        return ""
    parent, metric = context.parent.id, context.primary_metric
    lines = ["# Tuning so far"]
    if params:
        lines.append(f"The parent {parent} declares {len(params)} tunable parameter(s):")
        lines += [f"- {p.name} ({p.file}): {p.describe()}, now {_value(p.current)}" for p in params]
    elif problem:
        lines.append(f"The parent's `# tune:` declarations cannot be read: {problem}")
    else:
        lines.append(f"The parent {parent} declares no tunable parameters.")
    base = study_base(context)
    studies: dict[str, list[NodeSummary]] = {}
    for node in trials:
        studies.setdefault(node.tuning.base, []).append(node)  # type: ignore[union-attr]
    own = studies.pop(base, [])
    if own:
        lines.append(f"Trials tuning {base}'s parameters ({len(own)} so far, oldest first):")
        shown = own[-MAX_TRIALS_SHOWN:]
        if len(own) > len(shown):
            lines.append(f"({len(own) - len(shown)} earlier trials omitted)")
        lines += [render_trial(n, metric) for n in shown]
    elif params:
        lines.append(f"No trial has tuned {base}'s parameters yet.")
    key = _direction_key(context)
    if studies:
        lines.append("Other studies in the tree:")
    for other, nodes in studies.items():
        scored = [n for n in nodes if n.primary is not None and n.fidelity == "full"]
        best = min(scored, key=key) if scored else None
        text = f"- study of {other}: {len(nodes)} trial(s)"
        if best is not None:
            setting = ", ".join(f"{k}={_value(v)}" for k, v in best.tuning.params.items())  # type: ignore[union-attr]
            text += f", best {best.id} val {metric}={best.primary:.6g} ({setting})"
        lines.append(text)
    lines.append(DECLARE_NOTE)
    if offer_burst and params:
        lines.append(BURST_NOTE)
    return "\n".join(lines)


def build_prompt(
    context: AgentContext, *, tree_budget: int = 40_000, source_budget: int = 60_000
) -> str:
    """The user message for a new hypothesis on ``context.parent``."""
    direction = "higher" if context.higher_is_better else "lower"
    parent = context.parent
    tuning = render_tuning(context, offer_burst=True)
    contract = OUTPUT_CONTRACT.replace("{editable}", ", ".join(context.editable_files))
    if BURST_NOTE in tuning:
        contract += f"\n{TUNE_CONTRACT}"
    sections = [
        f"# Task {context.task}\n\n{context.problem}",
        f"Primary metric: {context.primary_metric} ({direction} is better).",
        f"# Solution tree so far (oldest first)\n{render_tree(context, tree_budget)}",
        render_knowledge(context).replace("## What worked before", "# What worked before", 1),
        f"# Budget\n{render_progress(context)}",
        tuning,
        f"# Parent {parent.id}: {parent.hypothesis} ({_score(parent, context.primary_metric)})\n"
        + render_source(context.parent_source, source_budget),
        _step_text(context),
        contract,
    ]
    return "\n\n".join(section for section in sections if section)


def _step_text(context: AgentContext) -> str:
    if context.step == "draft":
        return (
            "# Your step (draft)\nPropose a new approach starting from this seed, clearly "
            "different from the drafts the tree already shows, as one hypothesis and its edits."
        )
    return (
        "# Your step (improve)\nPropose the single most promising next hypothesis for this "
        "parent, different from what the tree shows was already tried on its lineage."
    )


def build_repair_prompt(
    context: RepairContext, *, tree_budget: int = 20_000, source_budget: int = 60_000
) -> str:
    """The user message asking to repair the failed node ``context.parent``."""
    return "\n\n".join(
        [
            f"# Task {context.task}\n\n{context.problem}",
            f"# Solution tree so far (oldest first)\n{render_tree(context, tree_budget)}",
            f"# Failed node {context.parent.id} (repair attempt {context.attempt})\n"
            f"Original hypothesis: {context.original_hypothesis}\nError: {context.error}\n"
            f"Log tail:\n```\n{context.log_tail[-3000:]}\n```",
            "# Its current source\n" + render_source(context.parent_source, source_budget),
            "# Your step\nFix the error with the smallest edit that keeps the original hypothesis.",
            OUTPUT_CONTRACT.replace("{editable}", ", ".join(context.editable_files)),
        ]
    )


#: The instruction file a CLI coding agent finds in its scratch copy of the parent.
TASK_FILE = "RLAB_TASK.md"
#: The file in which a CLI coding agent states its hypothesis.
HYPOTHESIS_FILE = "HYPOTHESIS.md"


#: Told to a coding tool that has rlab's MCP server (``rlab mcp``) among its tools.
MCP_NOTE = (
    "The `rlab` MCP tools are available: `search_knowledge` (lessons of earlier runs and "
    "curated notes, by text), `task_lessons` (every lesson of one task) and `run_history` "
    "(this run's nodes, hypotheses, validation scores and verdicts). Query them when the "
    "summary above is not enough."
)


def build_instructions(
    context: AgentContext, *, tree_budget: int = 30_000, tools: bool = False
) -> str:
    """Markdown instructions for an external coding agent working in a copy of the parent.

    ``tools``: the tool has rlab's MCP server, and is told so after "What worked before".
    """
    direction = "higher" if context.higher_is_better else "lower"
    editable = ", ".join(context.editable_files)
    if isinstance(context, RepairContext):
        step = (
            f"\n## Repair\nThis program failed. Original hypothesis: {context.original_hypothesis}\n"
            f"Error: {context.error}\n```\n{context.log_tail[-3000:]}\n```\n"
            "\n## What to do\nFix the error with the smallest change to the program in this "
            "folder that keeps the original hypothesis"
        )
    else:
        step = (
            "\n## What to do\nThe program in this folder is the parent. Make ONE focused change "
            "that tests one hypothesis, different from what the tree shows was already tried"
        )
    knowledge = "".join(
        f"{part}\n\n" for part in (render_knowledge(context), MCP_NOTE if tools else "") if part
    )
    # the declared parameters and the trials so far (a coding tool edits code; no bursts)
    tuning = "" if isinstance(context, RepairContext) else render_tuning(context)
    tuning = f"{tuning.replace('# Tuning so far', '## Tuning so far', 1)}\n\n" if tuning else ""
    return (
        f"# Task {context.task}\n\n{context.problem}\n\nPrimary metric: {context.primary_metric} "
        f"({direction} is better).\n\n## Solution tree so far\n{render_tree(context, tree_budget)}\n\n"
        f"{knowledge}{tuning}## Budget\n{render_progress(context)}\n{step}, editing only files that match: "
        f"{editable}. A change to any other file, or outside this folder, is refused and the "
        f"attempt fails; deleted files are kept. Then write the hypothesis to a file named "
        f"{HYPOTHESIS_FILE} in this folder: its first line is one sentence saying what the "
        "change should do and why; further lines may give the rationale. Do not run the "
        f"program, do not use the network, do not read test labels, do not edit {TASK_FILE}.\n"
    )
