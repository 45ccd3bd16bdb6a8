"""The core's own strategies, sandbox and modes, registered through the same hooks as any plugin."""
