"""Train a MaskablePPO agent on Spit against bots, a curriculum, or a pool of its own snapshots.

    python -m experiments.train_ppo                      # the default run (~15 min on 2 cores)
    python -m experiments.train_ppo --opponent "random:0.3,greedy:0.7" --out runs/mix
    python -m experiments.train_ppo --opponent "random->greedy" --curriculum-threshold 0.9
    python -m experiments.train_ppo --self-play --opponent greedy
    python -m experiments.train_ppo --resume runs/ppo_greedy/model.zip --total-timesteps 500000
    python -m experiments.train_ppo --help

The learner plays many games at once in one process (``SpitVecEnv``: one VecEnv step = one learner
decision, the batched core running the opponent in between). ``--opponent`` is

* a policy name or profile: ``greedy``, ``greedy@expert`` (the opponent's seat plays with the
  expert latency preset, D7);
* a weighted mix: ``random:0.3,greedy:0.7`` -- every game row plays one member, drawn by weight
  and re-drawn when the row starts a new game (``agents.ppo.MixturePolicy``);
* a curriculum: stages joined by ``->`` (``random->greedy``), each stage a name, profile or mix;
  stages switch at equal fractions of the steps (``--curriculum-switch`` sets them) or, with
  ``--curriculum-threshold``, as soon as the evaluation win rate against the current stage passes
  the threshold.

With ``--self-play`` a frozen copy of the agent joins a pool every ``--self-play-every`` steps; the
pool (the newest ``--self-play-pool`` snapshots) takes ``1 - --self-play-bot-weight`` of the row
groups and the ``--opponent`` bots the rest. Snapshots play in batch through
``agents.ppo.PPOPolicy`` (sampling, not argmax, for variety), at the config's default latency.

The run folder (``--out``) receives config.json, model.zip, eval.json (evaluation history, the
final table with 95% Wilson intervals, and the speed figures), learning_curve.png, TensorBoard
logs (tb/) and checkpoints (checkpoints/). Evaluation plays fixed duplicate deals (each deal
twice, seats swapped) against each ``--eval-opponents`` bot with the tournament's match runner,
at the latency of ``--eval-latency`` for both seats.

Learning at the default settings rests on three choices (measured; see each field's help):

* ``--mask-wait`` (on): the learner never WAITs when it has another legal move. Without it PPO
  drifts to waiting (a per-decision discount favours delaying a likely loss, and waiting costs
  only 100 ms), and the argmax policy then idles for ever in positions where the opponent is
  stuck, so games run to the 30-minute truncation.
* ``--truncation-reward -1``: a truncated game counts as a loss for the learner, not a draw, so
  stalling a lost game is never worth it.
* forced WAITs are skipped (``--skip-forced-waits``): about 60% of a player's decisions have
  WAIT as the only legal move; up to two of them per step are played for the learner.
* ``--obs-mask`` (on): the network's input is the observation followed by the learner's legal
  mask (D + 23 floats), so it need not infer legality from the one-hot ranks.
* ``--bc-steps``: a behaviour-cloning warm start. The ``--bc-teacher`` bot (racer) plays the
  learner's seat for ``--bc-samples`` decisions, and the actor is fitted to its moves with
  masked cross-entropy before PPO starts, so PPO starts near the bot's strength instead of
  random's (the value network is left to PPO).

Speed: the script times every call into the environment (steps, resets, action masks) and
reports environment steps per second and the environment's share of the training wall time
(evaluation excluded) at the end and in eval.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np

__all__ = ["Args", "main", "parse_opponent", "train"]


@dataclass
class Args:
    """Train MaskablePPO on Spit (spit-env) and evaluate it against the bots."""

    total_timesteps: int = 1_000_000
    """Learner decisions (VecEnv steps summed over games) to train for in this run, rounded up to
    whole rollouts of num_envs * n_steps; with --resume they are added to the checkpoint's count."""
    opponent: str = "greedy"
    """Opponent: a policy name ("greedy"), a profile ("greedy@expert"), a weighted mix
    ("random:0.3,greedy:0.7") or a curriculum of those joined by "->" ("random->greedy")."""
    seed: int = 0
    """Seed of the training games, the network initialisation and the sampling."""
    out: Path | None = None
    """Run folder for model.zip, eval.json, config.json, learning_curve.png, tb/ and
    checkpoints/; None means runs/ppo_<opponent>_s<seed>."""
    num_envs: int = 512
    """Games played at once (the VecEnv's num_envs)."""
    n_steps: int = 32
    """Steps per game per rollout; a rollout holds num_envs * n_steps decisions."""
    batch_size: int = 1024
    """Minibatch size of the PPO update (at most num_envs * n_steps)."""
    n_epochs: int = 4
    """Passes over each rollout in the PPO update."""
    learning_rate: float = 3e-4
    """Adam learning rate (constant)."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    gamma: float = 0.999
    """Discount factor per learner decision."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clipping range."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value MLPs (separate networks, tanh)."""
    reward: Literal["game", "round"] = "round"
    """Reward: "game" = +1/-1 at the end of the game; "round" = +1/-1 for each round's outcome."""
    episode: Literal["game", "round"] = "game"
    """Episode: a whole game, or one round from a fresh deal."""
    shaping: float = 0.0
    """Extra reward per card shed (played from one's stocks) minus the opponent's; 0 = off."""
    truncation_reward: float = -1.0
    """Learner's reward when a game is truncated (D16: 30 min of game time or 100 rounds), which
    the environment scores as a draw (0). A player may refuse to play while the opponent is
    stuck (the table is not stalled while it has a legal play, D9), so a draw rewards stalling
    a lost game until the clock runs out; -1 scores it as a loss (0 = the env's draw)."""
    learner_seat: Literal["random", "0", "1"] = "random"
    """Seat of the learner: drawn per game ("random") or fixed."""
    curriculum_switch: tuple[float, ...] = ()
    """Fractions of --total-timesteps at which a "->" curriculum moves to its next stage
    (one per "->"; default: equal parts)."""
    curriculum_threshold: float | None = None
    """If set, a curriculum moves on as soon as the evaluation win rate against the current
    stage reaches this value (in (0, 1]) instead of at fixed fractions."""
    self_play: bool = False
    """Add frozen snapshots of the agent to the opponents (a pool, see --self-play-*)."""
    self_play_every: int = 200_000
    """Steps between two snapshots joining the self-play pool."""
    self_play_pool: int = 5
    """Snapshots kept in the self-play pool (the newest)."""
    self_play_bot_weight: float = 0.5
    """Share of the game rows that keep playing the --opponent bots once the pool is not empty."""
    mask_wait: bool = True
    """Take WAIT out of the learner's legal moves whenever it has another one, so it never idles
    when it can act (like the greedy bot). Saved with the model: agents.make("ppo") applies
    the same rule when it plays."""
    obs_mask: bool = True
    """Append the learner's legal-move mask (23 floats, after --mask-wait) to the observation,
    so the network sees legality directly instead of inferring it from the one-hot ranks
    (observation length D + 23). Saved with the model: agents.ppo.PPOPolicy appends it too."""
    bc_steps: int = 1500
    """Behaviour-cloning warm start: gradient steps of masked cross-entropy that fit the actor
    to --bc-teacher's moves before PPO starts (0 = off; the value network is left to PPO; not
    done with --resume). ~1 min at the default sizes."""
    bc_teacher: str = "racer"
    """The bot (name or profile) whose moves the warm start imitates."""
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
    """Row groups of a mix, a curriculum or self-play: the rows are split into this many equal
    groups (each a SpitVecEnv with its own opponent), shared out among the opponents by weight."""
    eval_games: int = 1000
    """Duplicate deals of the final evaluation against each bot (each deal played twice, seats
    swapped)."""
    eval_freq: int = 500_000
    """Steps between evaluations during training (0 = only the final one)."""
    eval_games_during: int = 100
    """Duplicate deals per bot of the evaluations during training."""
    eval_opponents: tuple[str, ...] = ("random", "greedy", "strongest")
    """Bots (names or profiles) the evaluation plays; "strongest" = the strongest bot of agents."""
    eval_latency: str = "club"
    """Latency of both seats in the evaluation (a preset name or whole ms)."""
    eval_max_game_ms: int = 1_800_000
    """Simulated time after which an evaluation game is truncated and counts as a draw (D16; the
    default is SpitConfig's 30 min). Lower it only for smoke tests: an untrained argmax policy
    may WAIT for ever, and such games then run to this limit."""
    eval_seed: int = 2024
    """Seed of the fixed evaluation deals (the same for every run, so runs compare)."""
    checkpoint_freq: int = 1_000_000
    """Steps between checkpoints in <out>/checkpoints (0 = none)."""
    resume: Path | None = None
    """Continue training from this checkpoint (a model .zip): the step count goes on from it."""
    torch_threads: int = 1
    """torch.set_num_threads for training and inference. 1 by default: more torch worker
    threads than free cores contend with the environment and slow training down sharply on a
    small machine (measured on a 2-core machine: about 20x slower with 2 threads while another
    process was running)."""
    progress_bar: bool = True
    """Show a progress bar (tqdm/rich)."""
    tensorboard: bool = True
    """Write TensorBoard logs to <out>/tb."""
    verbose: int = 0
    """SB3 verbosity (0 none, 1 rollout tables)."""


