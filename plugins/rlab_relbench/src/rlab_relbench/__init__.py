"""rlab-relbench: RelBench benchmarks for rlab."""
