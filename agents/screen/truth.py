"""The truth set: positions with every legal move's long-run value, built, saved and loaded.

For each position (:mod:`agents.screen.positions`) every legal move is valued by ``rollouts``
racer rollouts from the deciding seat's public table, run to their natural end (the round over
or the game over: no horizon), in the planner's units: the card difference over 52 plus
``win_weight`` for a game won (minus for one lost) in the rollout. This is the planner's own
search (``agents.planner.PlannerBot.plan``) at a large budget with the horizon out of reach and
racer's move of the position as its reference: the moves of a position share their rollouts'
hidden-card arrangements and random streams (common random numbers), and each move's mean
difference to racer's move comes with its paired standard error.

**Randomness.** Position i's rollouts draw from its own key (``truth_key``, a hash of the
position's policy key and the build seed), its players from its policy key (``policy_key``,
:func:`agents.screen.positions.policy_keys`), so a position's values do not depend on the other
positions valued beside it: a build in one process and one spread over Ray tasks
(``experiments.cluster.tasks.run_jobs_on_ray``) write the same file, byte for byte.

**The file** (:func:`save_truth`, :func:`load_truth`): an ``.npz`` written with fixed entry times
(so equal contents give equal bytes), holding the positions' core-state arrays, seats,
observations and masks, the keys, racer's moves, the values and a JSON ``meta`` entry (version,
the command that made it, its commit, the settings). :data:`TRUTH_VERSION` is the version this
code reads; a file of another version is refused in one line.
"""

from __future__ import annotations

import io
import json
import os
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from agents.planner import PlannerBot
from agents.screen.players import player_moves
from agents.screen.positions import Positions, collect_positions, policy_keys
from spit_env import core, rules, streams
from spit_env.checks import check_int
from spit_env.config import SpitConfig
from spit_env.progress import counted

__all__ = ["TRUTH_VERSION", "SOURCES", "HORIZON_MS", "TruthSet", "TruthJob", "build_truth",
           "value_jobs", "save_truth", "load_truth", "shipped_truth_path", "TruthFileError"]

#: the version of the truth set's contents and format that this code reads and writes
TRUTH_VERSION = "1"
#: the players whose games the positions come from
SOURCES = ("racer", "greedy", "chain", "planner", "network")
#: the rollouts' horizon: beyond the longest round, so every rollout ends with its round or game
HORIZON_MS = 600_000
_FORMAT = "spit-env screen truth set"
_ENTRY_TIME = (1980, 1, 1, 0, 0, 0)  # every zip entry's time: equal contents, equal bytes


class TruthFileError(ValueError):
    """A file that is not a truth set this code reads (the message says why, in one line)."""


def shipped_truth_path() -> Path:
    """The truth set shipped with the package (``agents/screen/truth_v1.npz``)."""
    return Path(__file__).resolve().parent / f"truth_v{TRUTH_VERSION}.npz"