# --- argument checks ----------------------------------------------------------------------------


class ArgumentError(ValueError):
    """A bad command-line value; the message starts with the argument's flag."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _positive(args: Args, *names: str) -> None:
    for name in names:
        value = getattr(args, name)
        if value <= 0:
            raise ArgumentError(f"{_flag(name)} must be positive, got {value}")


def _known_policies() -> list[str]:
    from spit_env.policy import registered_policies

    return registered_policies()


def parse_opponent(spec: str, what: str = "--opponent") -> list[list[tuple[str, float]]]:
    """Parse an opponent spec into curriculum stages, each a list of (profile, weight).

    "greedy" -> [[("greedy", 1.0)]]; "random:0.3,greedy:0.7" -> [[("random", .3), ("greedy", .7)]];
    "random->greedy@expert" -> [[("random", 1.0)], [("greedy@expert", 1.0)]].

    Raises:
        ArgumentError: an empty part, a bad weight, an unknown policy name (the message lists
            the known ones), a bad latency, or mix members with different latencies (the
            latency belongs to the opponent's seat, one per batch).
    """
    from spit_env.policy import parse_profile

    if not isinstance(spec, str) or not spec.strip():
        raise ArgumentError(f"{what} must be a non-empty string, got {spec!r}")
    known = _known_policies()
    stages = []
    for stage in spec.split("->"):
        members = []
        for item in stage.split(","):
            item = item.strip()
            name, sep, weight = item.rpartition(":") if ":" in item else (item, "", "1")
            if not name:
                raise ArgumentError(f"{what}: empty policy name in {spec!r}")
            try:
                w = float(weight)
            except ValueError:
                raise ArgumentError(f"{what}: weight {weight!r} of {name!r} is not a number") from None
            if not np.isfinite(w) or w < 0:
                raise ArgumentError(f"{what}: weight of {name!r} must be >= 0, got {weight!r}")
            try:
                base, _ = parse_profile(name)
            except ValueError as err:
                raise ArgumentError(f"{what}: {err}") from None
            if base not in known or base == "ppo":
                raise ArgumentError(
                    f"{what}: unknown opponent {base!r} in {spec!r}; known bots: "
                    f"{[k for k in known if k != 'ppo']}"
                )
            members.append((name, w))
        if sum(w for _, w in members) <= 0:
            raise ArgumentError(f"{what}: the weights of stage {stage!r} are all 0")
        stages.append(members)
    return stages


def validate(args: Args) -> list[list[tuple[str, float]]]:
    """Check every value; return the parsed opponent stages.

    Raises:
        ArgumentError: naming the argument and what is allowed.
    """
    _positive(args, "total_timesteps", "num_envs", "n_steps", "batch_size", "n_epochs",
              "learning_rate", "eval_games", "eval_games_during", "torch_threads",
              "self_play_every", "self_play_pool", "mix_groups", "bc_samples",
              "bc_batch_size", "bc_learning_rate")
    for name in ("eval_freq", "checkpoint_freq", "ent_coef", "shaping", "bc_steps"):
        if getattr(args, name) < 0:
            raise ArgumentError(f"{_flag(name)} must be >= 0, got {getattr(args, name)}")
    if args.batch_size > args.num_envs * args.n_steps:
        raise ArgumentError(
            f"--batch-size ({args.batch_size}) must be at most --num-envs * --n-steps "
            f"({args.num_envs * args.n_steps})"
        )
    if not 0 < args.gamma <= 1:
        raise ArgumentError(f"--gamma must be in (0, 1], got {args.gamma}")
    if not 0 <= args.gae_lambda <= 1:
        raise ArgumentError(f"--gae-lambda must be in [0, 1], got {args.gae_lambda}")
    if not 0 < args.clip_range <= 1:
        raise ArgumentError(f"--clip-range must be in (0, 1], got {args.clip_range}")
    if not args.net_arch or any(n <= 0 for n in args.net_arch):
        raise ArgumentError(f"--net-arch must be one or more positive layer sizes, got {args.net_arch}")
    if not 0 <= args.self_play_bot_weight <= 1:
        raise ArgumentError(f"--self-play-bot-weight must be in [0, 1], got {args.self_play_bot_weight}")
    if args.curriculum_threshold is not None and not 0 < args.curriculum_threshold <= 1:
        raise ArgumentError(f"--curriculum-threshold must be in (0, 1], got {args.curriculum_threshold}")
    stages = parse_opponent(args.opponent)
    needed = max(len(m) for m in stages) + (1 if args.self_play else 0)
    if needed > 1 and min(args.mix_groups, args.num_envs) < needed:
        raise ArgumentError(
            f"--mix-groups and --num-envs must both be at least {needed} (one row group per "
            f"opponent of a mix{' plus one for the self-play pool' if args.self_play else ''}), "
            f"got --mix-groups {args.mix_groups}, --num-envs {args.num_envs}"
        )
    if args.curriculum_switch:
        if len(args.curriculum_switch) != len(stages) - 1:
            raise ArgumentError(
                f"--curriculum-switch needs one fraction per '->' in --opponent "
                f"({len(stages) - 1}), got {len(args.curriculum_switch)}"
            )
        fr = list(args.curriculum_switch)
        if any(not 0 < f < 1 for f in fr) or fr != sorted(fr):
            raise ArgumentError(f"--curriculum-switch must be increasing fractions in (0, 1), got {fr}")
    if args.curriculum_threshold is not None and len(stages) > 1 and args.eval_freq == 0:
        raise ArgumentError("--curriculum-threshold needs evaluations during training (--eval-freq > 0)")
    if args.bc_steps:
        parse_opponent(args.bc_teacher, "--bc-teacher")
    for spec in args.eval_opponents:
        if spec != "strongest":
            parse_opponent(spec, "--eval-opponents")
    from spit_env.config import SpitConfig
    from spit_env.latency import Latency

    try:
        Latency.parse(args.eval_latency)
    except ValueError as err:
        raise ArgumentError(f"--eval-latency: {err}") from None
    try:
        SpitConfig(max_game_ms=args.eval_max_game_ms)
    except ValueError as err:
        raise ArgumentError(f"--eval-max-game-ms: {err}") from None
    if args.resume is not None and not Path(args.resume).is_file():
        raise ArgumentError(f"--resume: no checkpoint file at {str(args.resume)!r}")
    if args.resume is not None and not zipfile.is_zipfile(args.resume):
        raise ArgumentError(f"--resume: {str(args.resume)!r} is not a model .zip saved by SB3")
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ArgumentError(f"--out: {str(args.out)!r} exists and is not a folder")
    return stages


# --- opponents and the training environment ------------------------------------------------------


def _stage_label(members: list[tuple[str, float]]) -> str:
    if len(members) == 1:
        return members[0][0]
    return ",".join(f"{n}:{w:g}" for n, w in members)


def split_groups(weights, groups: int) -> list[int]:
    """How many of ``groups`` equal row groups each weight gets (largest remainder; every
    positive weight gets at least one group when there are enough groups)."""
    w = np.asarray(weights, dtype=np.float64)
    share = w / w.sum() * groups
    n = np.floor(share).astype(int)
    for k in np.argsort(-(share - n), kind="stable")[: groups - n.sum()]:
        n[k] += 1
    for k in np.flatnonzero((w > 0) & (n == 0)):
        donor = int(np.argmax(n))
        if n[donor] > 1:
            n[donor] -= 1
            n[k] += 1
    return n.tolist()


def _make_vec_env_class():
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv

    from spit_env.rules import N_ACTIONS

    class SplitVecEnv(VecEnv):
        """The training VecEnv: ``num_envs`` game rows split into G groups, each a SpitVecEnv
        with its own opponent ("rows split"), stepped one after the other and concatenated.

        A weighted mix of opponents (and the self-play pool) is a split of the groups among
        them, so every opponent is computed in batch on its own rows; with one opponent G = 1.
        Group g plays the games of seed ``group_seed(seed, g)``.

        It also times every call into the SpitVecEnvs (``env_seconds``), so the training
        script can report the environment's share of the wall time. With ``obs_mask`` every
        observation is (D + 23,): the learner's observation, then its legal-move mask (after
        ``mask_wait``) as 0/1 floats; a terminal observation gets an all-zero mask.
        """

        def __init__(self, sizes: list[int], make, obs_mask: bool = False, mask_wait: bool = False):
            self.groups = [make(n, g) for g, n in enumerate(sizes)]
            self.bounds = np.cumsum([0] + list(sizes))
            self.env_seconds = 0.0
            self.labels = ["?"] * len(sizes)
            self._started = False
            self._restart: set[int] = set()
            self.truncation_reward: float | None = None
            self.mask_wait = mask_wait
            self.obs_mask = obs_mask
            self._masks = None  # the masks of the current observations, computed once per step
            first = self.groups[0]
            space = first.observation_space
            if obs_mask:
                from gymnasium import spaces

                space = spaces.Box(0.0, 1.0, (space.shape[0] + N_ACTIONS,), np.float32)
            super().__init__(int(self.bounds[-1]), space, first.action_space)

        def _slices(self):
            return [slice(int(a), int(b)) for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)]

        def set_group_opponent(self, g: int, opponent, label: str) -> None:
            """Group g plays ``opponent`` (a profile or a Policy) from the next step on. If that
            changes the opponent's latency, the group's running games are cut (truncated) after
            the next step, because a SpitVecEnv applies a new latency only to a fresh reset()."""
            old = self._latency[g] if hasattr(self, "_latency") else None
            new = _profile_latency(opponent)
            self.groups[g].set_opponent(opponent)
            self.labels[g] = label
            self._latency = getattr(self, "_latency", [None] * len(self.groups))
            self._latency[g] = new
            if new != old and self._started:
                self._restart.add(g)

        def seed(self, seed=None):
            for g, env in enumerate(self.groups):
                env.seed(None if seed is None else group_seed(seed, g))
            return [seed] * self.num_envs

        def reset(self):
            t = time.perf_counter()
            obs = np.concatenate([env.reset() for env in self.groups])
            self.env_seconds += time.perf_counter() - t
            self._started = True
            self._restart.clear()
            self._masks = None
            return self._with_mask(obs)

        def step_async(self, actions) -> None:
            self._actions = np.asarray(actions)

        def step_wait(self):
            t = time.perf_counter()
            parts = []
            for g, (env, sl) in enumerate(zip(self.groups, self._slices(), strict=True)):
                env.step_async(self._actions[sl])
                part = env.step_wait()
                if self.truncation_reward is not None:
                    part = self._score_truncation(*part)
                if g in self._restart:
                    part = self._cut(env, *part)
                parts.append(part)
            self._restart.clear()
            self.env_seconds += time.perf_counter() - t
            obs = np.concatenate([p[0] for p in parts])
            rewards = np.concatenate([p[1] for p in parts])
            dones = np.concatenate([p[2] for p in parts])
            infos = [info for p in parts for info in p[3]]
            self._masks = None
            if self.obs_mask:
                for info in infos:
                    if "terminal_observation" in info:
                        term = info["terminal_observation"]
                        info["terminal_observation"] = np.concatenate(
                            [term, np.zeros(N_ACTIONS, np.float32)]).astype(np.float32)
            return self._with_mask(obs), rewards, dones, infos

        def _with_mask(self, obs):
            if not self.obs_mask:
                return obs
            return np.concatenate([obs, self.action_masks().astype(np.float32)], axis=1)

        def _score_truncation(self, obs, rewards, dones, infos):
            rewards = np.asarray(rewards, np.float32).copy()
            for i in np.flatnonzero(dones):
                if infos[i].pop("TimeLimit.truncated", False):
                    # a final outcome: no bootstrapping from the cut-off state
                    rewards[i] += self.truncation_reward
            return obs, rewards, dones, infos

        @staticmethod
        def _cut(env, obs, rewards, dones, infos):
            # End every running game of the group as truncated (SB3 bootstraps from the
            # terminal observation) and deal fresh games under the new latency.
            for i in np.flatnonzero(~dones):
                infos[i]["terminal_observation"] = obs[i].copy()
                infos[i]["TimeLimit.truncated"] = True
            return env.reset(), rewards, np.ones_like(dones), infos

        def public_tables(self) -> list:
            """The learners' public tables, as (row positions, PublicTable) parts over all groups
            (for a planning teacher, ``spit_env.policy.call_policy``)."""
            return [(pos + lo, table) for env, lo in zip(self.groups, self.bounds[:-1], strict=True)
                    for pos, table in env.public_tables()]

        def action_masks(self) -> np.ndarray:
            """(num_envs, 23) bool: the learner's legal moves in each row."""
            if self._masks is not None:
                return self._masks.copy()
            t = time.perf_counter()
            masks = np.concatenate([env.action_masks() for env in self.groups])
            self.env_seconds += time.perf_counter() - t
            if self.mask_wait:
                masks = mask_idle_wait(masks)
            self._masks = masks
            return masks.copy()

        def close(self) -> None:
            for env in self.groups:
                env.close()

        def get_attr(self, attr_name, indices=None):
            if attr_name == "render_mode":
                return [None] * len(self._indices(indices))
            return [getattr(self, attr_name)] * len(self._indices(indices))

        def set_attr(self, attr_name, value, indices=None) -> None:
            setattr(self, attr_name, value)

        def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
            idx = self._indices(indices)
            if method_name == "action_masks":
                masks = self.action_masks()
                return [masks[i] for i in idx]
            result = getattr(self, method_name)(*method_args, **method_kwargs)
            return [result] * len(idx)

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(self._indices(indices))

        def _indices(self, indices):
            if indices is None:
                return list(range(self.num_envs))
            return [indices] if isinstance(indices, (int, np.integer)) else list(indices)

    return SplitVecEnv


