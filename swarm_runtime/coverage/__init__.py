"""Route coverage (SPEC §10.7): the steps and edges of a flows dir, and which runs took."""
