"""Throughput of spit-env, in one process and one run.

    python -m experiments.benchmark                       # B = 1, 64, 1024, 4096; 5 repeats
    python -m experiments.benchmark --quick --json out.json
    python -m experiments.benchmark --sizes 4096 --repeats 9

Rows of the table:

* ``core B=n``: the batched core (``spit_env.core``) stepping n games at once with a uniformly
  random legal move on both seats. One *game-step* is one ``core.step`` of one game (both seats'
  moves); the timed loop includes the action mask (``core.legal_action_mask``), the random choice
  among the mask's legal actions (vectorised), the step and the auto-reset of finished games.
* ``reference``: the scalar reference game (``spit_env.reference.ReferenceGame``), one game at a
  time, doing the same work (both masks, a random legal move per seat, the step, a new game when
  one ends).
* ``core+obs B=n``: the same loop, also building both seats' observations (``core.observe``,
  (n, 2, D) float32) at every step.
* ``ratio``: core game-steps/s divided by the reference's, per B.
* environment adapters (PettingZoo ParallelEnv, SB3 SpitVecEnv, ``gymnasium.make_vec("Spit-v0")``
  native against Gymnasium's sync vector env): see ``ADAPTER_BENCHMARKS``.
* ``observation path B=n``: what building the observations adds to a game-step, in µs
  (1 / core+obs - 1 / core, wall and CPU time). When B is in both ``--sizes`` and
  ``--observed-sizes``, the core and core+obs runs alternate and the figure is the median over
  those neighbouring pairs.
* ``planner 16x3s`` / ``planner-fast`` / ``planner B=256 vs racer``: the planning bot's planned
  decisions per second in seat 0 of 256 games against racer (``bench_planner``), at the fixed
  budget of 16 rollouts per move and a 3 s horizon and at each profile's budget
  (``PLANNER_BUDGETS``), with the time per decision, the rollouts' core game-steps per CPU
  second and both as ratios to the reference game of the same run.

* ``expert`` / ``expert-fast`` / ``expert network rollouts B=256 vs racer``: the same for the
  search player (``agents.expert``: the planner with the shipped network as its reference move),
  at each profile's budget and with the network also playing the rollouts (``EXPERT_BUDGETS``),
  with the wall-clock and CPU ms per planned decision.
* ``--search PLAYER ...``: the same for any search players (``planner:rollouts=32``,
  ``expert:prune=0.1:leaf_value=value``, ...), ``--search-steps`` epochs each, their repeats
  interleaved: the costs of several budgets compared in one run.

``--only core observed planner expert`` measures some groups of rows (``GROUPS``); the reference
game is always measured, since every ratio is to it.

Figures are the median over ``--repeats`` runs of wall-clock time (``time.perf_counter``); the CPU
time of the process is reported next to it, because a shared machine inflates wall time. The
target of the design is >= 1,000,000 game-steps/s at B = 4096 on one core.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from experiments.cli import ArgumentParser
from spit_env import core, rules
from spit_env.config import SpitConfig

__all__ = ["random_legal_actions", "bench_core", "bench_core_observed", "bench_reference",
           "bench_planner", "run", "main", "ADAPTER_BENCHMARKS", "GROUPS", "PLANNER_BUDGETS",
           "EXPERT_BUDGETS"]

def _select_tables(width: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Lookup tables of the set bits of every ``width``-bit word.

    Returns:
        ``(count, select)``: (2**width,) int64, the number of set bits of word x; and
        (2**width * width,) int64, at ``x * width + j`` the position of x's j-th set bit (j
        counted from the lowest bit).
    """
    words = np.arange(1 << width)
    bits = (words[:, None] >> np.arange(width)) & 1
    count = bits.sum(axis=1).astype(np.int64)
    select = np.zeros((1 << width, width), np.int64)
    for x in range(1 << width):
        on = np.flatnonzero(bits[x])
        select[x, : on.size] = on
    return count, select.reshape(-1)


_COUNT12, _SELECT12 = _select_tables(12)


