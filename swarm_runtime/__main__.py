"""``python -m swarm_runtime`` is the ``swarm`` command."""

from __future__ import annotations

import sys

from swarm_runtime.cli import main

sys.exit(main())