def mask_idle_wait(masks: np.ndarray) -> np.ndarray:
    """(B, 23) bool masks with WAIT removed from rows that have another legal move."""
    from agents.ppo import mask_idle_wait as rule

    return rule(masks)


def _profile_latency(opponent):
    from spit_env.policy import parse_profile

    return parse_profile(opponent)[1] if isinstance(opponent, str) else None


def group_seed(seed: int, g: int) -> int:
    """The game seed of row group g (group 0 plays ``seed`` itself)."""
    if g == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), g]).generate_state(1, np.uint32)[0])


#: Forced WAITs (WAIT the only legal move, ~60% of a greedy player's decisions) played for the
#: learner per step with --skip-forced-waits: 2 remove about half of them, shortening episodes by
#: ~40% at no extra environment time per game; more rounds make the environment the bottleneck.
FORCED_WAIT_SKIPS = 2


def make_env(args: Args, stages):
    """The training env: a SplitVecEnv over SpitVecEnvs (opponents set by TrainingRun), and the
    VecMonitor over it that SB3 reads episode rewards from."""
    from stable_baselines3.common.vec_env import VecMonitor

    from spit_env.vec_env import SpitVecEnv

    single = len(stages) == 1 and len(stages[0]) == 1 and not args.self_play
    groups = 1 if single else min(args.mix_groups, args.num_envs)
    sizes = [len(a) for a in np.array_split(np.arange(args.num_envs), groups)]
    seat = args.learner_seat if args.learner_seat == "random" else int(args.learner_seat)

    def make(n, g):
        return SpitVecEnv(n, opponent=stages[0][0][0], seed=group_seed(args.seed, g),
                          learner_seat=seat, reward=args.reward, shaping=args.shaping,
                          episode=args.episode,
                          skip_forced_waits=FORCED_WAIT_SKIPS if args.skip_forced_waits else 0)

    split = _make_vec_env_class()(sizes, make, obs_mask=args.obs_mask, mask_wait=args.mask_wait)
    split.truncation_reward = args.truncation_reward
    return split, VecMonitor(split)


