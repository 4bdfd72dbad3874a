"""The run of ``python -m experiments.train_ppo``, phase by phase.

:func:`train` checks the arguments and runs (:func:`run`); each phase is a function of its own,
called in this order:

1. :func:`set_up`: the run folder and the torch threads; with ``--resume`` the checkpoint's
   network input and the run's earlier evaluations;
2. :func:`training_env`: the VecEnv stack (``experiments.ppo.envs``), one row group per
   opponent share;
3. :func:`build_model`: a fresh network, ``--resume``'s checkpoint or ``--init-model``'s weights;
4. :func:`warm_start`: the actor fitted to ``--bc-teacher``'s moves and the critic to PPO's
   targets (``experiments.ppo.warm_start``), then the pull toward a fixed policy
   (:func:`pull_anchor`, ``experiments.ppo.pull``), and config.json (:func:`write_config`);
5. :func:`learn`: MaskablePPO with its schedule (:func:`make_schedule`:
   ``experiments.ppo.schedule``'s curriculum, self-play pool, evaluations during training and
   checkpoints) and the model kept (:func:`keep_model`);
6. :func:`finish`: the final evaluation, eval.json, the learning curve and the summary.

Every game of a run gets the flags' settings from one place: the training games, the warm
start's and the self-play pool's (which plays in the training games' rows) from
:func:`env_options`; every evaluation (during training, the bots' levels, the final one) from
:func:`eval_settings`.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.vec_env import VecEnv

from agents.network import NetworkPolicy, input_options, load_model
from agents.ppo_model import new_model, observation_fields, save_model
from experiments.ppo.args import Args, cloning, default_out
from experiments.ppo.checks import validate
from experiments.ppo.envs import EnvTimer, OpponentGroups, make_training_env
from experiments.ppo.evaluation import (
    HeldOutEvaluations,
    evaluate,
    plot_learning_curve,
    print_table,
    resolve_eval_opponents,
)
from experiments.ppo.progress import ProgressCallback, training_progress
from experiments.ppo.pull import frozen_actor, with_pull
from experiments.ppo.schedule import Checkpoints, OpponentSchedule, ScheduleCallback, stage_label
from experiments.ppo.warm_start import behaviour_clone, collect_teacher_data, fit_critic
from spit_env.policy import make_policy
from spit_env.progress import Progress, counted, format_rate

__all__ = ["train", "run", "set_up", "env_options", "eval_settings", "training_env", "build_model",
           "warm_start", "pull_anchor", "write_config", "make_schedule", "learn", "keep_model",
           "finish", "TrainingEnv", "Learned"]

#: The input options a network's input is fixed by (a checkpoint's stay on --resume).
_INPUT = ("mask_wait", "obs_mask", "racer_features")


@dataclass
class TrainingEnv:
    """The training VecEnv and its pieces (``experiments.ppo.envs.make_training_env``).

    Attributes:
        groups: its row groups, each with its opponent.
        timer: the seconds spent inside it.
        env: the outermost VecEnv, the one PPO learns on.
        options: the games' settings (:func:`env_options`), which the warm start's games share.
    """

    groups: OpponentGroups
    timer: EnvTimer
    env: VecEnv
    options: dict


@dataclass
class Learned:
    """What the learning phase leaves for the reports.

    Attributes:
        schedule: the opponents' schedule, with the evaluations' history.
        evaluations: the evaluations during training (their bots' levels).
        callback: the schedule's callback (``seconds``: the time inside evaluations).
        progress: the training's progress (``working_s``: the time outside evaluations).
        seconds: the wall time of ``learn()`` and, with --keep-best, the last evaluation.
        kept: {"timesteps", "kept"} of the model in model.zip (and "score" for the best).
    """

    schedule: OpponentSchedule
    evaluations: HeldOutEvaluations
    callback: ScheduleCallback
    progress: Progress
    seconds: float
    kept: dict


def train(args: Args) -> dict:
    """Check the arguments, train, evaluate and write the run folder (:func:`run`).

    Returns:
        the eval.json content.

    Raises:
        ArgumentError: a bad argument value (``experiments.ppo.checks.validate``).
    """
    return run(args, validate(args))


def run(args: Args, stages) -> dict:
    """Train, evaluate and write the run folder, phase by phase; returns the eval.json content.

    Args:
        args: the run's arguments, checked.
        stages: the opponent's curriculum stages (``validate``'s return value).
    """
    t_run = time.perf_counter()
    args, out, previous = set_up(args)
    env = training_env(args, stages)
    model = build_model(args, env.env, out)
    start_steps = int(model.num_timesteps)
    bc, critic = warm_start(args, model, env.options)
    model = with_pull(model, pull_anchor(args, model), args.pull_coef)
    config = write_config(args, out, stages, model, start_steps, bc, critic)
    learned = learn(args, model, stages, env, out, previous)
    return finish(args, model, out, config, env, learned, previous, start_steps, t_run)


# --- set-up and resume ----------------------------------------------------------------------------


def set_up(args: Args) -> tuple[Args, Path, dict]:
    """The torch threads, the run folder and, with --resume, what the checkpoint fixes.

    Returns:
        (the arguments, with --resume the checkpoint's input options in place of the flags';
        the run folder, created; with --resume the eval.json already in it, else {}).
    """
    torch.set_num_threads(args.torch_threads)
    out = Path(args.out) if args.out is not None else default_out(args)
    out.mkdir(parents=True, exist_ok=True)
    previous = {}
    if args.resume is not None:
        args = _checkpoint_input(args)
        if (out / "eval.json").is_file():
            previous = json.loads((out / "eval.json").read_text())
    return args, out, previous


def _checkpoint_input(args: Args) -> Args:
    """``args`` with the --resume checkpoint's input options; a differing flag gets a note."""
    saved = input_options(load_model(args.resume))
    for name in _INPUT:
        if saved[name] != getattr(args, name):
            flag = "--" + name.replace("_", "-")
            print(f"note: the checkpoint's network was trained with {flag} "
                  f"{'on' if saved[name] else 'off'}; its input stays so (the flag is ignored)",
                  file=sys.stderr)
    if args.obs_leave_out:
        print("note: the checkpoint's network reads the observation fields it was trained "
              "on; --obs-leave-out is ignored", file=sys.stderr)
    return replace(args, **{name: saved[name] for name in _INPUT})


