"""rlab-agents: agents that propose hypotheses and edits for the rlab research loop."""
