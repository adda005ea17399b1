"""Flows: the YAML graphs of agent steps, their loading and validation."""
