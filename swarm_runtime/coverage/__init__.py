"""Route coverage (docs/coverage.md): the steps and edges of a flows dir, and which runs took."""
