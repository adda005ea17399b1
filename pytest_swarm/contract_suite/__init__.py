"""The packaged contract suite: ``pytest --swarm-contract`` runs it against your flows."""
