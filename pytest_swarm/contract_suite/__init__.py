"""The packaged contract suite: ``pytest --swarm-contract`` runs it against your flows."""

__all__: list[str] = []
