"""Flow Studio (docs/studio.md): a local web viewer of runs, updated live.

The parts that need no web framework (reading runs safely, the run index, graphs, the
event tail, the buttons' actions) are importable without the ``studio`` extra;
:mod:`swarm_runtime.studio.app` and :mod:`swarm_runtime.studio.server` need Starlette and
uvicorn (``pip install 'swarm-stepwise[studio]'``).
"""
