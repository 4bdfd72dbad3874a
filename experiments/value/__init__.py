"""``python -m experiments.train_value``'s library: the value network's data, fit and run.

Modules: ``args`` (the flags and their checks), ``data`` (positions from games and their
rollout targets), ``fit`` (the fit and the held-out figures), ``run`` (the phases and the run
folder). The network itself, as the planner uses it, is ``agents.value``.
"""
