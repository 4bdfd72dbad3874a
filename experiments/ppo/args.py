"""The arguments of ``experiments.train_ppo`` (:class:`Args`, one documented field per flag).

``python -m experiments.train_ppo --help`` shows them (``experiments.cli.tyro_cli``: each field's
docstring as its help, ``{players}`` and the other placeholders filled from the registry);
``experiments.sb3_ceiling`` trains the same model at the same defaults. The PPO hyperparameters'
defaults are :data:`experiments.ppo.hyperparameters.PPO_DEFAULTS`. Their checks:
``experiments.ppo.checks``; what a run derives from them: :func:`cloning`, :func:`default_out`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from experiments.ppo.hyperparameters import PPO_DEFAULTS

__all__ = ["Args", "SMOKE", "cloning", "default_out"]


@dataclass
class Args:
    """Train MaskablePPO on Spit (spit-env) and evaluate it against the bots."""

    smoke: bool = False
    """A quick run of the whole pipeline at toy size (warm start, learning with evaluations and
    a checkpoint, final evaluation, run folder in runs/ppo_<opponent>_s<seed>_smoke), in under a
    minute: the values of SMOKE in experiments/ppo/args.py for every flag not given on the
    command line (a flag given keeps its value). Its figures mean nothing."""
    total_timesteps: int = 1_000_000
    """Learner decisions (VecEnv steps summed over games) to train for in this run, rounded up to
    whole rollouts of num_envs * n_steps; with --resume they are added to the checkpoint's count."""
    opponent: str = "greedy"
    """Opponent: a policy name ({players}), a profile ("greedy@pro"), a weighted mix
    ("random:0.3,greedy:0.7") or a curriculum of those joined by "->" ("random->greedy")."""
    seed: int = 0
    """Seed of the training games, the network initialisation and the sampling."""
    out: Path | None = None
    """Run folder for config.json, model.zip, eval.json, learning_curve.png, tb/ (with
    --tensorboard), checkpoints/ (made with the first checkpoint: one every --checkpoint-freq
    steps but in the last rollout, so none in the default run) and, with --keep-best,
    last_model.zip; None means runs/ppo_<opponent>_s<seed> (with --smoke ..._smoke)."""
    num_envs: int = 512
    """Games played at once (the VecEnv's num_envs)."""
    n_steps: int = PPO_DEFAULTS.n_steps
    """Steps per game per rollout; a rollout holds num_envs * n_steps decisions."""
    batch_size: int = PPO_DEFAULTS.batch_size
    """Minibatch size of the PPO update (at most num_envs * n_steps)."""
    n_epochs: int = PPO_DEFAULTS.n_epochs
    """Passes over each rollout in the PPO update."""
    learning_rate: float = PPO_DEFAULTS.learning_rate
    """Adam learning rate (constant)."""
    ent_coef: float = PPO_DEFAULTS.ent_coef
    """Entropy bonus coefficient."""
    gamma: float = PPO_DEFAULTS.gamma
    """Discount factor per learner decision."""
    gae_lambda: float = PPO_DEFAULTS.gae_lambda
    """GAE lambda."""
    clip_range: float = PPO_DEFAULTS.clip_range
    """PPO clipping range."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value MLPs (separate networks, tanh)."""
    reward: Literal["game", "round"] = "round"
    """Reward: "game" = +1/-1 at the end of the game; "round" = +1/-1 for each round's outcome."""
    episode: Literal["game", "round"] = "game"
    """Episode: a whole game, or one round from a fresh deal."""
    shaping: float = 0.0
    """Extra reward per card shed (played from one's stocks) minus the opponent's; 0 = off."""
    truncation_reward: float = 0.0
    """Learner's reward when a game is truncated (D16: 30 min of game time or 100 rounds), which
    the environment scores as a draw (0, the default). With the D17 stall timeout nobody can
    stall a game, and at the defaults no training game is truncated; -1 would score a
    truncation as a loss."""
    learner_seat: Literal["random", "0", "1"] = "random"
    """Seat of the learner: drawn per game ("random") or fixed."""
    curriculum_switch: tuple[float, ...] = ()
    """Fractions of --total-timesteps at which a "->" curriculum moves to its next stage
    (one per "->"; default: equal parts)."""
    curriculum_threshold: float | None = None
    """If set, a curriculum moves on as soon as the evaluation win rate against the current
    stage reaches this value (in (0, 1]) instead of at fixed fractions."""
    league_weighting: Literal["fixed", "losses"] = "fixed"
    """How the members of a mix (--opponent a:w,b:w) share the row groups: "fixed" by the
    given weights; "losses" by the agent's losses, re-weighted after every evaluation during
    training (--eval-freq), which then also plays the members: weight (1 - win rate)^2 + 0.01
    (prioritized fictitious self-play, AlphaStar's f_hard), so the agent trains most against
    the opponents it loses to."""
    self_play: bool = False
    """Add frozen snapshots of the agent to the opponents (a pool: the three --self-play- flags
    below)."""
    self_play_every: int = 200_000
    """Steps between two snapshots joining the self-play pool."""
    self_play_pool: int = 5
    """Snapshots kept in the self-play pool (the newest)."""
    self_play_bot_weight: float = 0.5
    """Share of the game rows that keep playing the --opponent bots once the pool is not empty."""
    mask_wait: bool = False
    """Take WAIT out of the learner's legal moves whenever it has another one, so it never idles
    when it can act (like the greedy bot). Off by default: the warm start's teacher (racer)
    WAITs on purpose in about 16% of its decisions that have a choice, and the model must be able
    to make every move it imitates, so --mask-wait with a behaviour-cloning warm start
    (--bc-steps > 0) is refused. Saved with the model (the mask in its input is the one after
    this rule): agents.make("network") applies the same rule when it plays; with --resume the
    checkpoint's rule stays, and --init-model's file must have this one."""
    obs_mask: bool = True
    """Append the learner's legal-move mask (23 floats, after --mask-wait) to the observation,
    so the network sees legality directly instead of inferring it from the one-hot ranks
    (observation length D + 23). Saved with the model: agents.network's player appends it too."""
    racer_features: bool = True
    """Append the racer bot's reading of each legal play to the network's input, after the mask
    (40 floats: its follow and denial counts, score and doom per play, 0 for forbidden plays;
    agents.network.racer_features), so the network starts from the heuristic's analysis instead of
    learning it from the one-hot ranks (input length D + 23 + 40 with --obs-mask). Saved with
    the model, like --obs-mask."""
    obs_leave_out: tuple[str, ...] = ()
    """Observation fields the network does not read (names of spit_env.rules.OBSERVATION), to
    measure what a field adds, e.g. unseen_rank, self_idle, opp_idle, centre_rank_count (what a
    strong player tracks). Saved with the model (its obs_fields): agents.make("network") reads the
    same fields. With --resume the checkpoint's fields stay."""
    bc_steps: int = 1500
    """Behaviour-cloning warm start: gradient steps of masked cross-entropy that fit the actor
    to --bc-teacher's moves before PPO starts (0 = off; not done with --resume or --init-model,
    whose actor is the file's). ~1 min at the default sizes."""
    critic_steps: int = 0
    """Critic warm start: gradient steps that fit the value network before PPO starts, so that
    the first update's advantages are not noise (0 = off, the default: at the default budget a
    run with 1,000 steps scored no better and took 4 more minutes, docs/results/ppo_start.md;
    not done with --resume). The targets
    are PPO's own, TD(lambda) returns (--gamma, --gae-lambda) of the learner's rewards in the
    warm start's games, recomputed on the critic's values 10 times over the fit; the games are
    --bc-teacher's (the same --bc-samples decisions as the actor's fit) or, with --init-model,
    the model's own (sampling). A tenth of the game rows is held out: the critic kept is the one
    with the best explained variance there. Uses --bc-batch-size and --bc-learning-rate."""
    bc_teacher: str = "racer"
    """The policy (name or profile: {players}) whose moves the warm start imitates."""
    bc_samples: int = 300_000
    """(observation, mask, teacher move) pairs collected for the warm start, played by the
    teacher in the learner's seat against the first --opponent stage."""
    bc_batch_size: int = 1024
    """Minibatch size of the warm start."""
    bc_learning_rate: float = 1e-3
    """Adam learning rate of the warm start."""
    skip_forced_waits: bool = True
    """Play up to 2 WAITs per step for the learner when WAIT is its only legal move
    (SpitVecEnv's skip_forced_waits): the same game in ~40% fewer steps."""
    mix_groups: int = 10
    """Row groups of a mix, a curriculum or self-play: the rows are split into this many near-equal
    groups (all in one SpitVecEnv, each with its own opponent), shared out among the opponents by
    weight."""
    eval_games: int = 1000
    """Duplicate deals of the final evaluation against each bot (each deal played twice, seats
    swapped)."""
    eval_freq: int = 500_000
    """Steps between evaluations during training, the first at step 0 (after the warm start,
    before any update), the learning curve's points (0 = only the final evaluation). Each plays
    all its opponents in one batch, before the first rollout past its step, on the model
    trained so far."""
    eval_games_during: int = 100
    """Duplicate deals per bot of the evaluations during training (held-out deals, of
    --eval-during-seed)."""
    eval_levels: bool = True
    """With evaluations during training: also play the warm start's teacher (or, without a warm
    start, the strongest --eval-opponents bot) against the other --eval-opponents on the same
    held-out deals, in the batch of the first evaluation, so the learning curve shows the bots'
    levels as reference lines."""
    eval_opponents: tuple[str, ...] = ("random", "greedy", "strongest")
    """Bots (names or profiles: {players}) the evaluation plays; "strongest" = the strongest
    heuristic bot ({strongest})."""
    eval_latency: str = "club"
    """Latency of both seats in the evaluation (a preset name or whole ms)."""
    eval_max_game_ms: int = 1_800_000
    """Simulated time after which an evaluation game is truncated and counts as a draw (D16; the
    default is SpitConfig's 30 min). Lower it only for smoke tests: an untrained argmax policy
    may WAIT for ever, and such games then run to this limit."""
    eval_seed: int = 2024
    """Seed of the fixed deals of the final evaluation (the same for every run, so runs
    compare)."""
    eval_during_seed: int = 2025
    """Seed of the deals of the evaluations during training: held out from the final
    evaluation's, so that choosing a checkpoint on them (--keep-best) does not flatter the final
    figures."""
    keep_best: bool = False
    """Keep the best model rather than the last: every evaluation during training (and one after
    the last step) scores the model by its mean win rate over --eval-opponents on the held-out
    deals, the best so far is saved as best_model.zip, and at the end it becomes model.zip (the
    last one is kept as last_model.zip) and is the one the final evaluation plays."""
    checkpoint_freq: int = 1_000_000
    """Steps between checkpoints in <out>/checkpoints (0 = none); none is taken in the last
    rollout (model.zip holds that model), so the default run (1,000,000 steps) takes none and
    makes no checkpoints/."""
    resume: Path | None = None
    """Continue training from this checkpoint (a model .zip): the step count goes on from it.
    The network's input options (--obs-mask, --racer-features) are the checkpoint's: a differing
    flag is ignored, with a note."""
    init_model: Path | None = None
    """Start PPO from the weights of this model file (a MaskablePPO .zip of the package's
    format: a previous run's model.zip, a distilled network...) instead of a fresh network,
    with a new step count and the flags' hyperparameters. Its input must be the flags' (--obs-mask,
    --racer-features, --mask-wait, --obs-leave-out, --net-arch): a clear error otherwise. The
    actor is not cloned (--bc-steps is not used); the critic is fitted first with
    --critic-steps > 0."""
    pull_coef: float = 0.0
    """Pull toward a fixed policy during PPO: pull_coef * KL(anchor || policy) over the legal
    moves is added to PPO's loss (experiments.ppo.pull; 0 = off, plain MaskablePPO). The anchor
    is --pull-model, or the policy PPO starts from (after the warm start, or --init-model's)."""
    pull_model: Path | None = None
    """The model file the pull (--pull-coef) holds the policy near; None = the policy PPO starts
    from. Its input must be the trained model's (a clear error otherwise)."""
    torch_threads: int = 1
    """torch.set_num_threads for training and inference. 1 by default: more torch worker
    threads than free cores contend with the environment and slow training down sharply on a
    small machine (measured on a 2-core machine: about 20x slower with 2 threads while another
    process was running)."""
    progress_bar: bool = True
    """Show the progress of every long step (warm start, training, each evaluation): a bar when
    stderr is a terminal, otherwise (a log file, CI) plain lines with the count, the rate, the
    elapsed time and the ETA. The training rate leaves the evaluations out, as the summary does."""
    progress_lines: int = 20
    """Plain progress lines of the training when stderr is not a terminal (one per 1/N of the
    steps, and at least one every 30 s)."""
    tensorboard: bool = True
    """Write TensorBoard logs to <out>/tb."""
    verbose: int = 0
    """SB3 verbosity (0 none, 1 rollout tables)."""
    json: Path | None = None
    """Also write eval.json's content (config, evaluations, speed) to this path."""


