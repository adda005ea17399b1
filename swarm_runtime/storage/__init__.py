"""Run directories on disk: layout, atomic writes, the event log."""
