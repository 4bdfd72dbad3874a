"""Train a PPO agent on Spit with RLlib (new API stack), on a local Ray or a Ray cluster.

    python -m experiments.train_rllib                                  # vs greedy, local Ray
    python -m experiments.train_rllib --smoke              # the whole pipeline at toy size
    python -m experiments.train_rllib --mode self-play --iterations 100
    python -m experiments.train_rllib --num-env-runners 8 --address auto    # a running cluster
    python -m experiments.train_rllib --help

The trained module (``agents.rllib_modules.MaskedPPOModule``, RLlib's action-masking pattern)
masks illegal moves in every forward pass, so it never samples one and their log-probabilities
never enter the loss. ``--mode`` chooses the environment:

* ``bot`` (default): the learner against ``--opponent`` (a registered bot) in ``Spit-v0``'s native
  vector env, single-agent: each env runner builds ``gymnasium.make_vec("Spit-v0",
  num_envs=--num-envs-per-runner, vectorization_mode="vector_entry_point")``, one batched core of
  that many games with the bot deciding inside it (``spit_env.envs.vector``); one env step is one
  learner decision, the learner's seat is drawn per game, and the module reads the legal mask
  from the observation. ``--no-vector-env`` runs it on the PettingZoo path instead: the agents
  ``learner`` and ``bot`` of ``agents.rllib_modules.SpitMultiAgentEnv`` (the learner's seat drawn
  per game), the bot an RLlib module it does not train (``agents.rllib_modules.BotModule``).
* ``self-play``: the PettingZoo ``ParallelEnv`` (``spit_env.parallel_env``) through RLlib's own
  adapter, ``ParallelPettingZooEnv``: both seats are agents, act at every decision epoch (one env
  step) and map to one module ``learner``, trained on both seats' moves.

``--address``: none starts a local Ray in this process, on 127.0.0.1 only, and stops it at the
end; ``auto`` joins the cluster started with ``ray start`` on this machine; ``HOST:PORT`` a head
node. A wrong or closed address fails within ``--connect-timeout`` seconds with nothing left
running. Each env runner is a Ray actor of one CPU stepping ``--num-envs-per-runner`` games (by
default 64 in one vector env with ``--mode bot``, 8 env objects otherwise); the learner runs in
this process.

The run folder (``--out``) receives ``checkpoint/`` (the final algorithm checkpoint: the trained
module is ``checkpoint/learner_group/learner/rl_module/<id>``, ``default_policy`` for a bot run on
the vector env, ``learner`` otherwise), ``checkpoints/iter_NNNN/`` every
``--checkpoint-every`` iterations, and ``metrics.json`` (the arguments, one record per iteration,
the speed and the final evaluation), rewritten after every iteration. The trained policy plays
anywhere a bot does: ``agents.make("rllib", path="<out>/checkpoint")``, or the folder's path in
``python -m experiments.tournament --players <out>/checkpoint,greedy``. The final evaluation plays
it against each ``--eval-opponents`` bot on ``--eval-games`` duplicate deals (the match library's
pairings, ``agents.arena``, as Ray tasks), with 95% Wilson intervals. The whole algorithm restores
to train on with ``agents.rllib.restore_algorithm("<out>/checkpoint")``.

The run, phase by phase, and its pieces: ``experiments/rllib/`` (``run.py``).

Needs the ``scale`` extra (``pip install -c constraints.txt -e ".[scale]"``).
"""

from __future__ import annotations

import sys

from experiments.cli.checks import ArgumentError
from experiments.rllib.args import SMOKE, Args, rllib_bots
from experiments.rllib.run import train

__all__ = ["main"]

_DESCRIPTION = (__doc__.split("\n\n")[0] + "\n\n" + "--smoke runs the whole pipeline at toy "
                "size (a local Ray, two iterations, the evaluation; any flag given keeps its "
                "value), to try the script or a change before a real run.")


def main(argv=None) -> int:
    """Command-line entry point: parse with tyro, check every flag, train, print the evaluation."""
    from agents.rllib import RayMissingError
    from experiments.cli import help_values, tyro_cli
    from experiments.cluster.connect import RayConnectError

    args = tyro_cli(Args, argv, prog="python -m experiments.train_rllib",
                    description=_DESCRIPTION, presets={"smoke": SMOKE},
                    fill=help_values(rllib_bots=", ".join(rllib_bots())))
    try:
        train(args)
    except (ArgumentError, RayMissingError) as err:
        print(f"python -m experiments.train_rllib: error: {err}", file=sys.stderr)
        return 2
    except RayConnectError as err:
        print(f"python -m experiments.train_rllib: error: --address: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