@dataclass(eq=False)
class TruthSet:
    """Positions with the value of every legal move (module docstring).

    Attributes:
        positions: the N positions (their core state, seat, observation, mask, source).
        policy_key: (N,) uint64 the key of each position's policy stream (the screen's players
            draw from ``spit_env.streams.RowStreams`` over these keys).
        truth_key: (N,) uint64 the key of each position's rollouts.
        racer_move: (N,) int64 racer's move (drawn from the policy key): the reference.
        diff: (N, 23) float32 each legal move's mean value minus racer's move's over the
            shared rollouts (0 at racer's move, NaN for an illegal move); planner units (a
            card is 1/52 ~ 0.019, a game won in the rollout ``win_weight``).
        se: (N, 23) float32 the paired standard error of ``diff`` (0 at racer's move, NaN for
            an illegal move).
        value: (N,) float32 the mean value of racer's move from the deciding seat.
        meta: the file's description (``version``, ``command``, ``commit``, ``seed``,
            ``rollouts``, ``win_weight``, ``horizon_ms``, ``config``, ``sources``, ...).
    """

    positions: Positions
    policy_key: np.ndarray
    truth_key: np.ndarray
    racer_move: np.ndarray
    diff: np.ndarray
    se: np.ndarray
    value: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def size(self) -> int:
        """N, the number of positions."""
        return self.positions.size

    @property
    def best_gain(self) -> np.ndarray:
        """(N,) float64 the best legal move's ``diff`` (>= 0: racer's move is among them)."""
        return np.nanmax(self.diff.astype(np.float64), axis=1)

    def best_gain_noise(self, draws: int = 200, seed: int = 0) -> float:
        """How much of the mean best gain the truth's noise is expected to add.

        The maximum over a position's moves of values that each carry their standard error
        exceeds the maximum of the true values on average. Taking the stored values as the true
        ones, this draws ``draws`` noisy copies of them (independent normal errors of the stored
        standard errors, a fixed seed) and returns the mean best gain of the copies minus the
        stored one: an estimate of the upward bias of :attr:`best_gain`'s mean.
        """
        rng = np.random.default_rng(seed)
        legal = np.isfinite(self.diff)
        diff = np.where(legal, self.diff, -np.inf).astype(np.float64)
        se = np.where(legal, self.se, 0.0).astype(np.float64)
        noisy = [np.maximum((diff + se * rng.standard_normal(se.shape)).max(axis=1), 0.0).mean()
                 for _ in range(draws)]
        return float(np.mean(noisy) - self.best_gain.mean())


# --- valuing positions -----------------------------------------------------------------------
class _StoredMoves:
    """A policy of observations: each position's stored move, found by its observation.

    The planner asks its reference policy with the observations of the rows it plans; the
    positions' observations are distinct (``collect_positions``), so the observation names the
    position whatever rows are asked together.
    """

    def __init__(self, obs: np.ndarray, moves: np.ndarray):
        self._moves = {row.tobytes(): int(m) for row, m in zip(obs, moves, strict=True)}

    def __call__(self, observations, action_masks, rng) -> np.ndarray:
        return np.array([self._moves[row.tobytes()] for row in observations], np.int64)


@dataclass(frozen=True)
class TruthJob:
    """Positions ``first`` .. ``first + count - 1`` of a build, valued together (one Ray task).

    Attributes:
        first: the index of the job's first position in the set.
        positions: its ``count`` positions.
        truth_key: (count,) uint64 their rollout keys.
        racer_move: (count,) int64 their reference moves.
    """

    first: int
    positions: Positions
    truth_key: np.ndarray
    racer_move: np.ndarray

    @property
    def count(self) -> int:
        """The number of positions."""
        return self.positions.size


def value_jobs(jobs: Sequence[TruthJob], report: Callable[[int, int], None] | None = None, *,
               rollouts: int, win_weight: float = 2.0) -> list[dict]:
    """Value every legal move of every job's positions (module docstring), job by job.

    Args:
        jobs: the jobs.
        report: called as ``report(k, n)`` once job k's n positions are valued.
        rollouts: rollouts per legal move, 2-4096.
        win_weight: the value of a game won within a rollout, on top of the card difference.

    Returns:
        per job a dict: ``diff``, ``se`` ((count, 23) float32, NaN for illegal moves),
        ``value`` ((count,) float32), ``rollout_steps`` and ``max_simulated_ms`` (ints),
        ``cpu_s`` (the job's CPU seconds).
    """
    check_int("rollouts", rollouts, 2, 4096)
    out = []
    for k, job in enumerate(jobs):
        t0 = time.process_time()
        pos = job.positions
        bot = PlannerBot(rollouts=rollouts, horizon_ms=HORIZON_MS, win_weight=win_weight,
                         confidence=0.0, reference=_StoredMoves(pos.obs, job.racer_move))
        plan = bot.plan(pos.obs, pos.masks, streams.RowStreams(job.truth_key), table=pos.table())
        if (plan.reference != job.racer_move).any():  # pragma: no cover - a planner change
            raise RuntimeError("the planner's reference moves are not the stored racer moves")
        diff = np.full((job.count, rules.N_ACTIONS), np.nan, np.float32)
        se = diff.copy()
        diff[plan.cand_row, plan.cand_action] = plan.mean_diff
        se[plan.cand_row, plan.cand_action] = plan.se
        out.append(dict(diff=diff, se=se, value=plan.value.astype(np.float32),
                        rollout_steps=int(bot.last_stats["rollout_steps"]),
                        max_simulated_ms=int(bot.last_stats["max_simulated_ms"]),
                        cpu_s=time.process_time() - t0))
        if report is not None:
            report(k, job.count)
    return out


