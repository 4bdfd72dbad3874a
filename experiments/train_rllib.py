"""Train a PPO agent on Spit with RLlib (new API stack), on a local Ray or a Ray cluster.

    python -m experiments.train_rllib                                  # vs greedy, local Ray
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
pairings, ``agents.arena``, as Ray tasks), with 95% Wilson intervals.

Needs the ``scale`` extra (``pip install -c constraints.txt -e ".[scale]"``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from experiments.cli.checks import ArgumentError

__all__ = ["Args", "main", "train", "build_config", "ArgumentError"]

LEARNER = "learner"  # agents.rllib_modules.LEARNER, the trained module's id (multi-agent)
BOT = "bot"
SINGLE = "default_policy"  # agents.rllib.SINGLE_AGENT_MODULE, the trained module's id (vector env)
#: Games per env runner by default: the vector env's num_envs, the PettingZoo path's env objects.
VECTOR_ENVS, PETTINGZOO_ENVS = 64, 8


@dataclass
class Args:
    """Train RLlib PPO on Spit (spit-env) on Ray and evaluate it against the bots."""

    mode: Literal["bot", "self-play"] = "bot"
    """Policy mapping: "bot" = the learner in one seat (drawn per game) against --opponent,
    which RLlib runs but does not train; "self-play" = one shared policy in both seats."""
    opponent: str = "greedy"
    """The bot of --mode bot: one of {rllib_bots}."""
    vector_env: bool = True
    """--mode bot on Spit-v0's native vector env (one batched core per env runner, the bot
    inside it); --no-vector-env: on the PettingZoo path, the bot as an untrained RLlib module."""
    iterations: int = 100
    """Training iterations (each samples --train-batch-size env steps, then updates)."""
    seed: int = 0
    """Seed of RLlib (network initialisation, env runners' games and sampling)."""
    out: Path | None = None
    """Run folder; None means runs/rllib_<mode>_s<seed>."""
    address: str | None = None
    """Ray to run on: None = a local Ray started on 127.0.0.1 for this run; "auto" = the
    cluster started with `ray start` on this machine; HOST:PORT = a head node's address."""
    num_env_runners: int = 2
    """Env runners (Ray actors of one CPU each) sampling in parallel; 0 = sample in this process."""
    num_envs_per_runner: int | None = None
    """Games each env runner steps at once (one batched forward pass of the module for all);
    None = 64 for --mode bot on the vector env (its num_envs: one batched core, so more games
    cost little), 8 otherwise (one Python env object per game)."""
    num_cpus: int | None = None
    """CPUs of the local Ray (without --address); None = max(this machine's, env runners + 1)."""
    connect_timeout: float = 30.0
    """Seconds allowed to reach and join --address before giving up with an error."""
    latency: str = "club"
    """Latency of both seats: a preset name (expert, club, novice) or whole ms."""
    train_batch_size: int = 4000
    """Env steps sampled per iteration (an env step is one learner decision with --mode bot on
    the vector env, one decision epoch of both players otherwise)."""
    minibatch_size: int = 500
    """Minibatch size of the PPO update, in agent steps."""
    num_epochs: int = 4
    """Passes over each iteration's batch."""
    lr: float = 3e-4
    """Adam learning rate."""
    gamma: float = 0.999
    """Discount factor per decision epoch."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    entropy_coeff: float = 0.01
    """Entropy bonus coefficient."""
    hiddens: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value MLPs (separate networks, tanh)."""
    mask_wait: bool = True
    """Take WAIT out of the learner's legal moves whenever it has another one (as train_ppo
    does): the policy never idles when it can act. Kept in the checkpoint."""
    obs_mask: bool = True
    """Feed the legal mask (23 floats) to the network beside the observation."""
    checkpoint_every: int = 10
    """Iterations between checkpoints in <out>/checkpoints (0 = only the final one)."""
    eval_games: int = 1000
    """Duplicate deals of the final evaluation against each opponent (0 = no evaluation)."""
    eval_opponents: tuple[str, ...] = ("random", "greedy")
    """Bots the final evaluation plays (names or profiles of {rllib_bots})."""
    eval_seed: int = 2024
    """Seed of the evaluation deals (train_ppo's default, so the two scripts' figures compare)."""
    eval_max_game_ms: int = 1_800_000
    """Simulated time after which an evaluation game is truncated, a draw (D16); lower it only
    for smoke tests."""
    torch_threads: int = 1
    """torch threads of the learner in this process (more contend with the env runners on a
    small machine)."""
    progress_bar: bool = True
    """Show the progress of the iterations and of the final evaluation: a bar when stderr is a
    terminal, otherwise (a log file, CI) plain lines with the count, the rate and the ETA."""
    json: Path | None = None
    """Also write the metrics (as <out>/metrics.json) to this file at the end."""


def rllib_bots() -> list[str]:
    """The registered bots RLlib can run as the opponent module (not the trained networks)."""
    from spit_env.policy import registered_policies

    return [n for n in registered_policies() if n not in ("network", "ppo", "rllib")]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def validate(args: Args) -> None:
    """Check every value.

    Raises:
        ArgumentError: naming the argument and what is allowed.
    """
    from experiments.cluster.connect import parse_address
    from spit_env.checks import did_you_mean
    from spit_env.config import SpitConfig
    from spit_env.latency import Latency
    from spit_env.policy import parse_profile

    if args.num_envs_per_runner is not None and args.num_envs_per_runner < 1:
        raise ArgumentError(f"--num-envs-per-runner must be >= 1, got {args.num_envs_per_runner}")
    for name in ("iterations", "train_batch_size", "minibatch_size", "num_epochs",
                 "torch_threads"):
        if getattr(args, name) < 1:
            raise ArgumentError(f"{_flag(name)} must be >= 1, got {getattr(args, name)}")
    for name in ("num_env_runners", "checkpoint_every", "eval_games", "seed", "eval_seed"):
        if getattr(args, name) < 0:
            raise ArgumentError(f"{_flag(name)} must be >= 0, got {getattr(args, name)}")
    if args.num_cpus is not None and args.num_cpus < 1:
        raise ArgumentError(f"--num-cpus must be >= 1, got {args.num_cpus}")
    if not args.connect_timeout > 0:
        raise ArgumentError(f"--connect-timeout must be > 0, got {args.connect_timeout}")
    if args.minibatch_size > args.train_batch_size:
        raise ArgumentError(f"--minibatch-size ({args.minibatch_size}) must be at most "
                            f"--train-batch-size ({args.train_batch_size})")
    for name, lo, hi in (("lr", 0, 1), ("gamma", 0, 1), ("gae_lambda", 0, 1)):
        value = getattr(args, name)
        if not lo < value <= hi:
            raise ArgumentError(f"{_flag(name)} must be in ({lo}, {hi}], got {value}")
    if args.entropy_coeff < 0:
        raise ArgumentError(f"--entropy-coeff must be >= 0, got {args.entropy_coeff}")
    if not args.hiddens or any(h < 1 for h in args.hiddens):
        raise ArgumentError(
            f"--hiddens must be one or more positive layer sizes, got {args.hiddens}")
    bots = rllib_bots()
    if args.opponent not in bots:
        raise ArgumentError(
            f"--opponent must be a registered bot {bots} (both seats' latency is --latency), "
            f"got {args.opponent!r}{did_you_mean(args.opponent, bots)}"
        )
    for spec in args.eval_opponents:
        try:
            name, _ = parse_profile(spec)
        except ValueError as err:
            raise ArgumentError(f"--eval-opponents: {err}") from None
        if name not in bots:
            raise ArgumentError(f"--eval-opponents: {spec!r} is not a registered bot {bots}"
                                f"{did_you_mean(name, bots)}")
    try:
        Latency.parse(args.latency)
    except ValueError as err:
        raise ArgumentError(f"--latency: {err}") from None
    try:
        SpitConfig(max_game_ms=args.eval_max_game_ms)
    except ValueError as err:
        raise ArgumentError(f"--eval-max-game-ms: {err}") from None
    try:
        parse_address(args.address)
    except ValueError as err:
        raise ArgumentError(f"--address: {err}") from None
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ArgumentError(f"--out: {str(args.out)!r} exists and is not a folder")
    if args.json is not None and Path(args.json).is_dir():
        raise ArgumentError(f"--json: {str(args.json)!r} is a folder, not a file")


def build_config(args: Args, spit_config):
    """The PPOConfig of a run (new API stack, multi-agent, masked module).

    Raises:
        RayMissingError: Ray is not installed.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    import spit_env
    from agents.rllib_modules import (
        BotModule,
        MaskedPPOModule,
        SpitMultiAgentEnv,
        map_learner_vs_bot,
        map_self_play,
    )
    from spit_env.observation import rule_options

    # Every name the config holds is importable (no register_env): a checkpoint restores in a
    # fresh process with Algorithm.from_checkpoint alone ("spit_env:Spit-v0" imports spit_env).
    model = {"fcnet_hiddens": list(args.hiddens), "fcnet_activation": "tanh",
             "head_fcnet_hiddens": [], "vf_share_layers": False,
             "mask_wait": args.mask_wait, "obs_mask": args.obs_mask,
             **rule_options(spit_config)}
    config = PPOConfig().training(
        train_batch_size_per_learner=args.train_batch_size, minibatch_size=args.minibatch_size,
        num_epochs=args.num_epochs, lr=args.lr, gamma=args.gamma, lambda_=args.gae_lambda,
        entropy_coeff=args.entropy_coeff).debugging(seed=args.seed)
    vector = args.mode == "bot" and args.vector_env
    envs = args.num_envs_per_runner or (VECTOR_ENVS if vector else PETTINGZOO_ENVS)
    runners = dict(num_env_runners=args.num_env_runners, num_envs_per_env_runner=envs,
                   rollout_fragment_length="auto", num_cpus_per_env_runner=1)
    if vector:
        return (
            config.environment(f"spit_env:{spit_env.GYM_ID}",
                               env_config={"opponent": args.opponent, "config": spit_config})
            .env_runners(gym_env_vectorize_mode="vector_entry_point", **runners)
            .rl_module(rl_module_spec=RLModuleSpec(module_class=MaskedPPOModule,
                                                   model_config=model))
        )
    probe = spit_env.parallel_env(spit_config)
    obs_space, act_space = probe.observation_space("player_0"), probe.action_space("player_0")
    specs = {LEARNER: RLModuleSpec(module_class=MaskedPPOModule, observation_space=obs_space,
                                   action_space=act_space, model_config=model)}
    if args.mode == "bot":
        specs[BOT] = RLModuleSpec(
            module_class=BotModule, observation_space=obs_space, action_space=act_space,
            model_config={"bot": args.opponent, "latency": args.latency, "seed": args.seed})
        mapping = map_learner_vs_bot
    else:
        mapping = map_self_play
    # bot mode: the agents are the roles, the learner's seat drawn per game by the env
    return (
        config.environment(SpitMultiAgentEnv, env_config={"latency": args.latency,
                                                          "roles": args.mode == "bot"})
        .env_runners(**runners)
        .multi_agent(policies=set(specs), policy_mapping_fn=mapping,
                     policies_to_train=[LEARNER])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    )


# --- metrics --------------------------------------------------------------------------------------
def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def iteration_record(result: dict, seconds: float) -> dict:
    """The figures of one ``algo.train()`` result that metrics.json keeps."""
    runners = result.get("env_runners", {})
    timers = result.get("timers", {})
    returns = runners.get("module_episode_returns_mean", {}) or {}
    module_steps = runners.get("num_module_steps_sampled_lifetime") or {}
    trained = LEARNER if LEARNER in module_steps or LEARNER in returns else SINGLE
    return {
        "iteration": int(result.get("training_iteration", 0)),
        "env_steps": int(_number(result.get("num_env_steps_sampled_lifetime")) or 0),
        "agent_steps": int(sum(_number(v) or 0 for v in
                               (runners.get("num_agent_steps_sampled_lifetime") or {}).values())),
        "learner_steps": int(_number(module_steps.get(trained)) or 0),
        "episodes": int(_number(runners.get("num_episodes_lifetime")) or 0),
        "episode_len_mean": _number(runners.get("episode_len_mean")),
        # single-agent (the vector env): the episode's return is the learner's
        "learner_return_mean": _number(returns.get(trained, runners.get("episode_return_mean"))
                                       if trained == SINGLE else returns.get(trained)),
        "seconds": round(seconds, 3),
        "iteration_seconds": round(float(result.get("time_this_iter_s", 0.0)), 3),
        # RLlib's smoothed timers of the iteration's two phases
        "sample_seconds": _number(timers.get("env_runner_sampling_timer")),
        "learn_seconds": _number(timers.get("learner_update_timer")),
    }


def _write(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def evaluate(checkpoint: Path, opponents, deals: int, *, latency: str, seed: int,
             max_game_ms: int, runner=None, show_progress: bool = True) -> dict[str, dict]:
    """Win rate of the checkpoint's learner (deterministic) against each opponent.

    Args:
        checkpoint: the algorithm checkpoint (``agents.rllib.find_module_dir``).
        opponents: names or profiles.
        deals: duplicate deals of ``seed`` per opponent (``agents.arena.play_pairing``).
        latency: both seats' latency, a preset name or whole ms.
        seed: the game seed of the deals.
        max_game_ms: simulated ms after which a game is truncated (D16).
        runner: runs the pairings' jobs, as in ``agents.arena.play_pairing`` (None: here).
        show_progress: each opponent's games show their progress (``spit_env.progress``).

    Returns:
        ``{opponent: PairingResult as a dict}`` (win_rate, ci_low, ci_high, games, ...).
    """
    from agents.arena import Player
    from experiments.ppo.evaluation import evaluate as evaluate_player

    me = Player("rllib", "rllib", None, {"path": str(checkpoint)})
    return evaluate_player(me, opponents, deals, latency=latency, seed=seed,
                           max_game_ms=max_game_ms, runner=runner, desc="final evaluation",
                           show_progress=show_progress)


@contextlib.contextmanager
def _without_api_stack_notice():
    # RLlib logs a WARNING on every run that PPO runs on the new API stack, its default (which
    # this script asks for): that one record is dropped, every other warning still shows
    class Drop(logging.Filter):
        def filter(self, record):
            return "on the new API stack!" not in record.getMessage()

    log = logging.getLogger("ray.rllib.algorithms.algorithm_config")
    drop = Drop()
    log.addFilter(drop)
    try:
        yield
    finally:
        log.removeFilter(drop)


def train(args: Args) -> dict:
    """Train, checkpoint, evaluate; returns the metrics.json content.

    Raises:
        ArgumentError: a bad argument value (see :func:`validate`).
        RayMissingError: Ray is not installed.
        RayConnectError: --address cannot be reached or joined.
    """
    validate(args)
    from agents.rllib import require_ray

    require_ray()
    import torch

    from experiments.cluster.connect import ray_session
    from experiments.cluster.tasks import run_jobs_on_ray
    from spit_env.config import SpitConfig
    from spit_env.latency import Latency
    from spit_env.progress import Progress, counted

    torch.set_num_threads(args.torch_threads)
    out = (Path(args.out) if args.out is not None
           else Path("runs") / f"rllib_{args.mode}_s{args.seed}")
    spit_config = SpitConfig(latency=Latency.parse(args.latency))
    num_cpus = args.num_cpus or max(os.cpu_count() or 1, args.num_env_runners + 1)
    metrics: dict = {"args": {k: (str(v) if isinstance(v, Path) else v)
                              for k, v in asdict(args).items()},
                     "iterations": [], "speed": None, "final": None}
    where = "a local Ray on 127.0.0.1" if args.address is None else f"Ray at {args.address}"
    print(f"starting {where}...", file=sys.stderr, flush=True)  # a log line: stderr
    t_ray = time.perf_counter()
    with ray_session(args.address, num_cpus=num_cpus, timeout_s=args.connect_timeout) as ray:
        ray_seconds = time.perf_counter() - t_ray
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if args.num_env_runners > cpus:
            raise ArgumentError(f"--num-env-runners ({args.num_env_runners}) needs that many "
                                f"CPUs; the Ray cluster has {cpus}")
        out.mkdir(parents=True, exist_ok=True)
        t_build = time.perf_counter()
        with _without_api_stack_notice():
            algo = build_config(args, spit_config).build_algo()
        build_seconds = time.perf_counter() - t_build
        metrics["ray"] = {"address": args.address or "local", "cpus": cpus,
                          "version": ray.__version__, "start_seconds": round(ray_seconds, 2),
                          "build_seconds": round(build_seconds, 2)}
        print(f"Ray ready in {ray_seconds:.1f} s ({cpus} CPUs), the algorithm and its "
              f"{counted(args.num_env_runners, 'env runner')} in {build_seconds:.1f} s",
              file=sys.stderr, flush=True)
        try:
            t0 = time.perf_counter()
            last: dict = {}

            def postfix() -> str | None:
                if not last:
                    return None
                ret = last["learner_return_mean"]
                return (f"{last['env_steps']:,} env steps, learner return "
                        f"{'n/a' if ret is None else f'{ret:+.2f}'}")

            bar = Progress(args.iterations, "RLlib training", unit="iterations",
                           enabled=args.progress_bar, postfix=postfix)
            for i in range(args.iterations):
                result = algo.train()
                rec = iteration_record(result, time.perf_counter() - t0)
                metrics["iterations"].append(rec)
                last.update(rec)
                bar.update(1)
                if args.checkpoint_every and (i + 1) % args.checkpoint_every == 0 \
                        and i + 1 < args.iterations:
                    algo.save_to_path(str((out / "checkpoints" / f"iter_{i + 1:04d}").resolve()))
                _write(out / "metrics.json", metrics)
            train_seconds = time.perf_counter() - t0
            bar.close()
            checkpoint = out / "checkpoint"
            algo.save_to_path(str(checkpoint.resolve()))
        finally:
            algo.stop()  # frees the env runners' CPUs for the evaluation tasks
        last = metrics["iterations"][-1]
        metrics["speed"] = {
            "train_seconds": round(train_seconds, 2),
            "env_steps": last["env_steps"],
            "agent_steps": last["agent_steps"],
            "learner_steps": last["learner_steps"],
            "episodes": last["episodes"],
            "env_steps_per_second": round(last["env_steps"] / train_seconds, 1),
            "learner_steps_per_second": round(last["learner_steps"] / train_seconds, 1),
            "episodes_per_second": round(last["episodes"] / train_seconds, 2),
            "note": ("env step = one learner decision (the vector env of Spit-v0)"
                     if args.mode == "bot" and args.vector_env else
                     "env step = one decision epoch of both players; learner steps = the "
                     "learner's own decisions (forced WAITs included)")
                    + "; wall time of sampling and learning together, on a shared machine",
        }
        _write(out / "metrics.json", metrics)
        if args.eval_games:
            t1 = time.perf_counter()
            results = evaluate(checkpoint, args.eval_opponents, args.eval_games,
                               latency=args.latency, seed=args.eval_seed,
                               max_game_ms=args.eval_max_game_ms, runner=run_jobs_on_ray,
                               show_progress=args.progress_bar)
            metrics["final"] = {"deals": args.eval_games, "games_per_opponent": 2 * args.eval_games,
                                "seed": args.eval_seed, "latency": args.latency,
                                "seconds": round(time.perf_counter() - t1, 2), "results": results}
            _write(out / "metrics.json", metrics)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        _write(args.json, metrics)
    _print_summary(metrics, out)
    return metrics


def _print_summary(metrics: dict, out: Path) -> None:
    s = metrics["speed"]
    print(f"{s['env_steps']:,} env steps ({s['learner_steps']:,} learner decisions) in "
          f"{s['train_seconds']:.0f} s: {s['env_steps_per_second']:,.0f} env steps/s")
    final = metrics.get("final")
    if final:
        print(f"evaluation, {final['deals']} duplicate deals per opponent (95% Wilson interval):")
        for name, r in final["results"].items():
            print(f"  vs {name:>8}: {r['win_rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  "
                  f"wins {r['wins_a']}, losses {r['wins_b']}, draws {r['draws']}")
    print(f"run folder {out} (checkpoint: {out / 'checkpoint'})")


def main(argv=None) -> int:
    """Command-line entry point: parse with tyro, train, print the evaluation."""
    from agents.rllib import RayMissingError
    from experiments.cli import help_values, tyro_cli
    from experiments.cluster.connect import RayConnectError

    args = tyro_cli(Args, argv, prog="python -m experiments.train_rllib",
                    description=__doc__.split("\n\n")[0],
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
