"""Tuning a candidate's declared parameters inside the loop (Optuna's TPE), as ordinary nodes.

:mod:`rlab_core.tuning.space` reads the declarations (``# tune:`` comments) and writes a
setting as edits; :mod:`rlab_core.tuning.study` rebuilds a study from the tree and proposes
the next trial; :mod:`rlab_core.tuning.policy` says when a playbook interleaves tuning.
"""