def _truth_keys(policy_key: np.ndarray, seed: int) -> np.ndarray:
    # a hash of another purpose than the policy streams': independent of every draw a player
    # makes from the position's policy key (a screened planner's rollouts are not the truth's)
    return streams.draw(policy_key, streams.PLAN, seed, 1)


def build_truth(*, per_source: int, games: int, rollouts: int, seed: int = 0,
                sources: Sequence[str] = SOURCES, config: SpitConfig | None = None,
                win_weight: float = 2.0, positions_per_job: int = 8, runner=None,
                command: str = "", commit: str = "", progress=None) -> tuple[TruthSet, dict]:
    """Collect positions from the sources' games and value every legal move (module docstring).

    Args:
        per_source: positions per source player (at most: repeated observations are dropped).
        games: games per source and seat (``collect_positions``).
        rollouts: rollouts per legal move, 2-4096.
        seed: the build's seed (the games, the rollouts' keys).
        sources: the source players.
        config: the games' config (default ``SpitConfig()``).
        win_weight: the value of a game won within a rollout.
        positions_per_job: positions valued together (one Ray task each with a Ray runner);
            the values do not depend on it.
        runner: ``runner(jobs, play, report) -> outputs`` (``agents.arena.Runner``'s shape:
            ``experiments.cluster.tasks.run_jobs_on_ray``), or None: job by job here.
        command: the command that made it, for ``meta``.
        commit: the commit it was made on, for ``meta``.
        progress: None, or ``progress(stage, total)`` returning a callable counted with the
            games played and then the positions valued (a ``spit_env.progress.Progress``).

    Returns:
        ``(truth, stats)``: the TruthSet, and ``stats`` (``positions_cpu_s``, ``values_cpu_s``:
        CPU seconds of the two stages, the second summed over the jobs wherever they ran;
        ``rollout_steps``).
    """
    check_int("rollouts", rollouts, 2, 4096)
    check_int("positions_per_job", positions_per_job, 1)
    config = config or SpitConfig()
    t0 = time.process_time()
    bar = progress("games", 2 * games * len(sources)) if progress else None
    positions = collect_positions(sources, per_source, games=games, seed=seed, config=config,
                                  progress=bar)
    if bar is not None:
        bar.close()
    pkey = policy_keys(positions.state, positions.seat)
    racer, _ = player_moves("racer", positions, pkey)  # the screen's own route
    tkey = _truth_keys(pkey, seed)
    positions_cpu = time.process_time() - t0
    n = positions.size
    bounds = list(range(0, n, positions_per_job)) + [n]
    jobs = [TruthJob(a, positions.take(np.arange(a, b)), tkey[a:b], racer[a:b])
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    bar = progress("values", n) if progress else None
    report = None if bar is None else (lambda k, m: bar(m))
    play = partial(value_jobs, rollouts=rollouts, win_weight=win_weight)
    outputs = play(jobs, report) if runner is None else runner(jobs, play, report)
    if bar is not None:
        bar.close()
    counts = dict(zip(sources, np.bincount(positions.source, minlength=len(sources)).tolist(),
                      strict=True))
    meta = dict(format=_FORMAT, version=TRUTH_VERSION, command=command, commit=commit,
                seed=int(seed), sources=list(sources), opponent="racer", games=int(games),
                per_source=int(per_source), counts=counts,
                positions=int(n), rollouts=int(rollouts), win_weight=float(win_weight),
                horizon_ms=HORIZON_MS, reference="racer", config=config.to_dict(),
                max_simulated_ms=max(o["max_simulated_ms"] for o in outputs))
    truth = TruthSet(positions, pkey, tkey, racer,
                     np.concatenate([o["diff"] for o in outputs]),
                     np.concatenate([o["se"] for o in outputs]),
                     np.concatenate([o["value"] for o in outputs]), meta)
    stats = dict(positions_cpu_s=positions_cpu, values_cpu_s=sum(o["cpu_s"] for o in outputs),
                 rollout_steps=sum(o["rollout_steps"] for o in outputs))
    return truth, stats


# --- the file -------------------------------------------------------------------------------------
_DTYPES = dict(seat=np.int8, source=np.int8, racer_move=np.int8, obs=np.float32, masks=bool,
               policy_key=np.uint64, truth_key=np.uint64, diff=np.float32, se=np.float32,
               value=np.float32)


def save_truth(truth: TruthSet, path: str | Path) -> Path:
    """Write ``truth`` to ``path`` (an ``.npz``; its folder is made); the same set, the same bytes.

    Returns:
        the path written (replaced at once: a reader never sees half a file).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = truth.positions.arrays()
    arrays.update(policy_key=truth.policy_key, truth_key=truth.truth_key,
                  racer_move=truth.racer_move, diff=truth.diff, se=truth.se, value=truth.value)
    for name, dtype in _DTYPES.items():
        arrays[name] = np.asarray(arrays[name]).astype(dtype)
    meta = json.dumps(truth.meta, sort_keys=True).encode()
    arrays["meta"] = np.frombuffer(meta, np.uint8)
    tmp = path.with_name(path.name + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[name]),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ENTRY_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)
    os.replace(tmp, path)
    return path


def _refuse(path, why: str) -> TruthFileError:
    return TruthFileError(f"truth set {path}: {why}")


def load_truth(path: str | Path | None = None) -> TruthSet:
    """Read a truth set (None: the shipped one) and check it against this core.

    The positions' observations and masks are built again from their core states and must
    equal the stored ones (a core or observation that changed since the build needs a new
    set).

    Raises:
        TruthFileError: (a ValueError) the file is missing, not a truth set, of another version,
            or its positions no longer match the core: one line naming the file and why.
    """
    path = shipped_truth_path() if path is None else Path(path)
    if not path.is_file():
        raise _refuse(path, "no such file")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        meta = json.loads(bytes(data.pop("meta")).decode())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as err:
        raise _refuse(path, f"not a truth set file ({type(err).__name__}: {err})") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise _refuse(path, "not a truth set file (no screen truth set description)")
    again = f"build it again ({meta.get('command') or 'python -m experiments.screen --build'})"
    if meta.get("version") != TRUTH_VERSION:
        raise _refuse(path, f"version {meta.get('version')!r}, this screen reads version "
                            f"{TRUTH_VERSION!r}: {again}")
    try:
        truth = _from_arrays(data, meta)
    except (KeyError, ValueError, TypeError, AssertionError) as err:
        raise _refuse(path, f"unreadable contents ({err})") from None
    pos = truth.positions
    every = np.arange(pos.size)
    if (pos.obs.shape[1] != rules.OBS_DIM
            or not np.array_equal(core.observe(pos.state, every, pos.seat), pos.obs)
            or not np.array_equal(core.legal_action_mask(pos.state, every, pos.seat),
                                  pos.masks)):
        raise _refuse(path, f"its observations or masks differ from this core's: {again}")
    return truth


def _from_arrays(data: dict, meta: dict) -> TruthSet:
    """The TruthSet of a file's arrays (``KeyError`` / ``ValueError`` for a malformed one)."""
    pos = Positions.from_arrays(data, SpitConfig.from_dict(meta["config"]), meta["sources"])
    if pos.size != int(meta["positions"]):
        raise ValueError(f"{counted(pos.size, 'position')}, the description says "
                         f"{int(meta['positions']):,}")
    return TruthSet(pos, data["policy_key"], data["truth_key"],
                    data["racer_move"].astype(np.int64), data["diff"], data["se"], data["value"],
                    meta)
