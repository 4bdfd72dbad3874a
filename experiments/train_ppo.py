"""Train a MaskablePPO agent on Spit against bots, a curriculum, or a pool of its own snapshots.

    python -m experiments.train_ppo                      # the default run: 1M decisions vs greedy
    python -m experiments.train_ppo --smoke              # the whole pipeline at toy size, < 1 min
    python -m experiments.train_ppo --opponent "random:0.3,greedy:0.7" --out runs/mix
    python -m experiments.train_ppo --opponent "random->greedy" --curriculum-threshold 0.9
    python -m experiments.train_ppo --self-play --opponent greedy
    python -m experiments.train_ppo --resume runs/ppo_greedy/model.zip --total-timesteps 500000
    python -m experiments.train_ppo --init-model runs/distilled/model.zip --pull-coef 0.5
    python -m experiments.train_ppo --help

The script is the command line (:func:`main`: parse, check, run); the run lives in
``experiments/ppo/``: ``args`` (:class:`Args`, one documented field per flag, shared with
``experiments.sb3_ceiling``), ``checks`` (their checks, ``validate``), ``run`` (``train``, the
run phase by phase: set-up and resume, environment, model, warm start, learning with its
schedule, final evaluation and the run folder), ``hyperparameters`` (PPO's defaults), ``envs``
(the VecEnv stack), ``schedule`` (curriculum, self-play pool, evaluations during training),
``evaluation`` (evaluation, plot, table), ``warm_start`` (the actor's and the critic's warm
start), ``pull`` (the KL pull in PPO's loss) and ``progress``; the model's input contract is
``agents.network.model_input``.

The learner plays many games at once in one process (``SpitVecEnv``: one VecEnv step = one learner
decision, the batched core running the opponent in between). ``--opponent`` is

* a policy name or profile: ``greedy``, ``greedy@pro`` (the opponent's seat plays with the
  pro latency preset, D7);
* a weighted mix: ``random:0.3,greedy:0.7`` -- the game rows are split into ``--mix-groups``
  near-equal groups, shared out among the members by weight; each group keeps its member (with
  ``--league-weighting losses`` the shares follow the agent's losses instead, re-weighted at
  every evaluation during training); all groups are rows of one SpitVecEnv, stepped at once;
* a curriculum: stages joined by ``->`` (``random->greedy``), each stage a name, profile or mix;
  stages switch at equal fractions of the steps (``--curriculum-switch`` sets them) or, with
  ``--curriculum-threshold``, as soon as the evaluation win rate against the current stage passes
  the threshold.

With ``--self-play`` a frozen copy of the agent joins a pool every ``--self-play-every`` steps; the
pool (the newest ``--self-play-pool`` snapshots) takes ``1 - --self-play-bot-weight`` of the row
groups and the ``--opponent`` bots the rest. Snapshots play in batch through
``agents.network.NetworkPolicy`` (sampling, not argmax, for variety), at the config's default
latency.

The run folder (``--out``) receives config.json, model.zip, eval.json (evaluation history, the
final table with 95% Wilson intervals, and the speed figures; also written to ``--json`` if
given), learning_curve.png, TensorBoard logs (tb/, with ``--tensorboard``), checkpoints
(checkpoints/, made with the first one: every ``--checkpoint-freq`` steps but in the last
rollout, so the default run has none) and, with ``--keep-best``, last_model.zip. Evaluation
plays fixed duplicate deals (each deal twice, seats swapped) against each ``--eval-opponents``
bot with the match library (``agents.arena``), at the latency of ``--eval-latency`` for both seats,
all the bots' games in one batch. The evaluations during training play other deals
(``--eval-during-seed``), the first one with the bots' levels in its batch; with ``--keep-best``
the model that scores best on them is kept instead of the last one. Progress shows as SB3's bar on
a terminal and as plain lines otherwise (``experiments.ppo.progress``).

Learning at the default settings rests on these choices (measured; see each field's help):

* ``--bc-steps``: a behaviour-cloning warm start. The ``--bc-teacher`` bot (racer) plays the
  learner's seat for ``--bc-samples`` decisions, and the actor is fitted to its moves with
  masked cross-entropy before PPO starts, so PPO starts near the bot's strength instead of
  random's. Every teacher move is recorded (the count is printed and kept in config.json): a
  move the model's mask forbids is an error, not a sample left out.
* ``--no-mask-wait`` (the default): the learner may WAIT while it has another legal move, as
  racer does on purpose in about 16% of its decisions with a choice, so the clone can make every
  move it imitates (docs/results/ppo_start.md); ``--mask-wait`` (WAIT only when nothing else
  is legal) is refused with a behaviour-cloning warm start.
* ``--critic-steps``: the value network is fitted before PPO's first update too, to PPO's own
  TD(lambda) targets on the warm start's games, so the first advantages are not noise (the
  explained variance of every update is in eval.json's "updates").
* ``--pull-coef`` (0 = off): a KL term toward the policy PPO starts from (or ``--pull-model``)
  in PPO's loss (``experiments.ppo.pull``); off by default, as the stronger of the two against
  racer at 300,000 steps (docs/results/ppo_start.md).
* forced WAITs are skipped (``--skip-forced-waits``): about 60% of a player's decisions have
  WAIT as the only legal move; up to two of them per step are played for the learner.
* ``--obs-mask`` (on): the network's input is the observation followed by the learner's legal
  mask (D + 23 floats), so it need not infer legality from the one-hot ranks.
* ``--racer-features`` (on): then the racer bot's reading of each legal play (40 floats,
  ``agents.network.racer_features``), so it starts from the heuristic's analysis: the warm start
  fits racer to 0.948 instead of 0.917, and the agent beats greedy 0.553 [0.532, 0.575] instead of
  0.506 [0.484, 0.528] (racer 0.487 instead of 0.460; 1,000 duplicate deals each).

``--init-model PATH`` starts from another model file's weights (a distilled network, a previous
run's model.zip) whose input matches the flags, with a fresh step count.

Speed: the script times every call into the environment (steps, resets, action masks) and
reports environment steps per second and the environment's share of the training wall time
(evaluation excluded) at the end and in eval.json.
"""


from __future__ import annotations

import sys

from experiments.cli.checks import ArgumentError
from experiments.ppo.args import SMOKE, Args
from experiments.ppo.checks import parse_opponent, validate

# Args, ArgumentError, parse_opponent, validate and train are importable from here as before;
# their homes are experiments.ppo.args, experiments.cli.checks, experiments.ppo.checks and
# experiments.ppo.run.
__all__ = ["Args", "ArgumentError", "main", "parse_opponent", "train", "validate"]

#: The program name of the usage line and of every error ("{PROG}: error: ...").
PROG = "python -m experiments.train_ppo"


_DESCRIPTION = (__doc__.split("\n\n")[0] + "\n\n" + "--smoke runs the whole pipeline at toy "
                "size in under a minute (any flag given keeps its value), to try the script or a "
                "change before a real run.")


def train(args: Args) -> dict:
    """Check, train, evaluate and write the run folder (``experiments.ppo.run.train``)."""
    from experiments.ppo.run import train as checked_run

    return checked_run(args)


def main(argv=None) -> int:
    """Command-line entry point: parse with tyro, check, train, print the evaluation table."""
    from experiments.cli import help_values, tyro_cli

    args = tyro_cli(Args, argv, prog=PROG,
                    description=_DESCRIPTION, fill=help_values(), presets={"smoke": SMOKE})
    try:
        stages = validate(args)
    except ArgumentError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    from experiments.ppo.run import run  # torch and SB3: not needed for --help or a bad flag

    run(args, stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
