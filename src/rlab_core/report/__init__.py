"""Views of a run: terminal progress, the node table and tree, and the HTML dashboard."""
