"""The ``rlab`` command line: one module per command group."""