# --- the environment ------------------------------------------------------------------------------


def env_options(args: Args, opponent) -> dict:
    """The settings of every game the learner trains in (``make_training_env``'s arguments).

    Args:
        args: the run's arguments (the reward, the episode, the shaping, the learner's seat,
            the forced WAITs, the truncation reward).
        opponent: every row group's first opponent.
    """
    return dict(
        num_envs=args.num_envs, opponent=opponent,
        learner_seat=args.learner_seat if args.learner_seat == "random" else int(args.learner_seat),
        reward=args.reward, episode=args.episode, shaping=args.shaping,
        skip_forced_waits=args.skip_forced_waits, truncation_reward=args.truncation_reward)


def eval_settings(args: Args) -> dict:
    """The settings of every evaluation game (``play_evaluation``'s arguments but the seed)."""
    return dict(latency=args.eval_latency, max_game_ms=args.eval_max_game_ms,
                show_progress=args.progress_bar)


def training_env(args: Args, stages) -> TrainingEnv:
    """The training env: one row group per opponent share (one group for a single opponent)."""
    options = env_options(args, stages[0][0][0])
    single = len(stages) == 1 and len(stages[0]) == 1 and not args.self_play
    groups, timer, env = make_training_env(
        groups=1 if single else min(args.mix_groups, args.num_envs), seed=args.seed, **options)
    return TrainingEnv(groups, timer, env, options)


# --- the model ------------------------------------------------------------------------------------


def build_model(args: Args, env: VecEnv, out: Path):
    """The model: fresh, or from a checkpoint (its step count goes on), with --init-model's weights.

    Its input options live in its policy (``agents.ppo_model.SpitPolicy``), saved with it.
    """
    tb = str(out / "tb") if args.tensorboard else None
    if args.resume is not None:
        model = load_model(args.resume, env=env, tensorboard_log=tb)
    else:
        model = new_model(
            env, net_arch=args.net_arch, options={name: getattr(args, name) for name in _INPUT},
            obs_fields=observation_fields(leave_out=args.obs_leave_out),
            learning_rate=args.learning_rate, n_steps=args.n_steps,
            batch_size=args.batch_size, n_epochs=args.n_epochs, gamma=args.gamma,
            gae_lambda=args.gae_lambda, clip_range=args.clip_range, ent_coef=args.ent_coef,
            tensorboard_log=tb, seed=args.seed, device="cpu", verbose=args.verbose,
        )
    if args.init_model is not None:  # its weights, checked against the flags by validate()
        model.policy.load_state_dict(load_model(args.init_model).policy.state_dict())
    return model


