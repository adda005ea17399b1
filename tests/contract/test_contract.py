"""The project's contract suite: the packaged suite, run over the shipped flows.

CI runs it in stub mode and in replay mode, unchanged.
"""

from __future__ import annotations

from pytest_swarm.contract_suite.test_contract import *  # noqa: F403
from pytest_swarm.contract_suite.test_contract import pytest_generate_tests  # noqa: F401
