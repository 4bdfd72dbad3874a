"""Expert iteration on the batched core (``python -m experiments.expert_iteration``).

A search improves on the network's moves, the network learns the search's choices, and the
improved network guides the next search. The pieces, one module each:

* ``args``: the command line and its checks;
* ``positions``: the learner's own games and their labelled positions (:class:`Positions`);
* ``teachers``: who labels them (a bot in round 0, the planner afterwards);
* ``targets``: soft policy targets from the planner's values;
* ``network``: the network (the package's model format), its fit and its scores;
* ``rounds``: the rounds, the run folder and ``--resume``.
"""

from experiments.expert.positions import Positions
from experiments.expert.rounds import run

__all__ = ["Positions", "run"]