def random_legal_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per mask row, vectorised, at the least cost.

    The same distribution as ``spit_env.policy.uniform_legal_actions`` (the package's helper for
    "any legal move"), drawn another way: one uniform per row instead of one per action, so that
    the timed loops measure the environment and not the choice of moves.

    Args:
        mask: (..., A) bool legal-action mask with at least one True per row (A <= 24).
        rng: the random source.

    Returns:
        (...) int64 action ids. Each row's choice is uniform over its True entries: the row is
        packed into a 24-bit word split in two 12-bit halves, j ~ U{0, ..., k-1} is drawn with k
        the number of legal actions, and the j-th set bit is read from lookup tables.
    """
    if mask.shape[-1] > 24:
        raise ValueError(f"mask must have at most 24 actions, got {mask.shape[-1]}")
    packed = np.packbits(mask, axis=-1, bitorder="little").astype(np.int64)
    x = packed[..., 0]
    for i in range(1, packed.shape[-1]):
        x = x | (packed[..., i] << (8 * i))
    lo, hi = x & 0xFFF, x >> 12
    c_lo = _COUNT12.take(lo)
    j = (rng.random(x.shape) * (c_lo + _COUNT12.take(hi))).astype(np.int64)
    in_lo = j < c_lo
    pos = _SELECT12.take(np.where(in_lo, lo * 12 + j, hi * 12 + (j - c_lo)))
    return np.where(in_lo, pos, pos + 12)


def _timed(fn: Callable[[], int]) -> tuple[float, float, int]:
    """``(wall s, CPU s, game-steps)`` of one call of ``fn``, which returns its game-steps."""
    w0, c0 = time.perf_counter(), time.process_time()
    n = fn()
    return time.perf_counter() - w0, time.process_time() - c0, n


def bench_core(config: SpitConfig, batch: int, steps: int, seed: int = 0, *,
               observe: bool = False) -> tuple[float, float]:
    """``(wall, CPU)`` game-steps/s of the core, B = ``batch`` games stepped ``steps`` times.

    Args:
        config: the games' config.
        batch: B, the games stepped at once (finished ones are reset with new game ids).
        steps: the timed core steps (after a warm-up of a twentieth of them, at least 5).
        seed: seeds the games and the random legal moves.
        observe: also build both seats' observations (``core.observe``, (B, 2, D) float32) at
            every step, as a multi-agent trainer reading every game's state would.
    """
    rng = np.random.default_rng(seed)
    state = core.init(config, batch, seed)
    next_id = [batch]

    def loop(n: int) -> int:
        nonlocal state
        for _ in range(n):
            if observe:
                core.observe(state)
            actions = random_legal_actions(core.legal_action_mask(state), rng)
            state, out = core.step(state, actions)
            over = state.phase == rules.PHASE_OVER
            if over.any():
                ids = next_id[0] + np.arange(batch, dtype=np.int64)
                next_id[0] += batch
                core.reset(state, over, ids)
        return n * batch

    loop(max(5, steps // 20))  # warm up (lookup tables, caches)
    wall, cpu, n = _timed(lambda: loop(steps))
    return n / wall, n / cpu


def bench_core_observed(config: SpitConfig, batch: int, steps: int,
                        seed: int = 0) -> tuple[float, float]:
    """:func:`bench_core` with both seats' observations built at every step."""
    return bench_core(config, batch, steps, seed, observe=True)


