"""The orchestrator: the run loop and its rooms (plan, control, recorder, step, routing)."""
