"""Views of a run: terminal progress lines and node tables (the HTML dashboard comes later)."""
