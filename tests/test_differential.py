"""Differential test: the batched core (spit_env.core) against the scalar reference game
(spit_env.reference.ReferenceGame), fed the same seeds, deals and moves, must agree on every field of
every snapshot, every mask, reward, termination / truncation / illegal flag and event, at every
step (and on both seats' observations, the reference's built in plain Python from its own table,
at every fourth step), for every row of a batch whose rows are at different stages (rows re-started at different
times with new game ids, partial steps with ``rows=``), and for batches whose games play at latencies
of their own (``core.init`` / ``core.reset`` with ``latency=``), each compared with a reference game
of that game's config.

Moves are random legal moves drawn from the mask (biased towards WAIT at times), sometimes
deliberately illegal ones (configs with illegal_action="wait").
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import random_joint_actions

from spit_env import core, rules
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.reference import ReferenceGame

#: (name, config, share of games with a fixed uneven deal, illegal move rate)
CONFIGS = [
    ("default_short", SpitConfig(max_game_ms=20_000), 0.0, 0.0),
    ("no_autoflip_nowrap", SpitConfig(auto_flip=False, wrap_ranks=False, max_game_ms=20_000), 0.2, 0.05),
    ("short_timeout", SpitConfig(stall_timeout_ms=350, wait_ms=120, max_game_ms=30_000), 0.3, 0.03),
    ("no_timeout_house_rule", SpitConfig(stall_timeout_ms=None, win_on_empty_hand=True,
                                         max_game_ms=20_000), 0.3, 0.03),
    ("points_small_target", SpitConfig(scoring="points", target_points=25, max_game_ms=50_000), 0.2, 0.02),
    ("points_one_round", SpitConfig(scoring="points", target_points=1, max_game_ms=60_000,
                                    latency=("pro", "novice")), 0.3, 0.0),
    ("uneven_deals", SpitConfig(max_game_ms=40_000, spit_delay_ms=0), 1.0, 0.03),
    ("ties_coin", SpitConfig(latency=(Latency.fixed(100), Latency.fixed(200)), wait_ms=100,
                             max_game_ms=30_000, max_rounds=3), 0.3, 0.05),
    ("ties_p1", SpitConfig(latency=100, wait_ms=100, tie_break="player_1", auto_flip=False,
                           max_game_ms=20_000, max_rounds=2), 0.3, 0.0),
    ("ties_p0", SpitConfig(latency=(Latency.normal(150, 40, 100), 100), wait_ms=50,
                           tie_break="player_0", max_game_ms=25_000, max_rounds=1), 0.3, 0.05),
    ("raise_mode", SpitConfig(illegal_action="raise", observe_opponent_move=False,
                              latency=("novice", Latency.lognormal(300, 50, 120)),
                              max_game_ms=20_000), 0.2, 0.0),
    ("tiny_limits", SpitConfig(max_game_ms=900, max_rounds=1, spit_delay_ms=700), 0.5, 0.1),
    ("mixed_latency", SpitConfig(max_game_ms=25_000), 0.2, 0.03),
    ("mixed_latency_ties", SpitConfig(latency=100, wait_ms=100, tie_break="coin", auto_flip=False,
                                      max_game_ms=20_000, max_rounds=3), 0.3, 0.05),
]

#: configs whose games each draw their seats' latency models from a pool (None: the config's)
MIXED_LATENCY = {
    "mixed_latency": ["pro", "club", "novice", Latency.fixed(150), Latency.normal(300, 80, 100),
                      Latency.lognormal(420, 60, 200), None],
    "mixed_latency_ties": [Latency.fixed(100), Latency.fixed(200), 100, 300, "pro", None],
}

_UNEVEN = (1, 5, 10, 14, 15, 16, 20, 26, 30, 37, 42, 47, 51)


def _random_deal(rng: np.random.Generator):
    perm = rng.permutation(rules.N_CARDS).tolist()
    k = int(rng.choice(_UNEVEN))
    return perm[:k], perm[k:]


def _pick_actions(rng, mask: np.ndarray, wait_bias: float, illegal_rate: float) -> np.ndarray:
    acts = random_joint_actions(mask, rng, wait_bias)
    wild = rng.random(acts.shape) < illegal_rate
    acts[wild] = rng.integers(0, rules.N_ACTIONS, size=int(wild.sum()))
    return acts


def _diff(a, b, path="") -> str | None:
    """The first differing field of two snapshots (or events), as a readable path."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{path}.{k}: missing on one side"
            d = _diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            d = _diff(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return f"{path}: length core {len(a)} != reference {len(b)}"
        return None
    if a != b or type(a) is not type(b):
        return f"{path}: core {a!r} != reference {b!r}"
    return None


def _same(core_value, ref_value, what: str, where, strict: bool = False) -> None:
    """Plain == first (fast); the field-by-field walk (which also compares types, e.g. bool vs int)
    when ``strict``, or to name the first difference. ``where``: a callable naming the place."""
    if core_value != ref_value or (strict and _diff(core_value, ref_value) is not None):
        raise AssertionError(f"{what} differs: {where()}: {_diff(core_value, ref_value, '.' + what)}")


def run_differential(name, config, deal_share, illegal_rate, n_games, batch, seed) -> dict:
    """Play ``n_games`` games in a batch of ``batch`` rows with both implementations in lock step;
    raise AssertionError at the first difference (naming config, row, game, step and field)."""
    rng = np.random.default_rng(seed)
    next_id = 0
    pool = MIXED_LATENCY.get(name)

    def new_game():
        nonlocal next_id
        gid = next_id * 7 + 3  # game ids that are not simply 0..n
        next_id += 1
        deal = _random_deal(rng) if rng.random() < deal_share else None
        latency = None if pool is None else tuple(pool[k] for k in rng.integers(len(pool), size=2))
        own = config if latency is None else config.replace(latency=tuple(
            config.latency[p] if m is None else m for p, m in enumerate(latency)))
        return gid, deal, ReferenceGame(own, seed, gid, deal), latency

    def latencies():
        return None if pool is None else [g[3] for g in games]

    games = [new_game() for _ in range(batch)]  # per row: (game id, deal, ReferenceGame, latency)
    state = core.init(config, batch, seed, deals=[g[1] for g in games], latency=latencies())
    # init plays game ids 0..B-1: re-start every row with the chosen ids (this exercises reset too)
    core.reset(state, np.ones(batch, bool), np.array([g[0] for g in games]), [g[1] for g in games],
               latency=latencies())
    started = batch
    done_since = np.full(batch, -1)
    stats = {"started": batch, "games": 0, "steps": 0, "events": 0, "terminated": 0, "truncated": 0,
             "observations": 0}

    def where(row, step):
        gid, deal, ref, _ = games[row]
        return (f"config {name} ({ref.config}), seed {seed}, row {row}, game id {gid}, "
                f"deal {deal}, step {step}")

    def compare_snapshots(step):
        for i in range(batch):
            assert core.row_config(state, i) == games[i][2].config, where(i, step)
            _same(core.snapshot(state, i), games[i][2].snapshot(), "snapshot", lambda i=i, s=step: where(i, s), True)

    compare_snapshots(-1)
    step_no = 0
    while True:
        over = state.phase == rules.PHASE_OVER
        # re-start finished rows (a few steps later, so rows sit at different stages) and
        # sometimes an unfinished row, while games remain to be started
        restart = over & (done_since >= 0) & (step_no - done_since >= rng.integers(0, 4, batch))
        restart |= (~over) & (rng.random(batch) < 0.0005)
        if started >= n_games:
            restart[:] = False
        if restart.any():
            idx = np.flatnonzero(restart)[: n_games - started]
            restart[:] = False
            restart[idx] = True
            ids = np.zeros(batch, np.int64)
            deals = [None] * batch
            for i in idx:
                stats["games"] += games[i][2].done
                games[i] = new_game()
                ids[i], deals[i] = games[i][0], games[i][1]
            core.reset(state, restart, ids, deals, latency=latencies())
            started += idx.size
            stats["started"] = started
            done_since[idx] = -1
            for i in idx:
                assert core.row_config(state, i) == games[i][2].config, where(i, step_no)
                _same(core.snapshot(state, i), games[i][2].snapshot(), "snapshot after reset",
                      lambda i=i, s=step_no: where(i, s), True)
        over = state.phase == rules.PHASE_OVER
        if started >= n_games and over.all():
            break

        mask = core.legal_action_mask(state)
        for i in range(batch):
            for p in range(rules.N_PLAYERS):
                ref_mask = games[i][2].legal_action_mask(p)
                if mask[i, p].tolist() != ref_mask:
                    raise AssertionError(
                        f"mask differs: {where(i, step_no)}, player {p}: core "
                        f"{np.flatnonzero(mask[i, p]).tolist()} reference "
                        f"{np.flatnonzero(ref_mask).tolist()}")
        acts = _pick_actions(rng, mask, wait_bias=float(rng.choice([0.0, 0.3, 0.8])),
                             illegal_rate=illegal_rate)
        rows = None if rng.random() < 0.5 else rng.random(batch) < 0.7
        # sometimes given latencies (a human's real reaction) replace some seats' draws
        given = None
        if rng.random() < 0.2:
            given = np.where(rng.random((batch, 2)) < 0.5, rng.integers(1, 900, (batch, 2)), -1)
        state, out = core.step(state, acts, rows=rows, events=True, latency_ms=given)
        for i in range(batch):
            ref = games[i][2]
            if rows is not None and not rows[i]:
                res_events, res = [], None
            else:
                lat = (-1, -1) if given is None else tuple(int(v) for v in given[i])
                res = ref.step(int(acts[i, 0]), int(acts[i, 1]), lat)
                res_events = res.events
            strict = step_no % 50 == 0
            _same(out.events.for_row(i), res_events, "events", lambda i=i, s=step_no: where(i, s), strict)
            _same(core.snapshot(state, i), ref.snapshot(), "snapshot", lambda i=i, s=step_no: where(i, s), strict)
            want = (res.rewards, res.terminated, res.truncated, res.illegal) if res else (
                (0.0, 0.0), False, False, (False, False))
            got = (tuple(out.rewards[i].tolist()), bool(out.terminated[i]), bool(out.truncated[i]),
                   tuple(out.illegal[i].tolist()))
            assert got == want, f"step output differs: {where(i, step_no)}: core {got} reference {want}"
            stats["terminated"] += want[1]
            stats["truncated"] += want[2]
        stats["events"] += len(out.events)
        if step_no % 4 == 0:  # the observations: the reference's plain-Python ones, bit for bit
            obs = core.observe(state)
            for i in range(batch):
                for p in range(rules.N_PLAYERS):
                    want = np.asarray(games[i][2].observation(p), np.float32)
                    if obs[i, p].tobytes() != want.tobytes():
                        bad = int(np.flatnonzero(obs[i, p] != want)[0])
                        field = next(f.name for f in rules.OBSERVATION if f.start <= bad < f.stop)
                        raise AssertionError(
                            f"observation differs: {where(i, step_no)}, seat {p}, entry {bad} "
                            f"({field}): core {obs[i, p, bad]!r} reference {want[bad]!r}")
            stats["observations"] += 2 * batch
        ended = out.terminated | out.truncated
        done_since[ended] = step_no
        step_no += 1
        stats["steps"] += 1
    stats["games"] += sum(g[2].done for g in games)
    return stats


@pytest.mark.parametrize("name,config,deal_share,illegal_rate", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_core_matches_reference(name, config, deal_share, illegal_rate):
    stats = run_differential(name, config, deal_share, illegal_rate, n_games=210, batch=24,
                             seed=1000 + CONFIGS.index((name, config, deal_share, illegal_rate)))
    assert stats["started"] == 210  # every game started was compared at every step
    assert stats["games"] >= 150  # most were played to their end (some re-started mid-game)
    assert stats["terminated"] + stats["truncated"] == stats["games"]
    assert stats["observations"] > 0


def test_differential_covers_the_rare_paths():
    """The configs above reach terminations, truncations, slaps, bounces, fills, flips, spits (at a
    round start, on a stall and on the D17 timeout), illegal moves, and one-pile wins under the
    standard rule (D12, D14) (otherwise the comparison would prove little)."""
    seen = set()
    for _name, config, share, rate in CONFIGS:
        rng = np.random.default_rng(5)
        state = core.init(config, 64, 7, deals=[_random_deal(rng) if rng.random() < share else None
                                                 for _ in range(64)])
        for _ in range(400):
            acts = _pick_actions(rng, core.legal_action_mask(state), 0.2, rate)
            state, out = core.step(state, acts, events=True)
            ev = out.events
            seen.update(rules.EVENT_NAMES[t] for t in np.unique(ev.type))
            seen.update(f"spit/{v}" for v in np.unique(ev.value[ev.type == rules.EV_SPIT]))
            won = (ev.type == rules.EV_GAME_END) & (ev.player >= 0)
            if won.any() and config.scoring == "standard" and not config.win_on_empty_hand:
                seen.add("one-pile win")
            if (state.phase == rules.PHASE_OVER).all():
                break
    want = set(rules.EVENT_NAMES) | {"one-pile win"} | {
        f"spit/{v}" for v in (rules.SPIT_ROUND_START, rules.SPIT_STALL, rules.SPIT_TIMEOUT)}
    assert seen == want, f"never seen: {want - seen}"


@pytest.mark.slow
@pytest.mark.parametrize("n_games", [50_000])
def test_core_matches_reference_many_games(n_games):
    """The long run: about an hour on one core (some 65 ms of CPU per game, both implementations
    in lock step, whatever the batch size); SPIT_SLOW_SCALE=ci runs 3,000 games (about 3 min)."""
    if os.environ.get("SPIT_SLOW_SCALE") == "ci":
        n_games = 3_000
    per = n_games // len(CONFIGS) + 1
    total = 0
    for k, (name, config, share, rate) in enumerate(CONFIGS):
        stats = run_differential(name, config, share, rate, n_games=per, batch=64, seed=50_000 + k)
        assert stats["started"] == per
        total += stats["started"]
    assert total >= n_games