# --- behaviour-cloning warm start ---------------------------------------------------------------


def collect_teacher_data(args: Args, stages, teacher: str, samples: int):
    """(observations (N, D') float32, masks (N, 23) bool, actions (N,) int64): ``teacher``
    playing the learner's seat of the training environment (same wrappers, so D' and the
    masks are what the learner sees) against the first stage's first opponent, on games of a
    seed distinct from the training games'. N >= ``samples``; the teacher's moves that the
    learner's mask forbids are played but not recorded."""
    from dataclasses import replace

    from spit_env.policy import call_policy, make_policy, reads_public_table
    from spit_env.rules import OBS_DIM

    bc_args = replace(args, self_play=False,
                      seed=int(np.random.SeedSequence([args.seed, 0xBC]).generate_state(1)[0]))
    split, _ = make_env(bc_args, [[stages[0][0]]])
    split.set_group_opponent(0, stages[0][0][0], stages[0][0][0])
    policy = make_policy(teacher)
    rng = np.random.default_rng(bc_args.seed)
    obs = split.reset()
    all_obs, all_masks, all_actions = [], [], []
    n = 0
    while n < samples:
        masks = split.action_masks()
        if reads_public_table(policy):  # a planning teacher (planner) also reads the table
            actions = call_policy(policy, obs[:, :OBS_DIM], masks, rng, table=split.public_tables)
        else:
            actions = np.asarray(policy(obs[:, :OBS_DIM], masks, rng), dtype=np.int64)
        # A bot may WAIT on purpose (racer: ~10% of its decisions) where --mask-wait forbids
        # it to the learner; those moves cannot be imitated and are left out.
        keep = masks[np.arange(len(actions)), actions]
        all_obs.append(obs[keep])
        all_masks.append(masks[keep])
        all_actions.append(actions[keep])
        n += int(keep.sum())
        obs, _, _, _ = split.step(actions)
    split.close()
    return np.concatenate(all_obs), np.concatenate(all_masks), np.concatenate(all_actions)


