"""Ids: the shapes of flow keys, step ids, agent keys, engine names and run ids.

Every id that names a file or a directory of a run is checked against its pattern twice:
when a flow is loaded (docs/flows.md#loading-and-validation) and again when a path is built from it
(docs/contract/run-dir.md). A run id is ``run-YYYYMMDD-HHMMSS-xxxxxx``: UTC time and six random
characters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import datetime

STEP_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")
AGENT_KEY_RE = re.compile(r"^[a-z][a-z0-9-]*$")
FLOW_KEY_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
RUN_ID_RE = re.compile(r"^run-[0-9]{8}-[0-9]{6}-[a-z0-9]{6}$")
ENGINE_SHORT_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def new_run_id(moment: datetime, rand: Callable[[int], str] | None = None) -> str:
    """``run-YYYYMMDD-HHMMSS-xxxxxx`` from a UTC moment and six random characters."""
    # os.urandom rather than secrets: the secrets module costs more to import than a run
    # of a small flow takes. 256 % 36 != 0 gives a slight bias, harmless for an id.
    suffix = rand(6) if rand else "".join(_ALPHABET[b % 36] for b in os.urandom(6))
    return f"run-{moment.strftime('%Y%m%d-%H%M%S')}-{suffix}"
