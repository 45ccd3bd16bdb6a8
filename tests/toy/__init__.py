"""A small toy benchmark and a scripted agent that drive the whole loop for real in tests."""