# --- the warm start -------------------------------------------------------------------------------


def warm_start(args: Args, model, options: dict) -> tuple[dict | None, dict | None]:
    """Fit the actor to the teacher's moves and the critic to PPO's targets (not on --resume).

    The actor of a fresh network is fitted to --bc-teacher's moves; the critic to PPO's
    TD(lambda) targets on the same games (or, from --init-model, on the model's own games),
    played in the learner's seat against the first opponent (``options``: the training games'
    settings), on games of a seed distinct from the training games'.

    Returns:
        (the behaviour cloning's figures or None, the critic's fit's figures or None).
    """
    fit_actor = cloning(args)
    fit_value = bool(args.critic_steps) and args.resume is None
    if not (fit_actor or fit_value):
        return None, None
    data, seconds = _warm_start_games(args, model, options)
    bc = _clone_actor(args, model, data, seconds) if fit_actor else None
    critic = _fit_critic(args, model, data) if fit_value else None
    return bc, critic


def _player(args: Args) -> str:
    """Whose games the warm start fits on."""
    return args.bc_teacher if cloning(args) else "the model"


def _warm_start_games(args: Args, model, options: dict):
    """(the warm start's data, the seconds its games took)."""
    t = time.perf_counter()
    seed = int(np.random.SeedSequence([args.seed, 0xBC]).generate_state(1)[0])
    _, _, env = make_training_env(groups=1, seed=seed, **options)
    teacher = (make_policy(args.bc_teacher) if cloning(args)
               else NetworkPolicy(model, deterministic=False))
    with Progress(args.bc_samples, f"warm start: {_player(args)}'s moves", unit="samples",
                  enabled=args.progress_bar) as progress:
        data = collect_teacher_data(env, teacher, args.bc_samples, input_options(model),
                                    progress=progress, gamma=args.gamma)
    env.close()
    seconds = time.perf_counter() - t
    collected = data.summary()
    print(f"warm start: {_player(args)} played {counted(collected['played'], 'decision')} in "
          f"{seconds:.0f} s, all kept ({collected['forbidden']} forbidden by the model's mask)",
          flush=True)
    return data, seconds


def _clone_actor(args: Args, model, data, collect_seconds: float) -> dict:
    """Behaviour cloning of --bc-teacher's moves; its figures."""
    t = time.perf_counter()
    with Progress(args.bc_steps, "warm start: fitting the actor", unit="steps",
                  enabled=args.progress_bar) as progress:
        bc = behaviour_clone(model, data.observations, data.masks, data.actions,
                             steps=args.bc_steps, batch_size=args.bc_batch_size,
                             learning_rate=args.bc_learning_rate, seed=args.seed,
                             progress=progress)
    bc.update(teacher=args.bc_teacher, **data.summary(),
              collect_seconds=round(collect_seconds, 2),
              seconds=round(time.perf_counter() - t + collect_seconds, 2))
    print(f"behaviour cloning of {args.bc_teacher}: {counted(bc['samples'], 'sample')}, "
          f"{counted(args.bc_steps, 'step')}, total {bc['seconds']:.0f} s, "
          f"last loss {bc['loss']:.3f}, accuracy {bc['accuracy']:.3f}", flush=True)
    return bc


def _fit_critic(args: Args, model, data) -> dict:
    """The critic's fit to PPO's TD(lambda) targets on the warm start's games; its figures."""
    t = time.perf_counter()
    with Progress(args.critic_steps, "warm start: fitting the critic", unit="steps",
                  enabled=args.progress_bar) as progress:
        critic = fit_critic(model, data, gamma=args.gamma, gae_lambda=args.gae_lambda,
                            steps=args.critic_steps, batch_size=args.bc_batch_size,
                            learning_rate=args.bc_learning_rate, seed=args.seed,
                            progress=progress)
    critic.update(games_of=_player(args), seconds=round(time.perf_counter() - t, 2))
    print(f"critic warm start on {_player(args)}'s games: {counted(critic['samples'], 'sample')}, "
          f"{counted(args.critic_steps, 'step')}, explained variance on held-out games "
          f"{critic['held_out_explained_variance_before']:.3f} -> "
          f"{critic['held_out_explained_variance']:.3f} (round {critic['best_round']} kept)",
          flush=True)
    return critic