#: The values ``--smoke`` gives every field not set on the command line: 4,096 steps of 16
#: games, a warm start of 4,000 decisions, an evaluation at steps 0 and 2,048 (10 deals per bot)
#: and a checkpoint at 2,048, a final evaluation of 20 deals per bot, games cut at 2 min.
SMOKE = dict(total_timesteps=4096, num_envs=16, n_steps=128, batch_size=512, n_epochs=2,
             net_arch=(64, 64), bc_samples=4000, bc_steps=100, bc_batch_size=256,
             eval_games=20, eval_freq=2048, eval_games_during=10, checkpoint_freq=2048,
             eval_max_game_ms=120_000)


def cloning(args: Args) -> bool:
    """Whether the run fits the actor to --bc-teacher (not with --resume or --init-model)."""
    return bool(args.bc_steps) and args.resume is None and args.init_model is None


def default_out(args: Args) -> Path:
    """The run folder without ``--out``: runs/ppo_<opponent>[_selfplay]_s<seed>[_smoke]."""
    tag = "".join(c if c.isalnum() else "_" for c in args.opponent).strip("_")
    return Path("runs") / (f"ppo_{tag}{'_selfplay' if args.self_play else ''}_s{args.seed}"
                           f"{'_smoke' if args.smoke else ''}")