def behaviour_clone(model, observations, masks, actions, *, steps: int, batch_size: int,
                    learning_rate: float, seed: int) -> dict:
    """Fit the actor of ``model`` (policy MLP and action head; the value network is untouched)
    to the teacher's moves with masked cross-entropy (illegal logits -inf), ``steps`` Adam
    steps on random minibatches. Returns {"loss", "accuracy"} on the last 10% of the steps."""
    import torch

    policy = model.policy
    params = list(policy.mlp_extractor.policy_net.parameters()) + list(policy.action_net.parameters())
    optimiser = torch.optim.Adam(params, lr=learning_rate)
    obs_t = torch.as_tensor(observations)
    mask_t = torch.as_tensor(masks)
    act_t = torch.as_tensor(actions)
    gen = torch.Generator().manual_seed(int(seed))
    policy.set_training_mode(True)
    losses, hits = [], []
    for k in range(steps):
        idx = torch.randint(0, len(act_t), (batch_size,), generator=gen)
        features = policy.extract_features(obs_t[idx], policy.pi_features_extractor)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
        logits = logits.masked_fill(~mask_t[idx], -1e8)
        loss = torch.nn.functional.cross_entropy(logits, act_t[idx])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if k >= steps - max(steps // 10, 1):
            losses.append(float(loss.detach()))
            hits.append(float((logits.argmax(1) == act_t[idx]).float().mean()))
    policy.set_training_mode(False)
    return {"loss": float(np.mean(losses)), "accuracy": float(np.mean(hits))}


# --- evaluation ---------------------------------------------------------------------------------


def strongest_bot() -> str:
    """The strongest heuristic bot of ``agents`` (its BOTS table is ordered weakest first)."""
    import agents

    return list(agents.BOTS)[-1]


def resolve_eval_opponents(specs) -> list[str]:
    """The evaluation bots with "strongest" replaced by its name, duplicates dropped."""
    out = []
    for spec in specs:
        name = strongest_bot() if spec == "strongest" else spec
        if name not in out:
            out.append(name)
    return out


def evaluate(model, opponents, deals: int, *, latency: str = "club", seed: int = 2024,
             max_game_ms: int = 1_800_000, batch_size: int = 1024) -> dict[str, dict]:
    """Win rate of ``model`` (deterministic) against each opponent on ``deals`` duplicate deals.

    Uses the tournament's match runner (``experiments.tournament.play_pairing``): game ids
    0..deals-1 of ``seed``, each played twice with the seats swapped, both seats at ``latency``
    unless a profile says otherwise; draws and truncations count 1/2; 95% Wilson intervals.

    Returns:
        {opponent: PairingResult as a dict (win_rate, ci_low, ci_high, wins_a, wins_b, draws,
        games, ...)}.
    """
    import agents.ppo  # noqa: F401  (registers "ppo" even before agents/__init__ imports it)
    from experiments.tournament import Player, play_pairing
    from spit_env.config import SpitConfig

    config = SpitConfig(latency=latency if not str(latency).isdigit() else int(latency),
                        max_game_ms=max_game_ms)
    me = Player("ppo", "ppo", None, {"model": model, "deterministic": True})
    results = {}
    for spec in opponents:
        res = play_pairing(me, spec, deals, config=config, seed=seed,
                           batch_size=min(batch_size, deals))
        results[spec] = asdict(res)
    return results


def _make_callbacks():
    from stable_baselines3.common.callbacks import BaseCallback

    class EvalAndCurriculum(BaseCallback):
        """Evaluates every ``eval_freq`` steps (and once at the start of a stage-threshold
        curriculum), logs the win rates to TensorBoard, records the learning curve, moves a
        curriculum to its next stage, and adds self-play snapshots to the opponent pool."""

        def __init__(self, run: TrainingRun):
            super().__init__()
            self.run = run
            self.eval_seconds = 0.0

        def _on_rollout_end(self) -> None:
            buf = self.model.ep_info_buffer
            if buf:
                self.run.episode_curve.append(
                    (int(self.model.num_timesteps), float(np.mean([e["r"] for e in buf])))
                )

        def _on_step(self) -> bool:
            t = time.perf_counter()
            self.run.on_step(self.model, self.logger)
            self.eval_seconds += time.perf_counter() - t
            return True

    return EvalAndCurriculum


# --- the run ------------------------------------------------------------------------------------


class TrainingRun:
    """The state of a run between callbacks: the curriculum stage, the self-play pool, the
    evaluation history and the learning curve."""

    def __init__(self, args: Args, stages, venv, eval_opponents: list[str]):
        self.args = args
        self.stages = stages
        self.venv = venv
        self.eval_opponents = eval_opponents
        self.stage = 0
        self.pool: list = []
        self.pool_steps: list[int] = []
        self.history: list[dict] = []
        self.episode_curve: list[tuple[int, float]] = []
        self.stage_log: list[dict] = []
        self.start = 0
        self.switch_at: list[int] = []
        self.next_eval = None
        self.next_snapshot = None

    # called once, before learn() (after --resume num_timesteps is the checkpoint's)
    def on_start(self, model) -> None:
        a = self.args
        self.start = int(model.num_timesteps)
        self.end = self.start + a.total_timesteps  # the final evaluation comes after learn()
        if a.curriculum_threshold is None and len(self.stages) > 1:
            fractions = a.curriculum_switch or [
                k / len(self.stages) for k in range(1, len(self.stages))
            ]
            self.switch_at = [self.start + int(f * a.total_timesteps) for f in fractions]
        self.next_eval = self.start + a.eval_freq if a.eval_freq else None
        self.next_snapshot = self.start + a.self_play_every if a.self_play else None
        self.set_stage(0, model)

    def set_stage(self, stage: int, model) -> None:
        self.stage = stage
        self.stage_log.append({"timesteps": int(model.num_timesteps), "stage": stage,
                               "opponent": _stage_label(self.stages[stage])})
        self.apply_opponent()

    def apply_opponent(self) -> None:
        """Give every row group its opponent: the stage's members split by weight, and once the
        self-play pool is not empty, 1 - --self-play-bot-weight of the groups to its snapshots
        (newest first)."""
        members = self.stages[self.stage]
        n_groups = len(self.venv.groups)
        n_bot = n_groups
        if self.pool:
            n_bot = split_groups([self.args.self_play_bot_weight,
                                  1 - self.args.self_play_bot_weight], n_groups)[0]
        counts = split_groups([w for _, w in members], n_bot) if n_bot else [0] * len(members)
        plan = [(name, name) for (name, _), c in zip(members, counts, strict=True) for _ in range(c)]
        for k in range(n_groups - n_bot):
            j = len(self.pool) - 1 - k % len(self.pool)
            plan.append((self.pool[j], f"snapshot@{self.pool_steps[j]}"))
        for g, (opponent, label) in enumerate(plan):
            self.venv.set_group_opponent(g, opponent, label)
        if self.stage_log:
            labels = self.venv.labels
            self.stage_log[-1]["groups"] = list(labels)
            rows: dict[str, int] = {}
            for size, label in zip(np.diff(self.venv.bounds), labels, strict=True):
                rows[label] = rows.get(label, 0) + int(size)
            self.stage_log[-1]["rows"] = rows

    def on_step(self, model, logger) -> None:
        a = self.args
        n = int(model.num_timesteps)
        if self.stage < len(self.switch_at) and n >= self.switch_at[self.stage]:
            self.set_stage(self.stage + 1, model)
        if self.next_snapshot is not None and n >= self.next_snapshot:
            from agents.ppo import PPOPolicy

            self.pool = (self.pool + [PPOPolicy(model, deterministic=False)])[-a.self_play_pool:]
            self.pool_steps = (self.pool_steps + [n])[-a.self_play_pool:]
            self.next_snapshot += a.self_play_every
            self.stage_log.append({"timesteps": n, "stage": self.stage, "self_play_pool": len(self.pool),
                                   "opponent": _stage_label(self.stages[self.stage])})
            self.apply_opponent()
            logger.record("self_play/pool_size", len(self.pool))
        if self.next_eval is not None and n >= self.next_eval and n < self.end:
            self.next_eval += a.eval_freq
            self.evaluate_now(model, logger)

    def evaluate_now(self, model, logger) -> dict:
        a = self.args
        stage_specs = [s for s, _ in self.stages[self.stage]]
        threshold_mode = a.curriculum_threshold is not None and self.stage < len(self.stages) - 1
        specs = list(self.eval_opponents)
        if threshold_mode:
            specs += [s for s in stage_specs if s not in specs]
        results = evaluate(model, specs, a.eval_games_during, latency=a.eval_latency,
                           seed=a.eval_seed, max_game_ms=a.eval_max_game_ms)
        n = int(model.num_timesteps)
        self.history.append({"timesteps": n, "deals": a.eval_games_during, "stage": self.stage,
                             "results": results})
        for spec, r in results.items():
            logger.record(f"eval/win_rate_{spec}", r["win_rate"])
        if threshold_mode:
            members = self.stages[self.stage]
            total = sum(w for _, w in members)
            rate = sum(w * results[s]["win_rate"] for s, w in members) / total
            logger.record("curriculum/stage_win_rate", rate)
            if rate >= a.curriculum_threshold:
                self.set_stage(self.stage + 1, model)
        logger.record("curriculum/stage", self.stage)
        return results


def _default_out(args: Args) -> Path:
    tag = "".join(c if c.isalnum() else "_" for c in args.opponent).strip("_")
    return Path("runs") / f"ppo_{tag}{'_selfplay' if args.self_play else ''}_s{args.seed}"


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def plot_learning_curve(eval_json: dict, path: Path) -> None:
    """eval win rate (95% bands) against timesteps per opponent, and the mean episode reward."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    points = list(eval_json["history"])
    final = eval_json.get("final")
    if final:
        points.append({"timesteps": final["timesteps"], "results": final["results"]})
    names = []
    for p in points:
        names += [n for n in p["results"] if n not in names]
    for name in names:
        pts = [(p["timesteps"], p["results"][name]) for p in points if name in p["results"]]
        x = [t for t, _ in pts]
        y = np.array([r["win_rate"] for _, r in pts])
        err = [y - [r["ci_low"] for _, r in pts], np.array([r["ci_high"] for _, r in pts]) - y]
        ax1.errorbar(x, y, yerr=err, fmt="o-", capsize=4, label=name)
    ax1.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax1.set_ylim(0, 1)
    ax1.set_xlabel("timesteps (learner decisions)")
    ax1.set_ylabel("win rate (95% Wilson interval)")
    ax1.set_title("evaluation on fixed duplicate deals", fontsize=10)
    ax1.legend(fontsize=8)
    curve = eval_json.get("episode_reward", [])
    if curve:
        ax2.plot([t for t, _ in curve], [r for _, r in curve])
    ax2.set_xlabel("timesteps (learner decisions)")
    ax2.set_ylabel("mean episode reward (last 100 episodes)")
    ax2.set_title(f"training reward ({eval_json['config']['reward']} reward, "
                  f"{eval_json['config']['episode']} episodes)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_table(final: dict) -> None:
    """The final evaluation as a table (rich if it is installed, else plain text)."""
    rows = [(name, r) for name, r in final["results"].items()]
    title = (f"PPO evaluation: {final['deals']} duplicate deals per bot ({2 * final['deals']} games), "
             f"latency {final['latency']} both seats, at {final['timesteps']:,} steps")
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a dependency of [train]
        print(title)
        for name, r in rows:
            print(f"{name:>12}  win rate {r['win_rate']:.3f}  95% CI [{r['ci_low']:.3f}, "
                  f"{r['ci_high']:.3f}]  W/L/D {r['wins_a']}/{r['wins_b']}/{r['draws']}")
        return
    table = Table(title=title)
    for col in ("opponent", "win rate", "95% CI", "wins", "losses", "draws"):
        table.add_column(col, justify="right")
    for name, r in rows:
        table.add_row(name, f"{r['win_rate']:.3f}", f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
                      str(r["wins_a"]), str(r["wins_b"]), str(r["draws"]))
    Console().print(table)


def train(args: Args) -> dict:
    """Train, evaluate and write the run folder; returns the eval.json content.

    Raises:
        ArgumentError: a bad argument value (see :func:`validate`).
    """
    stages = validate(args)
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback

    torch.set_num_threads(args.torch_threads)
    out = Path(args.out) if args.out is not None else _default_out(args)
    out.mkdir(parents=True, exist_ok=True)
    eval_opponents = resolve_eval_opponents(args.eval_opponents)
    if args.resume is not None:
        # the network's input is fixed by the checkpoint: build the env to match it
        from dataclasses import replace

        from agents.ppo import load_model

        saved = getattr(load_model(args.resume), "spit_options", {}) or {}
        args = replace(args, obs_mask=bool(saved.get("obs_mask", False)))
    timed, env = make_env(args, stages)

    previous = {}
    if (out / "eval.json").is_file() and args.resume is not None:
        previous = json.loads((out / "eval.json").read_text())
    tb = str(out / "tb") if args.tensorboard else None
    if args.resume is not None:
        model = MaskablePPO.load(args.resume, env=env, device="cpu", tensorboard_log=tb)
    else:
        model = MaskablePPO(
            "MlpPolicy", env, learning_rate=args.learning_rate, n_steps=args.n_steps,
            batch_size=args.batch_size, n_epochs=args.n_epochs, gamma=args.gamma,
            gae_lambda=args.gae_lambda, clip_range=args.clip_range, ent_coef=args.ent_coef,
            policy_kwargs=dict(net_arch=dict(pi=list(args.net_arch), vf=list(args.net_arch))),
            tensorboard_log=tb, seed=args.seed, device="cpu", verbose=args.verbose,
        )
    # a plain attribute: SB3 saves it in model.zip, and agents.ppo.PPOPolicy reads it back
    if args.resume is None:
        model.spit_options = {"mask_wait": args.mask_wait, "obs_mask": args.obs_mask}
    else:  # the network's input is fixed by the checkpoint
        model.spit_options = {**getattr(model, "spit_options", {}), "mask_wait": args.mask_wait}
    start_steps = int(model.num_timesteps)
    bc = None
    if args.bc_steps and args.resume is None:  # a warm start is for a fresh network only
        t = time.perf_counter()
        data = collect_teacher_data(args, stages, args.bc_teacher, args.bc_samples)
        t_collect = time.perf_counter() - t
        bc = behaviour_clone(model, *data, steps=args.bc_steps, batch_size=args.bc_batch_size,
                             learning_rate=args.bc_learning_rate, seed=args.seed)
        bc.update(teacher=args.bc_teacher, samples=len(data[2]), collect_seconds=round(t_collect, 2),
                  seconds=round(time.perf_counter() - t, 2))
        print(f"behaviour cloning of {args.bc_teacher}: {bc['samples']:,} samples in "
              f"{t_collect:.0f} s, {args.bc_steps} steps, total {bc['seconds']:.0f} s, "
              f"last loss {bc['loss']:.3f}, accuracy {bc['accuracy']:.3f}")
        del data
    config = {
        **_jsonable(asdict(args)),
        "out": str(out),
        "opponent_stages": [_stage_label(s) for s in stages],
        "eval_opponents": eval_opponents,
        "resumed_from_timesteps": start_steps,
        "behaviour_cloning": bc,
        "model_hyperparameters": {
            "n_steps": model.n_steps, "batch_size": model.batch_size, "n_epochs": model.n_epochs,
            "gamma": model.gamma, "gae_lambda": model.gae_lambda, "ent_coef": model.ent_coef,
        },
        "versions": {"torch": torch.__version__, "python": sys.version.split()[0]},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))

    run = TrainingRun(args, stages, timed, eval_opponents)
    if previous:
        run.history = previous.get("history", [])
        run.episode_curve = [tuple(p) for p in previous.get("episode_reward", [])]
    run.on_start(model)
    callback = _make_callbacks()(run)
    callbacks = [callback]
    if args.checkpoint_freq:
        callbacks.append(CheckpointCallback(
            save_freq=max(args.checkpoint_freq // args.num_envs, 1),
            save_path=str(out / "checkpoints"), name_prefix="ppo"))

    t0 = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps, callback=CallbackList(callbacks),
                progress_bar=args.progress_bar, reset_num_timesteps=args.resume is None,
                tb_log_name="ppo")
    learn_seconds = time.perf_counter() - t0
    model.save(out / "model.zip")

    t1 = time.perf_counter()
    final_results = evaluate(model, eval_opponents, args.eval_games, latency=args.eval_latency,
                             seed=args.eval_seed, max_game_ms=args.eval_max_game_ms)
    final_eval_seconds = time.perf_counter() - t1
    steps = int(model.num_timesteps) - start_steps
    train_seconds = learn_seconds - callback.eval_seconds
    speed = {
        "timesteps": steps,
        "learn_seconds": round(learn_seconds, 2),
        "train_seconds_excluding_eval": round(train_seconds, 2),
        "eval_during_training_seconds": round(callback.eval_seconds, 2),
        "final_eval_seconds": round(final_eval_seconds, 2),
        "total_seconds": round(learn_seconds + final_eval_seconds, 2),
        "env_seconds": round(timed.env_seconds, 2),
        "env_share_of_training": round(timed.env_seconds / max(train_seconds, 1e-9), 4),
        "steps_per_second": round(steps / max(train_seconds, 1e-9), 1),
        "steps_per_second_including_eval": round(steps / max(learn_seconds, 1e-9), 1),
        "note": "wall times on a shared machine are noisy; env_share = time inside SpitVecEnv "
                "calls (step, reset, action_masks) / training wall time without evaluations",
    }
    result = {
        "config": config,
        "history": run.history,
        "episode_reward": run.episode_curve,
        "stages": previous.get("stages", []) + run.stage_log,
        "final": {"timesteps": int(model.num_timesteps), "deals": args.eval_games,
                  "games_per_opponent": 2 * args.eval_games, "latency": args.eval_latency,
                  "seed": args.eval_seed, "results": final_results},
        "speed": speed,
    }
    (out / "eval.json").write_text(json.dumps(_jsonable(result), indent=2))
    plot_learning_curve(result, out / "learning_curve.png")
    env.close()
    print_table(result["final"])
    print(f"{steps:,} steps in {learn_seconds:.0f} s ({speed['steps_per_second']:,.0f} steps/s "
          f"training, environment {100 * speed['env_share_of_training']:.1f}% of it); "
          f"final evaluation {final_eval_seconds:.0f} s; run folder {out}")
    return result


def main(argv=None) -> int:
    """Command-line entry point: parse with tyro, train, print the evaluation table."""
    import tyro

    args = tyro.cli(Args, args=argv, prog="python -m experiments.train_ppo",
                    description=__doc__.split("\n\n")[0])
    try:
        train(args)
    except ArgumentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