def bench_reference(config: SpitConfig, steps: int, seed: int = 0) -> tuple[float, float]:
    """(wall, CPU) game-steps/s of the reference game with the same random-legal work."""
    from spit_env.reference import ReferenceGame

    rng = np.random.default_rng(seed)
    game_id = [0]
    game = [ReferenceGame(config, seed, 0)]

    def loop(n: int) -> int:
        for _ in range(n):
            g = game[0]
            acts = []
            for p in range(rules.N_PLAYERS):
                legal = [a for a, ok in enumerate(g.legal_action_mask(p)) if ok]
                acts.append(legal[int(rng.integers(len(legal)))])
            g.step(acts[0], acts[1])
            if g.done:
                game_id[0] += 1
                game[0] = ReferenceGame(config, seed, game_id[0])
        return n

    loop(max(5, steps // 20))
    wall, cpu, n = _timed(lambda: loop(steps))
    return n / wall, n / cpu


# --- environment adapters ------------------------------------------------------------------------
# Rows of the adapters: each entry is a callable (args) -> list of row dicts with at least "name",
# "steps_per_s" (wall, median over repeats) and "unit" (what a step is); _adapter_rows below adds
# the PettingZoo ParallelEnv loop and SpitVecEnv steps/s with a greedy and a racer opponent.
ADAPTER_BENCHMARKS: list[Callable[[argparse.Namespace], list[dict]]] = []


def bench_parallel_env(config: SpitConfig, steps: int, seed: int = 0) -> tuple[float, float]:
    """``(wall, CPU)`` steps/s of the PettingZoo ParallelEnv loop over ``steps`` steps.

    The loop: both agents' random legal moves read from the observations' action masks,
    ``env.step`` (events included), ``reset`` at the end of a game. One step = one game-step, as
    in the core rows.
    """
    import spit_env

    rng = np.random.default_rng(seed)
    env = spit_env.parallel_env(config)
    obs = [env.reset(seed=seed)[0]]

    def loop(n: int) -> int:
        for _ in range(n):
            o = obs[0]
            masks = np.stack([o[a]["action_mask"] for a in env.agents]).astype(bool)
            acts = random_legal_actions(masks, rng)
            o, *_ = env.step({a: int(acts[i]) for i, a in enumerate(env.agents)})
            obs[0] = o if env.agents else env.reset()[0]
        return n

    loop(max(5, steps // 20))
    wall, cpu, n = _timed(lambda: loop(steps))
    return n / wall, n / cpu


def bench_vec_env(config: SpitConfig, batch: int, steps: int, seed: int = 0,
                  opponent: str = "greedy", training: bool = False) -> tuple[float, float]:
    """``(wall, CPU)`` learner decisions/s of ``SpitVecEnv(batch, opponent=opponent)``.

    The learner plays random legal moves; the loop is ``action_masks()``, the choice and
    ``step`` (which runs the core on while the learner is busy, with the opponent bot deciding in
    batch, and auto-resets).

    Args:
        config: the games' config.
        batch: the VecEnv's num_envs.
        steps: the timed ``step`` calls.
        seed: seeds the environment and the learner's moves.
        opponent: the opponent policy's name or profile.
        training: the environment as ``experiments.train_ppo`` runs it by default: up to
            ``FORCED_WAIT_SKIPS`` forced WAITs played per step (the learner may WAIT beside other
            moves: ``--no-mask-wait``, the default).
    """
    from spit_env.envs.vec import SpitVecEnv

    rng = np.random.default_rng(seed)
    skips = 0
    if training:
        from experiments.ppo.envs import FORCED_WAIT_SKIPS as skips
    venv = SpitVecEnv(batch, opponent=opponent, config=config, seed=seed, skip_forced_waits=skips)
    venv.reset()

    def loop(n: int) -> int:
        for _ in range(n):
            masks = venv.action_masks()
            venv.step(random_legal_actions(masks, rng))
        return n * batch

    loop(max(5, steps // 20))
    wall, cpu, n = _timed(lambda: loop(steps))
    return n / wall, n / cpu


def _adapter_rows(args: argparse.Namespace) -> list[dict]:
    config = SpitConfig()
    scale = 10 if args.quick else 1
    rows = []
    core1 = _median_rate(lambda: bench_core(config, 1, 2000 // scale), args.repeats)
    wall, cpu = _median_rate(lambda: bench_parallel_env(config, 2000 // scale), args.repeats)
    rows.append({"name": "ParallelEnv loop", "steps_per_s": wall, "cpu_steps_per_s": cpu,
                 "unit": "game-steps/s", "core_steps_per_s": core1[0],
                 "ratio_to_core": wall / core1[0], "ratio_to": "core B=1"})
    # the PPO training sizes (num_envs 64-512), greedy and the strongest bot as opponents; the
    # last row is train_ppo's default environment (512 games, forced WAITs skipped)
    for b, opponent, training in ((1, "greedy", False), (64, "greedy", False),
                                  (256, "greedy", False), (512, "greedy", False),
                                  (256, "racer", False), (512, "greedy", True)):
        steps = max(10, {1: 600, 64: 150, 256: 60, 512: 40}[b] // scale)
        core_b = _median_rate(lambda b=b, steps=steps: bench_core(config, b, 4 * steps),
                              args.repeats)
        wall, cpu = _median_rate(lambda b=b, steps=steps, o=opponent, t=training:
                                 bench_vec_env(config, b, steps, opponent=o, training=t),
                                 args.repeats)
        rows.append({"name": f"SpitVecEnv B={b} {opponent}{' train' if training else ''}",
                     "steps_per_s": wall, "cpu_steps_per_s": cpu,
                     "unit": "learner decisions/s (each runs several core game-steps)"
                             + (", train_ppo's forced-WAIT skips" if training else ""),
                     "core_steps_per_s": core_b[0], "ratio_to_core": wall / core_b[0],
                     "ratio_to": f"core B={b} game-steps/s"})
    return rows


_adapter_rows.group = "adapters"
ADAPTER_BENCHMARKS.append(_adapter_rows)


def bench_gym_vector(config: SpitConfig, batch: int, steps: int, mode: str, seed: int = 0,
                     opponent: str = "greedy") -> tuple[float, float]:
    """``(wall, CPU)`` learner decisions/s of ``gymnasium.make_vec("Spit-v0", batch)``.

    Args:
        config: the games' config.
        batch: num_envs.
        steps: the timed ``step`` calls.
        mode: ``"vector_entry_point"`` (one batched core, ``spit_env.envs.vector``) or
            ``"sync"`` (Gymnasium's SyncVectorEnv of ``batch`` Spit-v0 envs).
        seed: seeds the games and the learner's random legal moves.
        opponent: the opponent policy's name or profile.
    """
    import gymnasium

    import spit_env

    rng = np.random.default_rng(seed)
    env = gymnasium.make_vec(spit_env.GYM_ID, num_envs=batch, vectorization_mode=mode,
                             opponent=opponent, config=config)
    _, infos = env.reset(seed=seed)

    def masks_now(infos):
        if "action_mask" in infos and infos.get("_action_mask", np.ones(1, bool)).all():
            return infos["action_mask"]
        return np.stack(env.call("action_masks"))  # the sub-envs' own (SB3's convention)

    def loop(n: int) -> int:
        info = infos
        for _ in range(n):
            *_, info = env.step(random_legal_actions(masks_now(info), rng))
        return n * batch

    loop(max(5, steps // 20))
    wall, cpu, n = _timed(lambda: loop(steps))
    env.close()
    return n / wall, n / cpu


def _vector_rows(args: argparse.Namespace) -> list[dict]:
    """The native vector env against Gymnasium's sync one, interleaved repeat by repeat."""
    config = SpitConfig()
    scale = 10 if args.quick else 1
    rows = []
    for b in (64, 512):
        steps = max(10, {64: 150, 512: 40}[b] // scale)
        runs = {"sync": [], "vector_entry_point": []}
        for _ in range(args.repeats):
            for mode, out in runs.items():
                out.append(bench_gym_vector(config, b, steps, mode))
        sync, native = ((statistics.median(r[0] for r in runs[m]),
                         statistics.median(r[1] for r in runs[m])) for m in runs)
        for name, (wall, cpu) in (("sync", sync), ("vector_entry_point", native)):
            rows.append({"name": f"make_vec B={b} {name}", "steps_per_s": wall,
                         "cpu_steps_per_s": cpu,
                         "unit": "learner decisions/s (Spit-v0 vs greedy, random legal moves)",
                         "core_steps_per_s": sync[0], "ratio_to_core": wall / sync[0],
                         "cpu_ratio": cpu / sync[1], "ratio_to": f"make_vec B={b} sync"})
    return rows


_vector_rows.group = "vector"
ADAPTER_BENCHMARKS.append(_vector_rows)


def bench_planner(config: SpitConfig, batch: int, steps: int, profile: str = "planner",
                  seed: int = 0, **kwargs) -> dict:
    """The planner's decisions per second against racer, and its rollouts' game-steps per second.

    ``profile`` (with ``kwargs`` overriding its budget) plays seat 0 of ``batch`` games against
    racer (seat 1) for ``steps`` epochs. A *planned decision* is one with two or more legal
    moves (with one, the planner plays it without rollouts). The timed loop is the tournament's
    own (``agents.arena.Match``: the observations, masks, the public table, racer's moves, the
    step and the refill of finished rows).

    Returns:
        dict: ``wall`` and ``cpu`` planned decisions/s; ``rollouts_per_decision``;
        ``rollout_steps_per_decision`` (core row-steps simulated per planned decision) and
        ``cpu_rollout_steps`` (those row-steps per CPU second of the whole loop).
    """
    from agents.arena import Match, Player

    # more game ids than the rows can finish in the run, so the batch stays full
    player = Player(profile, profile, None, dict(kwargs))
    match = Match(player, "racer", np.arange(1000 * batch), config=config, seed=seed,
                  batch_size=batch)
    planner = match.policies[0]
    count = [0, 0, 0]  # planned decisions, rollouts, rollout row-steps

    def loop(n: int) -> int:
        for _ in range(n):
            match.step()
            count[0] += planner.last_stats["decisions"]
            count[1] += planner.last_stats["rollouts"]
            count[2] += planner.last_stats["rollout_steps"]
        return count[0]

    loop(2)  # warm up
    count[:] = [0, 0, 0]
    wall, cpu, n = _timed(lambda: loop(steps))
    n = max(n, 1)
    return {"wall": n / wall, "cpu": n / cpu, "rollouts_per_decision": count[1] / n,
            "rollout_steps_per_decision": count[2] / n, "cpu_rollout_steps": count[2] / cpu}


#: the planner rows: (name, profile, budget overrides); the fixed budget of 16 rollouts and a
#: 3 s horizon is measured whatever the profiles' budgets are
PLANNER_BUDGETS = (("planner 16x3s", "planner", dict(rollouts=16, horizon_ms=3000)),
                   ("planner-fast", "planner-fast", {}), ("planner", "planner", {}))


#: the search player's rows (``agents.expert``), as PLANNER_BUDGETS: each profile, and the
#: default one with the network also in the rollouts
EXPERT_BUDGETS = (("expert", "expert", {}), ("expert-fast", "expert-fast", {}),
                  ("expert network rollouts", "expert", dict(rollout_policy="network")))


def _search_rows(budgets, args: argparse.Namespace) -> list[dict]:
    """The rows of the search players ``budgets`` ((name, profile, overrides) triples)."""
    config = SpitConfig()
    rows = []
    for name, profile, kwargs in budgets:
        steps = 4 if args.quick else 40
        runs = [bench_planner(config, 256, steps, profile, **kwargs) for _ in range(args.repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        budget = {**_search_profile(profile), **kwargs}
        rows.append({"name": f"{name} B=256 vs racer", "steps_per_s": med["wall"],
                     "cpu_steps_per_s": med["cpu"],
                     "unit": "planned decisions/s (2+ legal moves; all rollouts included)",
                     "budget": budget, "ms_per_decision": 1000.0 / med["wall"],
                     "cpu_ms_per_decision": 1000.0 / med["cpu"],
                     "rollouts_per_decision": med["rollouts_per_decision"],
                     "rollout_steps_per_decision": med["rollout_steps_per_decision"],
                     "cpu_rollout_steps_per_s": med["cpu_rollout_steps"]})
    return rows


def _planner_rows(args: argparse.Namespace) -> list[dict]:
    return _search_rows(PLANNER_BUDGETS, args)


def _expert_rows(args: argparse.Namespace) -> list[dict]:
    return _search_rows(EXPERT_BUDGETS, args)


def _given_search_rows(args: argparse.Namespace) -> list[dict]:
    """The rows of ``--search``'s players, their repeats interleaved.

    One budget's run after another's, round after round, so that a drifting load on a shared
    machine falls on all of them alike: the costs compare within the run.
    """
    from agents.screen import parse_player

    config = SpitConfig()
    steps = max(4, getattr(args, "search_steps", 300) // (10 if args.quick else 1))
    players = [parse_player(spec) for spec in getattr(args, "search", None) or []]
    runs: dict[int, list] = {i: [] for i in range(len(players))}
    for _ in range(args.repeats):
        for i, p in enumerate(players):
            runs[i].append(bench_planner(config, 256, steps, p.policy, **p.kwargs))
    rows = []
    for i, p in enumerate(players):
        med = {k: statistics.median(r[k] for r in runs[i]) for k in runs[i][0]}
        rows.append({"name": f"{p.label} B=256 vs racer", "steps_per_s": med["wall"],
                     "cpu_steps_per_s": med["cpu"],
                     "unit": "planned decisions/s (2+ legal moves; all rollouts included)",
                     "budget": {**_search_profile(p.policy), **p.kwargs},
                     "ms_per_decision": 1000.0 / med["wall"],
                     "cpu_ms_per_decision": 1000.0 / med["cpu"],
                     "cpu_ms_per_decision_runs": [round(1000.0 / r["cpu"], 4) for r in runs[i]],
                     "rollouts_per_decision": med["rollouts_per_decision"],
                     "rollout_steps_per_decision": med["rollout_steps_per_decision"],
                     "cpu_rollout_steps_per_s": med["cpu_rollout_steps"], "steps": steps})
    return rows


_given_search_rows.group = "search"
ADAPTER_BENCHMARKS.append(_given_search_rows)


def _search_profile(profile: str) -> dict:
    from agents.expert import PROFILES as EXPERT
    from agents.planner import PROFILES as PLANNER

    return dict({**PLANNER, **EXPERT}.get(profile, {}))


_planner_rows.group = "planner"
ADAPTER_BENCHMARKS.append(_planner_rows)
_expert_rows.group = "expert"
ADAPTER_BENCHMARKS.append(_expert_rows)

#: the groups of rows ``--only`` selects (the reference game is always measured: every ratio
#: is to it)
GROUPS = ("core", "observed", "adapters", "vector", "planner", "expert", "search")


def _median_rate(fn: Callable[[], tuple[float, float]], repeats: int) -> tuple[float, float]:
    runs = [fn() for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def _observation_path(batch: int, pairs, observed: dict, plain: dict) -> dict:
    """The observation path row of B = ``batch``: µs per game-step, wall and CPU time.

    With ``pairs`` (the alternating (core, core+obs) runs' (wall, CPU) rates), the median over
    the pairs of 1 / core+obs - 1 / core; else the same of the two medians.
    """
    if pairs:
        wall, cpu = (statistics.median(1e6 * (1 / o[k] - 1 / c[k]) for c, o in pairs)
                     for k in (0, 1))
    else:
        wall = 1e6 * (1 / observed["game_steps_per_s"] - 1 / plain["game_steps_per_s"])
        cpu = 1e6 * (1 / observed["cpu_game_steps_per_s"] - 1 / plain["cpu_game_steps_per_s"])
    return {"batch_size": batch, "us_per_game_step": wall, "cpu_us_per_game_step": cpu,
            "paired_runs": len(pairs or ())}


def run(args: argparse.Namespace) -> dict:
    """Run every benchmark; return the JSON-serialisable results."""
    config = SpitConfig()
    core_steps = {1: 2000, 64: 600, 1024: 200, 4096: 100}
    ref_steps = 4000
    if args.quick:
        core_steps = {k: max(10, v // 10) for k, v in core_steps.items()}
        ref_steps = 400
    results = {
        "config": config.to_dict(),
        "machine": {"python": sys.version.split()[0], "numpy": np.__version__,
                    "platform": platform.platform(), "processor": platform.processor()},
        "repeats": args.repeats,
        "unit": "game-steps/s (one step of one game: both seats' moves, mask and random choice "
                "included)",
        "core": [],
        "core_observed": [],
        "adapters": [],
    }
    only = set(getattr(args, "only", None) or GROUPS)
    sizes = list(args.sizes) if "core" in only else []
    observed = list(args.observed_sizes) if "observed" in only else []
    benches = [b for b in ADAPTER_BENCHMARKS if getattr(b, "group", "adapters") in only]
    progress = _progress(len(sizes) + len(observed) + 1 + len(benches), args.quiet)
    ref_wall, ref_cpu = _median_rate(lambda: bench_reference(config, ref_steps), args.repeats)
    results["reference"] = {"game_steps_per_s": ref_wall, "cpu_game_steps_per_s": ref_cpu}
    progress()
    # a size in both groups runs its core and core+obs repeats alternately, so that the
    # observation path compares neighbouring runs (a shared machine's load drifts)
    paired = {}
    for b in sorted(set(sizes) & set(observed)):
        steps = core_steps.get(b, max(10, 400_000 // (b * (10 if args.quick else 1))))
        paired[b] = [(bench_core(config, b, steps), bench_core_observed(config, b, steps))
                     for _ in range(args.repeats)]
    for b in sizes:
        steps = core_steps.get(b, max(10, 400_000 // (b * (10 if args.quick else 1))))
        if b in paired:
            wall, cpu = (statistics.median(c[k] for c, _ in paired[b]) for k in (0, 1))
        else:
            wall, cpu = _median_rate(lambda b=b, steps=steps: bench_core(config, b, steps),
                                     args.repeats)
        state = core.init(config, b)
        results["core"].append({
            "batch_size": b, "game_steps_per_s": wall, "cpu_game_steps_per_s": cpu,
            "ratio_to_reference": wall / ref_wall, "cpu_ratio_to_reference": cpu / ref_cpu,
            "state_bytes_per_game": state.nbytes_per_game(),
        })
        progress()
    for b in observed:
        steps = core_steps.get(b, max(10, 400_000 // (b * (10 if args.quick else 1))))
        if b in paired:
            wall, cpu = (statistics.median(o[k] for _, o in paired[b]) for k in (0, 1))
        else:
            wall, cpu = _median_rate(
                lambda b=b, steps=steps: bench_core_observed(config, b, steps), args.repeats)
        results["core_observed"].append({
            "batch_size": b, "game_steps_per_s": wall, "cpu_game_steps_per_s": cpu,
            "ratio_to_reference": wall / ref_wall, "cpu_ratio_to_reference": cpu / ref_cpu,
        })
        progress()
    # the observation path: what building both seats' observations adds to a game-step; the
    # median over the alternating pairs of runs where there are some
    results["observation_path"] = [_observation_path(b, paired.get(b), o, c)
                                   for o in results["core_observed"] for c in results["core"]
                                   if c["batch_size"] == o["batch_size"]
                                   for b in (o["batch_size"],)]
    for bench in benches:
        for row in bench(args):
            if "rollouts_per_decision" in row:  # the planner's rows, as ratios to the reference
                row.update(ratio_to_reference=row["steps_per_s"] / ref_wall,
                           cpu_ratio_to_reference=row["cpu_steps_per_s"] / ref_cpu,
                           rollout_cpu_ratio_to_reference=row["cpu_rollout_steps_per_s"] / ref_cpu)
            results["adapters"].append(row)
        progress()
    return results


def _progress(total: int, quiet: bool) -> Callable[[], None]:
    from spit_env.progress import Progress

    bar = Progress(total, "benchmark", unit="figures", enabled=not quiet, every_s=10)

    def step() -> None:
        bar.update(1)
        if bar.n >= total:
            bar.close()
    return step


def format_table(results: dict) -> str:
    """The results as a plain-text table."""
    lines = [f"{'what':<22}{'game-steps/s':>16}{'(CPU time)':>16}{'x reference':>14}"
             f"{'bytes/game':>12}"]
    ref = results["reference"]
    lines.append(f"{'reference':<22}{ref['game_steps_per_s']:>16,.0f}"
                 f"{ref['cpu_game_steps_per_s']:>16,.0f}{1.0:>14.2f}{'':>12}")
    for row in results["core"]:
        lines.append(f"{'core B=' + str(row['batch_size']):<22}{row['game_steps_per_s']:>16,.0f}"
                     f"{row['cpu_game_steps_per_s']:>16,.0f}{row['ratio_to_reference']:>14.2f}"
                     f"{row['state_bytes_per_game']:>12}")
    for row in results.get("core_observed", []):
        lines.append(f"{'core+obs B=' + str(row['batch_size']):<22}"
                     f"{row['game_steps_per_s']:>16,.0f}"
                     f"{row['cpu_game_steps_per_s']:>16,.0f}{row['ratio_to_reference']:>14.2f}")
    for row in results.get("observation_path", []):
        lines.append(f"{'observation path B=' + str(row['batch_size']):<22}"
                     f"{row['us_per_game_step']:>13.3f} us{row['cpu_us_per_game_step']:>13.3f} us"
                     f"  per game-step (1/core+obs - 1/core)")
    for row in results["adapters"]:
        ratio = (f"  ({row['ratio_to_core']:.2f} x {row['ratio_to']})" if "ratio_to_core" in row
                 else "")
        if "ms_per_decision" in row:
            ratio = (f"  ({row['ms_per_decision']:.2f} ms per decision, CPU "
                     f"{row['cpu_ms_per_decision']:.2f} ms, "
                     f"{row['rollouts_per_decision']:.0f} rollouts each; CPU time "
                     f"{row['cpu_steps_per_s']:,.0f}/s = {row['cpu_ratio_to_reference']:.4f} x "
                     f"reference; rollouts {row['cpu_rollout_steps_per_s']:,.0f} game-steps/s "
                     f"= {row['rollout_cpu_ratio_to_reference']:.2f} x reference)")
        lines.append(f"{row['name']:<30}{row['steps_per_s']:>16,.0f}  {row.get('unit', '')}"
                     f"{ratio}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark from the command line (``--help``), print the table.

    Returns:
        the results, as :func:`run` gives them (also written to ``--json`` if given).
    """
    parser = ArgumentParser(prog="python -m experiments.benchmark",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 4096],
                        help="batch sizes B of the core (default: 1 64 1024 4096)")
    parser.add_argument("--observed-sizes", type=int, nargs="*", default=[4096],
                        help="batch sizes of the core row that also builds both seats' "
                             "observations at every step (default: 4096; none: no such row)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed runs per figure; the median is reported (default 5)")
    parser.add_argument("--only", nargs="+", choices=GROUPS, metavar="GROUP",
                        help="measure only these groups of rows: " + ", ".join(GROUPS)
                             + " (default: all; the reference game is always measured)")
    parser.add_argument("--search", nargs="+", default=[], metavar="PLAYER",
                        help="search players to measure beside each other, as the screen and "
                             "search_curve take them (planner:rollouts=32:horizon_ms=2000, "
                             "expert:prune=0.1, ...): a row each, their repeats interleaved "
                             "(the 'search' group; with --only search, these rows alone)")
    parser.add_argument("--search-steps", type=int, default=300,
                        help="epochs of the 256 games each --search run plays (default: "
                             "%(default)s, about 30 s of game time from the deal)")
    parser.add_argument("--quick", action="store_true", help="10x fewer steps (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--quiet", action="store_true", help="no progress (no bar, no lines)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if any(b < 1 for b in args.sizes + args.observed_sizes):
        parser.error("--sizes must be >= 1")
    if args.search_steps < 1:
        parser.error("--search-steps must be >= 1")
    if args.search:
        from agents.screen import parse_player, player_problem
        from spit_env.policy import make_policy

        for spec in args.search:
            try:
                player = parse_player(spec)
                problem = player_problem(player) or (
                    None if hasattr(make_policy(player.policy, **player.kwargs), "totals")
                    else f"{spec!r} is not a search player (planner, expert or their profiles)")
            except ValueError as err:
                problem = str(err)
            if problem:
                parser.error(f"--search: {problem}")
    results = run(args)
    print(format_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"wrote {args.json}")
    return results


if __name__ == "__main__":
    main()
