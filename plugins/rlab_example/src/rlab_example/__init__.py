"""rlab-example: a complete, small benchmark plugin on real data (see docs/plugin-authors.md)."""
