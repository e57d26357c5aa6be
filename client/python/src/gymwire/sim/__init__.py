"""Embodied simulators served by gymwire's Python workers: robosuite with LIBERO's conventions,
Meta-World's MT1/ML1 tasks and LIBERO itself (docs/envs/robosuite.md, docs/envs/metaworld.md).

Each family needs its extra (``pip install "gymwire[robosuite]"``, ``"gymwire[metaworld]"``);
the server serves a family when its package is installed in the workers' Python (it checks
with ``importlib.util.find_spec`` at start-up, importing nothing). The env classes live in their own modules, imported on use:

>>> from gymwire.sim.robosuite_tasks import RobosuiteTask
>>> from gymwire.sim.metaworld_tasks import MetaWorldTask
"""
