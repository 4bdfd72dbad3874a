"""Train a MaskablePPO agent on Spit against bots, a curriculum, or a pool of its own snapshots.

    python -m experiments.train_ppo                      # the default run: 1M decisions vs greedy
    python -m experiments.train_ppo --opponent "random:0.3,greedy:0.7" --out runs/mix
    python -m experiments.train_ppo --opponent "random->greedy" --curriculum-threshold 0.9
    python -m experiments.train_ppo --self-play --opponent greedy
    python -m experiments.train_ppo --resume runs/ppo_greedy/model.zip --total-timesteps 500000
    python -m experiments.train_ppo --init-model runs/distilled/model.zip --pull-coef 0.5
    python -m experiments.train_ppo --help

The script reads top to bottom: the validation of the arguments (:func:`validate`), the run
(:func:`train`) and the command line (:func:`main`). The pieces it puts together live in
``experiments/ppo/``: ``args`` (:class:`Args`, one documented field per flag, shared with
``experiments.sb3_ceiling``), ``envs`` (the VecEnv stack), ``schedule`` (curriculum, self-play
pool, evaluations during training), ``evaluation`` (evaluation, plot, table), ``warm_start``
(the actor's and the critic's warm start), ``pull`` (the KL pull in PPO's loss) and
``progress``; the model's input contract is ``agents.network.model_input``.

The learner plays many games at once in one process (``SpitVecEnv``: one VecEnv step = one learner
decision, the batched core running the opponent in between). ``--opponent`` is

* a policy name or profile: ``greedy``, ``greedy@expert`` (the opponent's seat plays with the
  expert latency preset, D7);
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
``agents.network.PPOPolicy`` (sampling, not argmax, for variety), at the config's default latency.

The run folder (``--out``) receives config.json, model.zip, eval.json (evaluation history, the
final table with 95% Wilson intervals, and the speed figures; also written to ``--json`` if
given), learning_curve.png, TensorBoard logs (tb/) and checkpoints (checkpoints/). Evaluation
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

import json
import sys
import time
import zipfile
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from experiments.cli.checks import ArgumentError
from experiments.ppo.args import Args
from spit_env.rules import OBSERVATION

__all__ = ["Args", "ArgumentError", "main", "parse_opponent", "train", "validate"]


# --- validation ---------------------------------------------------------------------------------


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _positive(args: Args, *names: str) -> None:
    for name in names:
        value = getattr(args, name)
        if value <= 0:
            raise ArgumentError(f"{_flag(name)} must be positive, got {value}")


def parse_opponent(spec: str, what: str = "--opponent") -> list[list[tuple[str, float]]]:
    """Parse an opponent spec into curriculum stages, each a list of (profile, weight).

    "greedy" -> [[("greedy", 1.0)]]; "random:0.3,greedy:0.7" -> [[("random", .3), ("greedy", .7)]];
    "random->greedy@expert" -> [[("random", 1.0)], [("greedy@expert", 1.0)]].

    Raises:
        ArgumentError: an empty part, a bad weight, an unknown policy name (the message lists
            the known ones), a bad latency, or mix members with different latencies (the
            latency belongs to the opponent's seat, one per batch).
    """
    from spit_env.checks import did_you_mean
    from spit_env.policy import parse_profile, registered_policies

    if not isinstance(spec, str) or not spec.strip():
        raise ArgumentError(f"{what} must be a non-empty string, got {spec!r}")
    known = registered_policies()
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
                raise ArgumentError(
                    f"{what}: weight {weight!r} of {name!r} is not a number") from None
            if not np.isfinite(w) or w < 0:
                raise ArgumentError(f"{what}: weight of {name!r} must be >= 0, got {weight!r}")
            try:
                base, _ = parse_profile(name)
            except ValueError as err:
                raise ArgumentError(f"{what}: {err}") from None
            if base not in known:  # "network" (or "ppo") is the shipped network
                raise ArgumentError(
                    f"{what}: unknown opponent {base!r} in {spec!r}{did_you_mean(base, known)}; "
                    f"known policies: {known}"
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
              "bc_batch_size", "bc_learning_rate", "progress_lines")
    for name in ("eval_freq", "checkpoint_freq", "ent_coef", "shaping", "bc_steps",
                 "critic_steps"):
        if getattr(args, name) < 0:
            raise ArgumentError(f"{_flag(name)} must be >= 0, got {getattr(args, name)}")
    if args.batch_size > args.num_envs * args.n_steps:
        raise ArgumentError(
            f"--batch-size ({args.batch_size}) must be at most --num-envs * --n-steps "
            f"({args.num_envs * args.n_steps})"
        )
    if args.critic_steps and args.num_envs < 2:
        raise ArgumentError(f"--critic-steps > 0 holds out the games of some rows to score the "
                            f"critic's fit: --num-envs must be at least 2, got {args.num_envs}")
    if not 0 < args.gamma <= 1:
        raise ArgumentError(f"--gamma must be in (0, 1], got {args.gamma}")
    if not 0 <= args.gae_lambda <= 1:
        raise ArgumentError(f"--gae-lambda must be in [0, 1], got {args.gae_lambda}")
    if not 0 < args.clip_range <= 1:
        raise ArgumentError(f"--clip-range must be in (0, 1], got {args.clip_range}")
    if not args.net_arch or any(n <= 0 for n in args.net_arch):
        raise ArgumentError(
            f"--net-arch must be one or more positive layer sizes, got {args.net_arch}")
    if not 0 <= args.self_play_bot_weight <= 1:
        raise ArgumentError(
            f"--self-play-bot-weight must be in [0, 1], got {args.self_play_bot_weight}")
    if args.curriculum_threshold is not None and not 0 < args.curriculum_threshold <= 1:
        raise ArgumentError(
            f"--curriculum-threshold must be in (0, 1], got {args.curriculum_threshold}")
    left_out = sorted(set(args.obs_leave_out) - {f.name for f in OBSERVATION})
    if left_out or len(set(args.obs_leave_out)) == len(OBSERVATION):
        raise ArgumentError(f"--obs-leave-out must name fields of the observation and leave some, "
                            f"got {list(args.obs_leave_out)} (unknown: {left_out}); the fields: "
                            f"{[f.name for f in OBSERVATION]}")
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
            raise ArgumentError(
                f"--curriculum-switch must be increasing fractions in (0, 1), got {fr}")
    if args.curriculum_threshold is not None and len(stages) > 1 and args.eval_freq == 0:
        raise ArgumentError(
            "--curriculum-threshold needs evaluations during training (--eval-freq > 0)")
    if args.league_weighting == "losses":
        if max(len(m) for m in stages) < 2:
            raise ArgumentError(
                "--league-weighting losses re-weights the members of a mix: it needs a mix in "
                f"--opponent (e.g. greedy:1,racer:1), got {args.opponent!r}")
        if not 0 < args.eval_freq < args.total_timesteps:
            raise ArgumentError(
                "--league-weighting losses re-weights after each evaluation during training: "
                f"--eval-freq must be above 0 and below --total-timesteps "
                f"({args.total_timesteps}), got {args.eval_freq}")
    if args.keep_best and args.eval_during_seed == args.eval_seed:
        raise ArgumentError(
            f"--keep-best chooses on held-out deals: --eval-during-seed must differ from "
            f"--eval-seed (both {args.eval_seed})")
    if args.bc_steps:
        parse_opponent(args.bc_teacher, "--bc-teacher")
    if not np.isfinite(args.pull_coef) or args.pull_coef < 0:
        raise ArgumentError(f"--pull-coef must be a finite number >= 0 (0 = off), got "
                            f"{args.pull_coef}")
    if args.pull_model is not None and args.pull_coef == 0:
        raise ArgumentError("--pull-model is the policy --pull-coef pulls toward: give "
                            "--pull-coef > 0 with it")
    if args.init_model is not None and args.resume is not None:
        raise ArgumentError("--init-model and --resume both give the starting model: pass one "
                            "(--resume continues a run, --init-model starts a new one)")
    if cloning(args) and args.mask_wait:
        raise ArgumentError(
            f"--mask-wait with a behaviour-cloning warm start (--bc-steps {args.bc_steps}): the "
            f"mask takes WAIT out whenever another move is legal, and --bc-teacher "
            f"{args.bc_teacher!r} may WAIT on purpose, a move the model could not imitate; pass "
            f"--no-mask-wait (the default) or --bc-steps 0")
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
    for flag, path in (("--init-model", args.init_model), ("--pull-model", args.pull_model)):
        if path is not None:
            check_model_file(args, path, flag)
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ArgumentError(f"--out: {str(args.out)!r} exists and is not a folder")
    if args.json is not None and Path(args.json).is_dir():
        raise ArgumentError(f"--json: {str(args.json)!r} is a folder, not a file path")
    return stages


def cloning(args: Args) -> bool:
    """Whether the run fits the actor to --bc-teacher (not with --resume or --init-model)."""
    return bool(args.bc_steps) and args.resume is None and args.init_model is None


def check_model_file(args: Args, path, flag: str) -> None:
    """Check that the model at ``path`` reads the input the flags give the trained model.

    The input options (--mask-wait, --obs-mask, --racer-features), the observation fields
    (--obs-leave-out) and, for --init-model, the hidden layers (--net-arch) must be the flags'.

    Raises:
        ArgumentError: naming ``flag``, the differing setting and the flag that sets it.
    """
    from agents.network import input_options, load_model
    from agents.ppo_model import observation_fields

    try:
        saved = load_model(path)
    except ValueError as err:
        raise ArgumentError(f"{flag}: {err}") from None
    options = input_options(saved)
    for name in ("mask_wait", "obs_mask", "racer_features"):
        if options[name] != getattr(args, name):
            on, wanted = options[name], getattr(args, name)
            raise ArgumentError(
                f"{flag}: the model at {str(path)!r} has {_flag(name)} {'on' if on else 'off'}, "
                f"the flags {'on' if wanted else 'off'}; pass "
                f"{'--' if on else '--no-'}{name.replace('_', '-')} to match it")
    fields = list(getattr(saved.policy, "obs_fields", ()))
    wanted = list(observation_fields(leave_out=args.obs_leave_out))
    if fields != wanted:
        raise ArgumentError(
            f"{flag}: the model at {str(path)!r} reads the observation fields {fields}, the flags "
            f"{wanted}; set --obs-leave-out to leave out {sorted(set(wanted) - set(fields))}")
    arch = saved.policy.net_arch
    layers = list(arch["pi"]) if isinstance(arch, dict) else list(arch)
    value_layers = list(arch["vf"]) if isinstance(arch, dict) else layers
    if flag == "--init-model" and list(args.net_arch) not in ([layers] if layers == value_layers
                                                              else []):
        raise ArgumentError(f"{flag}: the model at {str(path)!r} has hidden layers {arch}, the "
                            f"flags --net-arch {list(args.net_arch)}; pass --net-arch "
                            f"{' '.join(map(str, layers))}")


# --- the run ------------------------------------------------------------------------------------


def default_out(args: Args) -> Path:
    """The run folder when ``--out`` is not given: runs/ppo_<opponent>[_selfplay]_s<seed>."""
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


def train(args: Args) -> dict:
    """Train, evaluate and write the run folder; returns the eval.json content.

    Raises:
        ArgumentError: a bad argument value (see :func:`validate`).
    """
    stages = validate(args)
    t_run = time.perf_counter()
    from functools import partial

    import torch
    from stable_baselines3.common.callbacks import CallbackList

    from agents.network import PPOPolicy, input_options, load_model
    from agents.ppo_model import new_model, observation_fields, save_model
    from experiments.ppo.envs import make_training_env
    from experiments.ppo.evaluation import (
        HeldOutEvaluations,
        evaluate,
        plot_learning_curve,
        print_table,
        resolve_eval_opponents,
    )
    from experiments.ppo.progress import ProgressCallback, training_progress
    from experiments.ppo.pull import frozen_actor, with_pull
    from experiments.ppo.schedule import (
        Checkpoints,
        OpponentSchedule,
        ScheduleCallback,
        stage_label,
    )
    from experiments.ppo.warm_start import behaviour_clone, collect_teacher_data, fit_critic
    from spit_env.policy import make_policy
    from spit_env.progress import Progress, format_rate

    torch.set_num_threads(args.torch_threads)
    out = Path(args.out) if args.out is not None else default_out(args)
    out.mkdir(parents=True, exist_ok=True)
    eval_opponents = resolve_eval_opponents(args.eval_opponents)
    if args.resume is not None:  # the network's input is fixed by the checkpoint
        saved = input_options(load_model(args.resume))
        for name in ("mask_wait", "obs_mask", "racer_features"):
            if saved[name] != getattr(args, name):
                flag = "--" + name.replace("_", "-")
                print(f"note: the checkpoint's network was trained with {flag} "
                      f"{'on' if saved[name] else 'off'}; its input stays so (the flag is ignored)",
                      file=sys.stderr)
        args = replace(args, mask_wait=saved["mask_wait"], obs_mask=saved["obs_mask"],
                       racer_features=saved["racer_features"])
        if args.obs_leave_out:
            print("note: the checkpoint's network reads the observation fields it was trained "
                  "on; --obs-leave-out is ignored", file=sys.stderr)

    # The environment: one row group per opponent share (one group for a single opponent).
    env_options = dict(
        num_envs=args.num_envs, opponent=stages[0][0][0],
        learner_seat=args.learner_seat if args.learner_seat == "random" else int(args.learner_seat),
        reward=args.reward, episode=args.episode, shaping=args.shaping,
        skip_forced_waits=args.skip_forced_waits, truncation_reward=args.truncation_reward)
    single = len(stages) == 1 and len(stages[0]) == 1 and not args.self_play
    groups, timer, env = make_training_env(
        groups=1 if single else min(args.mix_groups, args.num_envs), seed=args.seed, **env_options)

    # The model: fresh, or from a checkpoint (its step count goes on). Its input options live
    # in its policy (agents.ppo_model.SpitPolicy), saved with it.
    previous = {}
    if (out / "eval.json").is_file() and args.resume is not None:
        previous = json.loads((out / "eval.json").read_text())
    tb = str(out / "tb") if args.tensorboard else None
    if args.resume is not None:
        model = load_model(args.resume, env=env, tensorboard_log=tb)
    else:
        model = new_model(
            env, net_arch=args.net_arch, options=dict(
                mask_wait=args.mask_wait, obs_mask=args.obs_mask,
                racer_features=args.racer_features),
            obs_fields=observation_fields(leave_out=args.obs_leave_out),
            learning_rate=args.learning_rate, n_steps=args.n_steps,
            batch_size=args.batch_size, n_epochs=args.n_epochs, gamma=args.gamma,
            gae_lambda=args.gae_lambda, clip_range=args.clip_range, ent_coef=args.ent_coef,
            tensorboard_log=tb, seed=args.seed, device="cpu", verbose=args.verbose,
        )
    if args.init_model is not None:  # its weights, checked against the flags by validate()
        model.policy.load_state_dict(load_model(args.init_model).policy.state_dict())
    start_steps = int(model.num_timesteps)

    # The warm start (not on --resume): the actor fitted to the teacher's moves (a fresh
    # network) and the critic to PPO's TD(lambda) targets on the same games (or, from
    # --init-model, on the model's own games), played in the learner's seat against the first
    # opponent, on games of a seed distinct from the training games'.
    bc, critic = None, None
    show = args.progress_bar
    if cloning(args) or (args.critic_steps and args.resume is None):
        t = time.perf_counter()
        bc_seed = int(np.random.SeedSequence([args.seed, 0xBC]).generate_state(1)[0])
        _, _, bc_env = make_training_env(groups=1, seed=bc_seed, **env_options)
        player = args.bc_teacher if cloning(args) else "the model"
        teacher = (make_policy(args.bc_teacher) if cloning(args)
                   else PPOPolicy(model, deterministic=False))
        with Progress(args.bc_samples, f"warm start: {player}'s moves", unit="samples",
                      enabled=show) as progress:
            data = collect_teacher_data(bc_env, teacher, args.bc_samples, input_options(model),
                                        progress=progress, gamma=args.gamma)
        bc_env.close()
        t_collect = time.perf_counter() - t
        collected = data.summary()
        print(f"warm start: {player} played {collected['played']:,} decisions in "
              f"{t_collect:.0f} s, all kept ({collected['forbidden']} forbidden by the model's "
              f"mask)", flush=True)
    if cloning(args):
        t = time.perf_counter()
        with Progress(args.bc_steps, "warm start: fitting the actor", unit="steps",
                      enabled=show) as progress:
            bc = behaviour_clone(model, data.observations, data.masks, data.actions,
                                 steps=args.bc_steps, batch_size=args.bc_batch_size,
                                 learning_rate=args.bc_learning_rate, seed=args.seed,
                                 progress=progress)
        bc.update(teacher=args.bc_teacher, **collected, collect_seconds=round(t_collect, 2),
                  seconds=round(time.perf_counter() - t + t_collect, 2))
        print(f"behaviour cloning of {args.bc_teacher}: {bc['samples']:,} samples, "
              f"{args.bc_steps} steps, total {bc['seconds']:.0f} s, last loss {bc['loss']:.3f}, "
              f"accuracy {bc['accuracy']:.3f}", flush=True)
    if args.critic_steps and args.resume is None:
        t = time.perf_counter()
        with Progress(args.critic_steps, "warm start: fitting the critic", unit="steps",
                      enabled=show) as progress:
            critic = fit_critic(model, data, gamma=args.gamma, gae_lambda=args.gae_lambda,
                                steps=args.critic_steps, batch_size=args.bc_batch_size,
                                learning_rate=args.bc_learning_rate, seed=args.seed,
                                progress=progress)
        critic.update(games_of=player, seconds=round(time.perf_counter() - t, 2))
        print(f"critic warm start on {player}'s games: {critic['samples']:,} samples, "
              f"{args.critic_steps} steps, explained variance on held-out games "
              f"{critic['held_out_explained_variance_before']:.3f} -> "
              f"{critic['held_out_explained_variance']:.3f} (round {critic['best_round']} kept)",
              flush=True)
    if cloning(args) or critic is not None:
        del data
    # PPO with its update log, and the pull toward the starting (or a given) policy if asked
    anchor = None
    if args.pull_coef > 0:
        anchor = frozen_actor(load_model(args.pull_model).policy if args.pull_model is not None
                              else model.policy)
    model = with_pull(model, anchor, args.pull_coef)
    config = {
        **_jsonable(asdict(args)),
        "out": str(out),
        "opponent_stages": [stage_label(s) for s in stages],
        "eval_opponents": eval_opponents,
        "resumed_from_timesteps": start_steps,
        "behaviour_cloning": bc,
        "critic_warm_start": critic,
        "model_hyperparameters": {
            "n_steps": model.n_steps, "batch_size": model.batch_size, "n_epochs": model.n_epochs,
            "gamma": model.gamma, "gae_lambda": model.gae_lambda, "ent_coef": model.ent_coef,
        },
        "versions": {"torch": torch.__version__, "python": sys.version.split()[0]},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))

    # Training, with the opponents' schedule and evaluations in a callback.
    evaluate_with = partial(evaluate, latency=args.eval_latency, seed=args.eval_seed,
                            max_game_ms=args.eval_max_game_ms, show_progress=show)
    # the evaluations during training, on held-out deals; the first one also plays the bots'
    # own levels there (the learning curve's reference lines), in its batch
    evaluate_during = HeldOutEvaluations(
        (args.bc_teacher if cloning(args) else eval_opponents[-1]) if args.eval_levels else None,
        eval_opponents, previous.get("levels"), latency=args.eval_latency,
        seed=args.eval_during_seed, max_game_ms=args.eval_max_game_ms, show_progress=show)
    schedule = OpponentSchedule(
        stages, groups, evaluate_during, eval_opponents, eval_freq=args.eval_freq,
        eval_deals=args.eval_games_during, total_timesteps=args.total_timesteps,
        curriculum_switch=args.curriculum_switch, curriculum_threshold=args.curriculum_threshold,
        self_play_every=args.self_play_every if args.self_play else None,
        self_play_pool=args.self_play_pool, self_play_bot_weight=args.self_play_bot_weight,
        best_path=out / "best_model.zip" if args.keep_best else None,
        league_weighting=args.league_weighting)
    if previous:
        schedule.history = previous.get("history", [])
        schedule.episode_curve = [tuple(p) for p in previous.get("episode_reward", [])]
    schedule.on_start(model)
    rollout = args.num_envs * args.n_steps  # SB3 trains whole rollouts
    steps_planned = -(-args.total_timesteps // rollout) * rollout
    progress = training_progress(steps_planned, lines=args.progress_lines,
                                 latest_eval=schedule.latest_eval, enabled=show)
    callback = ScheduleCallback(schedule, progress)
    callbacks = [callback, ProgressCallback(progress)]
    if args.checkpoint_freq:
        callbacks.append(Checkpoints(
            save_freq=max(args.checkpoint_freq // args.num_envs, 1),
            save_path=str(out / "checkpoints"), name_prefix="ppo",
            until=start_steps + steps_planned - rollout))
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps, callback=CallbackList(callbacks),
                reset_num_timesteps=args.resume is None, tb_log_name="ppo")
    if args.keep_best:  # the last model competes too, on the same held-out deals
        t = time.perf_counter()
        schedule.evaluate_now(model, model.logger)
        callback.seconds += time.perf_counter() - t
    learn_seconds = time.perf_counter() - t0
    kept = {"timesteps": int(model.num_timesteps), "kept": "last"}
    if args.keep_best:  # one copy of each: model.zip (the best) and last_model.zip
        save_model(model, out / "last_model.zip")
        model.set_parameters(str(out / "best_model.zip"), device="cpu")
        (out / "best_model.zip").replace(out / "model.zip")
        kept = {**schedule.best, "kept": "best"}
        print(f"kept the best model: {kept['timesteps']:,} steps, mean win rate "
              f"{kept['score']:.3f} on the held-out deals (last model: "
              f"{schedule.history[-1]['score']:.3f})", flush=True)
    else:
        save_model(model, out / "model.zip")

    # The final evaluation and the reports.
    t1 = time.perf_counter()
    final_results = evaluate_with(model, eval_opponents, args.eval_games,
                                  desc="final evaluation")
    final_eval_seconds = time.perf_counter() - t1
    steps = int(model.num_timesteps) - start_steps
    # the progress line's own figure (one clock): its time outside the evaluations
    train_seconds = progress.working_s
    total_seconds = time.perf_counter() - t_run
    speed = {
        "timesteps": steps,
        "learn_seconds": round(learn_seconds, 2),
        "train_seconds_excluding_eval": round(train_seconds, 2),
        # the bots' levels included: they are played in the first evaluation's batch
        "eval_during_training_seconds": round(callback.seconds, 2),
        "final_eval_seconds": round(final_eval_seconds, 2),
        "total_seconds": round(total_seconds, 2),
        "eval_during_training_share": round(callback.seconds / max(total_seconds, 1e-9), 4),
        "env_seconds": round(timer.seconds, 2),
        "env_share_of_training": round(timer.seconds / max(train_seconds, 1e-9), 4),
        "steps_per_second": round(steps / max(train_seconds, 1e-9), 1),
        "steps_per_second_including_eval": round(steps / max(learn_seconds, 1e-9), 1),
        "note": "wall times on a shared machine are noisy; env_share = time inside SpitVecEnv "
                "calls (step, reset, action_masks) / training wall time without evaluations",
    }
    result = {
        "config": config,
        "history": schedule.history,
        "levels": evaluate_during.levels,
        "episode_reward": schedule.episode_curve,
        "stages": previous.get("stages", []) + schedule.stage_log,
        "kept_model": kept,
        # every PPO update: the explained variance of the values its rollout was collected with
        # (the first one shows the critic's warm start), approx_kl, value loss, pull KL
        "updates": model.update_log,
        "final": {"timesteps": int(kept["timesteps"]), "deals": args.eval_games,
                  "games_per_opponent": 2 * args.eval_games, "latency": args.eval_latency,
                  "seed": args.eval_seed, "results": final_results},
        "speed": speed,
    }
    text = json.dumps(_jsonable(result), indent=2)
    (out / "eval.json").write_text(text)
    if args.json is not None:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text)
    plot_learning_curve(result, out / "learning_curve.png")
    env.close()
    print_table(result["final"])
    if model.update_log:
        first = model.update_log[0]
        print(f"explained variance at the first PPO update {first['explained_variance']:.3f}, "
              f"mean approx_kl {np.mean([u['approx_kl'] for u in model.update_log]):.4f}"
              + (f", mean pull KL {np.mean([u['pull_kl'] for u in model.update_log]):.4f}"
                 if args.pull_coef > 0 else ""), flush=True)
    print(f"{steps:,} steps in {train_seconds:.0f} s of training "
          f"({format_rate(steps, train_seconds, 'steps')} training, environment "
          f"{100 * speed['env_share_of_training']:.1f}% of it); evaluations during training "
          f"{callback.seconds:.0f} s ({100 * speed['eval_during_training_share']:.1f}% of the "
          f"run), final evaluation {final_eval_seconds:.0f} s, {total_seconds:.0f} s in all; "
          f"run folder {out}")
    return result


# --- command line --------------------------------------------------------------------------------


def main(argv=None) -> int:
    """Command-line entry point: parse with tyro, train, print the evaluation table."""
    from experiments.cli import help_values, tyro_cli

    args = tyro_cli(Args, argv, prog="python -m experiments.train_ppo",
                    description=__doc__.split("\n\n")[0], fill=help_values())
    try:
        train(args)
    except ArgumentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
