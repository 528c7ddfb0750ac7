"""Evaluation of the lookup_knowledge core: datasets, metrics, runs, sweeps, comparisons and reports.

Import submodules explicitly (`from eval import metrics`): a bare `import eval` would shadow the builtin.
"""