def pull_anchor(args: Args, model):
    """The frozen policy PPO's loss pulls toward (--pull-model, else the start), or None."""
    if not args.pull_coef > 0:
        return None
    return frozen_actor(load_model(args.pull_model).policy if args.pull_model is not None
                        else model.policy)


def write_config(args: Args, out: Path, stages, model, start_steps: int, bc, critic) -> dict:
    """Write config.json (the arguments and what the run made of them); returns its content."""
    config = {
        **_jsonable(asdict(args)),
        "out": str(out),
        "opponent_stages": [stage_label(s) for s in stages],
        "eval_opponents": resolve_eval_opponents(args.eval_opponents),
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
    return config


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


# --- learning with its schedule -------------------------------------------------------------------


def make_schedule(args: Args, stages, groups: OpponentGroups, out: Path,
                  previous: dict) -> tuple[OpponentSchedule, HeldOutEvaluations]:
    """The opponents' schedule and the evaluations during training (on held-out deals).

    The first evaluation also plays the bots' own levels there (the learning curve's reference
    lines), in its batch; a resumed run goes on with its earlier history and levels.
    """
    eval_opponents = resolve_eval_opponents(args.eval_opponents)
    levels_of = ((args.bc_teacher if cloning(args) else eval_opponents[-1]) if args.eval_levels
                 else None)
    evaluations = HeldOutEvaluations(levels_of, eval_opponents, previous.get("levels"),
                                     seed=args.eval_during_seed, **eval_settings(args))
    schedule = OpponentSchedule(
        stages, groups, evaluations, eval_opponents, eval_freq=args.eval_freq,
        eval_deals=args.eval_games_during, total_timesteps=args.total_timesteps,
        curriculum_switch=args.curriculum_switch, curriculum_threshold=args.curriculum_threshold,
        self_play_every=args.self_play_every if args.self_play else None,
        self_play_pool=args.self_play_pool, self_play_bot_weight=args.self_play_bot_weight,
        best_path=out / "best_model.zip" if args.keep_best else None,
        league_weighting=args.league_weighting)
    if previous:
        schedule.history = previous.get("history", [])
        schedule.episode_curve = [tuple(p) for p in previous.get("episode_reward", [])]
    return schedule, evaluations


def learn(args: Args, model, stages, env: TrainingEnv, out: Path, previous: dict) -> Learned:
    """PPO's learning, with the opponents' schedule and the evaluations in a callback."""
    schedule, evaluations = make_schedule(args, stages, env.groups, out, previous)
    schedule.on_start(model)
    start_steps = int(model.num_timesteps)
    rollout = args.num_envs * args.n_steps  # SB3 trains whole rollouts
    steps_planned = -(-args.total_timesteps // rollout) * rollout
    progress = training_progress(steps_planned, lines=args.progress_lines,
                                 latest_eval=schedule.latest_eval, enabled=args.progress_bar)
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
    seconds = time.perf_counter() - t0
    kept = keep_model(args, model, schedule, out)
    return Learned(schedule, evaluations, callback, progress, seconds, kept)


def keep_model(args: Args, model, schedule: OpponentSchedule, out: Path) -> dict:
    """Save model.zip: the last model, or with --keep-best the best (the last as last_model.zip).

    Returns:
        {"timesteps", "kept": "last"}, or the best evaluation's {"timesteps", "score"} with
        "kept": "best"; ``model`` is then the best one.
    """
    if not args.keep_best:
        save_model(model, out / "model.zip")
        return {"timesteps": int(model.num_timesteps), "kept": "last"}
    save_model(model, out / "last_model.zip")  # one copy of each
    model.set_parameters(str(out / "best_model.zip"), device="cpu")
    (out / "best_model.zip").replace(out / "model.zip")
    kept = {**schedule.best, "kept": "best"}
    print(f"kept the best model: {counted(kept['timesteps'], 'step')}, mean win rate "
          f"{kept['score']:.3f} on the held-out deals (last model: "
          f"{schedule.history[-1]['score']:.3f})", flush=True)
    return kept


# --- the final evaluation and the run folder ------------------------------------------------------


def finish(args: Args, model, out: Path, config: dict, env: TrainingEnv, learned: Learned,
           previous: dict, start_steps: int, t_run: float) -> dict:
    """The final evaluation, eval.json (and --json), the learning curve and the summary.

    Returns:
        eval.json's content.
    """
    t = time.perf_counter()
    final_results = evaluate(model, resolve_eval_opponents(args.eval_opponents), args.eval_games,
                             seed=args.eval_seed, desc="final evaluation", **eval_settings(args))
    final_eval_seconds = time.perf_counter() - t
    steps = int(model.num_timesteps) - start_steps
    total_seconds = time.perf_counter() - t_run
    speed = _speed(steps, env, learned, final_eval_seconds, total_seconds)
    schedule = learned.schedule
    result = {
        "config": config,
        "history": schedule.history,
        "levels": learned.evaluations.levels,
        "episode_reward": schedule.episode_curve,
        "stages": previous.get("stages", []) + schedule.stage_log,
        "kept_model": learned.kept,
        # every PPO update: the explained variance of the values its rollout was collected with
        # (the first one shows the critic's warm start), approx_kl, value loss, pull KL
        "updates": model.update_log,
        "final": {"timesteps": int(learned.kept["timesteps"]), "deals": args.eval_games,
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
    env.env.close()
    print_table(result["final"])
    _print_summary(args, model, out, learned, speed, final_eval_seconds, total_seconds)
    return result


def _speed(steps: int, env: TrainingEnv, learned: Learned, final_eval_seconds: float,
           total_seconds: float) -> dict:
    """eval.json's speed figures."""
    # the progress line's own figure (one clock): its time outside the evaluations
    train_seconds = learned.progress.working_s
    during = learned.callback.seconds
    env_seconds = env.timer.seconds
    return {
        "timesteps": steps,
        "learn_seconds": round(learned.seconds, 2),
        "train_seconds_excluding_eval": round(train_seconds, 2),
        # the bots' levels included: they are played in the first evaluation's batch
        "eval_during_training_seconds": round(during, 2),
        "final_eval_seconds": round(final_eval_seconds, 2),
        "total_seconds": round(total_seconds, 2),
        "eval_during_training_share": round(during / max(total_seconds, 1e-9), 4),
        "env_seconds": round(env_seconds, 2),
        "env_share_of_training": round(env_seconds / max(train_seconds, 1e-9), 4),
        "steps_per_second": round(steps / max(train_seconds, 1e-9), 1),
        "steps_per_second_including_eval": round(steps / max(learned.seconds, 1e-9), 1),
        "note": "wall times on a shared machine are noisy; env_share = time inside SpitVecEnv "
                "calls (step, reset, action_masks) / training wall time without evaluations",
    }


def _print_summary(args: Args, model, out: Path, learned: Learned, speed: dict,
                   final_eval_seconds: float, total_seconds: float) -> None:
    """The run's last lines: the updates' figures, the speed and the run folder."""
    if model.update_log:
        first = model.update_log[0]
        print(f"explained variance at the first PPO update {first['explained_variance']:.3f}, "
              f"mean approx_kl {np.mean([u['approx_kl'] for u in model.update_log]):.4f}"
              + (f", mean pull KL {np.mean([u['pull_kl'] for u in model.update_log]):.4f}"
                 if args.pull_coef > 0 else ""), flush=True)
    steps, train_seconds = speed["timesteps"], learned.progress.working_s
    print(f"{counted(steps, 'step')} in {train_seconds:.0f} s of training "
          f"({format_rate(steps, train_seconds, 'steps')} training, environment "
          f"{100 * speed['env_share_of_training']:.1f}% of it); evaluations during training "
          f"{learned.callback.seconds:.0f} s "
          f"({100 * speed['eval_during_training_share']:.1f}% of the run), final evaluation "
          f"{final_eval_seconds:.0f} s, {total_seconds:.0f} s in all; run folder {out}")
    for path in sorted(out.iterdir()):  # the run folder's entries (and --json's copy)
        print(f"wrote {path}{'/' if path.is_dir() else ''}")
    if args.json is not None:
        print(f"wrote {args.json}")
