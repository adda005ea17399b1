"""Runs across machines: Celery workers with a Redis broker run runs' tasks.

``pip install 'swarm-stepwise[celery]'``; Celery is imported only by the modules that need
it. The run dir on shared storage stays the single source of truth: a task carries only
the run's id, a ticket and the submitter's version, and a worker decides from the run dir
(its status, lease and queued marker) whether to run it, resume it, wait or do nothing.

See docs/run-control.md#runs-across-machines.
"""
