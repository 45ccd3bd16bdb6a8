"""rlab-ray: the ``ray`` sandbox, candidates on a Ray cluster."""
