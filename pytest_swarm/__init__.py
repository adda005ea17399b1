"""pytest-swarm: the pytest plugin of swarm-stepwise.

Fixtures (``flow_runner``, ``stub_scenario``, ``swarm_contract`` …) come with the plugin;
the assertions are plain functions in :mod:`pytest_swarm.assertions`, and
:func:`swarm_expect` checks what steps said.
"""

from __future__ import annotations

from pytest_swarm.expect import swarm_expect
from pytest_swarm.run_record import RunRecord

__all__ = ["RunRecord", "swarm_expect"]
