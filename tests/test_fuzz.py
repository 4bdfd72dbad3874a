"""The fuzz run (issue 14): random configs (every SpitConfig flag at random, a random latency model
per seat, odd deals: uneven packs, sorted and rank-grouped decks) and random actions (legal,
illegal, out of range, wrong type, now and then a misuse of the call itself) through the batched
core and the four views, with 0 crashes and 0 invariant breaks allowed.

Checked at every step: ``testing.check_invariants`` (cards conserved, masks, phases, rewards,
flags, no legal action flagged illegal) on every core state; rows left out of a partial core step
unchanged; every refused call (a misuse, or an illegal action under ``illegal_action="raise"``)
refused with ValueError and nothing changed (the core state or every table); every accepted one
giving a valid result (agents, dict keys, zero-sum rewards, "illegal" events for exactly the
illegal actions, the learner free after a Gymnasium / VecEnv step).

A game-step is one decision epoch of one game: a row advanced by ``core.step``, a ParallelEnv
step, a whole AEC round, and in the single-agent views a learner decision (one or more epochs:
counted as one). Sizes: the default suite runs ``SMALL`` game-steps; the slow marker the full
10,000,000 (``SPIT_SLOW_SCALE=ci``: ``CI``). Every case (one config, one target) has its own seed,
so a failure names the seed that replays it (``run_case(target, seed, budget)``); run the slow
test with ``-s`` to see the run's figures.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import time
import traceback

import numpy as np
import pytest

import spit_env
from spit_env import Latency, SpitConfig, SpitGymEnv, SpitVecEnv, core, rules
from spit_env.config import ILLEGAL_ACTIONS, SCORINGS, TIE_BREAKS
from spit_env.policy import uniform_legal, uniform_legal_actions
from spit_env.testing import check_invariants

FULL = 10_000_000
CI = 300_000
SMALL = 25_000
MAX_FAILURES = 20  # a run stops after this many failed cases
#: each target's share of the game-steps (the core is where the batch runs fast)
SHARES = {"core": 0.86, "vec": 0.08, "gym": 0.02, "parallel": 0.02, "aec": 0.02}
OPPONENTS = [uniform_legal, "random", "greedy", "chain", "racer", "greedy@pro", "racer@novice",
             "chain@250"]
BAD_ACTIONS = [-1, 23, 99, 1.0, "1", None, True, np.float32(3.0), [2]]


class Refused(AssertionError):
    """A check of the fuzz failed (an invariant break, not a crash)."""


# --- random configs and deals --------------------------------------------------------------------
def random_latency(rng):
    kind = int(rng.integers(6))
    if kind == 0:
        return str(rng.choice(["pro", "club", "novice"]))
    if kind == 1:
        return Latency.fixed(int(rng.choice([1, 2, 50, 100, 333, 1_000, 20_000])))
    if kind == 2:
        return int(rng.integers(1, 2_000))  # whole ms
    mean = float(rng.uniform(1, 2_000))
    std, low = float(rng.uniform(0, mean)), int(rng.integers(1, max(2, int(mean))))
    return (Latency.normal if kind < 5 else Latency.lognormal)(mean, std, low)


def _pick(rng, fixed, draw=None):
    """One of ``fixed`` or, with ``draw``, a fresh draw (as likely as each fixed value)."""
    k = int(rng.integers(len(fixed) + (draw is not None)))
    return fixed[k] if k < len(fixed) else draw()


def random_config(rng, duel: bool = False) -> SpitConfig:
    """A config with every field at random (extremes included).

    ``duel``: for the Gymnasium and VecEnv views, where one step runs the core until the learner's
    move has landed, WAIT takes at least 20 ms (a 1 ms WAIT against a 20 s move would be 20,000
    epochs in one step; the core cases have those extremes).
    """
    return SpitConfig(
        latency=(random_latency(rng), random_latency(rng)),
        wait_ms=_pick(rng, [20, 100, 250, 60_000] if duel else [1, 10, 100, 250, 60_000],
                      lambda: int(rng.integers(20 if duel else 1, 2_000))),
        spit_delay_ms=_pick(rng, [0, 1, 500, 60_000], lambda: int(rng.integers(0, 5_000))),
        tie_break=str(rng.choice(TIE_BREAKS)),
        max_rounds=_pick(rng, [1, 2, 5, 100, 10_000]),
        max_game_ms=_pick(rng, [1, 50, 900, 20_000, 300_000, 10**9],
                          lambda: int(rng.integers(1, 200_000))),
        scoring=str(rng.choice(SCORINGS)),
        target_points=_pick(rng, [1, 5, 25, 100, 10_000]),
        auto_flip=bool(rng.random() < 0.5),
        wrap_ranks=bool(rng.random() < 0.5),
        illegal_action=str(rng.choice(ILLEGAL_ACTIONS)),
        observe_opponent_move=bool(rng.random() < 0.5),
        stall_timeout_ms=_pick(rng, [None, 1, 50, 400, 3_000, 10**9],
                               lambda: int(rng.integers(1, 10_000))),
        win_on_empty_hand=bool(rng.random() < 0.5),
    )


def odd_deal(rng) -> list[list[int]]:
    """Two packs of uneven sizes from a shuffled, sorted, reversed or rank-grouped deck."""
    cards = np.arange(rules.N_CARDS)
    order = [rng.permutation(cards), cards, cards[::-1],
             cards[np.argsort(cards % rules.N_RANKS, kind="stable")],  # four of a rank in a row
             cards[np.argsort(cards % 2, kind="stable")]][int(rng.integers(5))]
    k = _pick(rng, [1, 2, 5, 14, 15, 16, 26, 37, 50, 51], lambda: int(rng.integers(1, 52)))
    return [order[:k].tolist(), order[k:].tolist()]


def maybe_deal(rng, share: float):
    return odd_deal(rng) if rng.random() < share else None


# --- shared checks -------------------------------------------------------------------------------
def _arrays(state) -> dict:
    return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)
            if isinstance(getattr(state, f.name), np.ndarray)}


def assert_same_state(before, after, rows=None, what="a refused call") -> None:
    """Every array of two core states equal (only ``rows``, (B,) bool, if given)."""
    a, b = _arrays(before), _arrays(after)
    for name in a:
        x, y = (a[name], b[name]) if rows is None else (a[name][rows], b[name][rows])
        if not np.array_equal(x, y):
            raise Refused(f"{what} changed the core state's {name}")


def expect_refused(stats, call, tables, what: str) -> None:
    """``call()`` must raise ValueError and leave ``tables()`` as they were."""
    before = tables()
    try:
        call()
    except ValueError as err:
        if not str(err):
            raise Refused(f"{what}: a ValueError without a message") from None
        if tables() != before:
            raise Refused(f"{what} was refused ({err}) but changed the table") from None
        stats["refused"] += 1
        return
    raise Refused(f"{what} was accepted")


# --- the core ------------------------------------------------------------------------------------
def _core_misuse(state, rng, stats) -> None:
    """One bad call of the core's API: ValueError, state unchanged."""
    b = state.batch_size
    before = state.copy()
    good = np.zeros((b, 2), np.int64)
    calls = [
        lambda: core.step(state, np.zeros((b + 1, 2), np.int64)),
        lambda: core.step(state, good.astype(np.float64)),
        lambda: core.step(state, np.full((b, 2), 23)),
        lambda: core.step(state, good, rows=np.ones(b, np.int64)),
        lambda: core.step(state, good, latency_ms=np.zeros((b, 2), np.int64)),
        lambda: core.reset(state, np.ones(b, bool), np.zeros(b, np.float64)),
        lambda: core.reset(state, np.ones(b, bool), np.zeros(b, np.int64),
                           deals=[[[0], [1]]] * b),
        lambda: core.snapshot(state, b),
        lambda: core.observe(state, rows=np.zeros(b + 1, bool)),
        lambda: core.legal_action_mask(state, seat=2),
    ]
    call = calls[int(rng.integers(len(calls)))]
    try:
        call()
    except ValueError:
        stats["refused"] += 1
    else:
        raise Refused("a misuse of the core was accepted")
    assert_same_state(before, state, what="a refused core call")


def fuzz_core(rng, budget: int, stats) -> None:
    config = random_config(rng)
    b = int(rng.choice([1, 2, 7, 64, 256, 1024]))
    share = float(rng.choice([0.0, 0.2, 1.0]))
    seed = int(rng.integers(2**62))
    state = core.init(config, b, seed, deals=[maybe_deal(rng, share) for _ in range(b)])
    next_id = b
    illegal_rate = float(rng.choice([0.0, 0.01, 0.1, 0.5]))
    wait_bias = float(rng.choice([0.0, 0.3, 0.9]))
    raising = config.illegal_action == "raise"
    done = 0
    for _ in range(int(rng.integers(20, 400))):  # calls: a small batch makes a short case
        if done >= budget:
            break
        if rng.random() < 0.01:
            _core_misuse(state, rng, stats)
        mask = core.legal_action_mask(state)
        acts = uniform_legal_actions(mask, rng)
        acts[(rng.random(acts.shape) < wait_bias) & mask[..., rules.WAIT]] = rules.WAIT
        wild = rng.random(acts.shape) < illegal_rate
        acts[wild] = rng.integers(0, rules.N_ACTIONS, size=int(wild.sum()))
        rows = None if rng.random() < 0.6 else rng.random(b) < 0.6
        given = None
        if rng.random() < 0.1:
            given = np.where(rng.random((b, 2)) < 0.5, rng.integers(1, 2_000, (b, 2)), -1)
        events = bool(rng.random() < 0.3)
        active = state.phase != rules.PHASE_OVER
        if rows is not None:
            active &= rows
        legal = np.take_along_axis(mask, acts[..., None], axis=2)[..., 0]
        illegal = active[:, None] & ~legal
        if raising and illegal.any():
            before = state.copy()
            try:
                core.step(state, acts, rows=rows, events=events, latency_ms=given)
            except ValueError:
                stats["refused"] += 1
            else:
                raise Refused("an illegal action was accepted under illegal_action='raise'")
            assert_same_state(before, state, what="a refused illegal action")
            acts = np.where(illegal, uniform_legal_actions(mask, rng), acts)
            illegal[:] = False
        outside = None
        if rows is not None and rng.random() < 0.2:
            outside = (~rows, state.copy())
        state, out = core.step(state, acts, rows=rows, events=events, latency_ms=given)
        check_invariants(state, out, mask, acts)
        if not np.array_equal(out.illegal, illegal):
            raise Refused("out.illegal is not the actions outside the mask")
        if outside is not None:
            assert_same_state(outside[1], state, rows=outside[0], what="a partial step")
        if events:
            ev = out.events
            flagged = np.zeros((b, 2), bool)
            sel = ev.type == rules.EV_ILLEGAL
            flagged[ev.row[sel], ev.player[sel]] = True
            if not np.array_equal(flagged, illegal) or (np.diff(ev.row) < 0).any():
                raise Refused("the illegal events differ from out.illegal, or rows out of order")
        done += int(active.sum())
        stats["game_steps"]["core"] += int(active.sum())
        stats["games"] += int((out.terminated | out.truncated).sum())
        over = state.phase == rules.PHASE_OVER
        if over.any() and rng.random() < 0.5:
            ids = np.zeros(b, np.int64)
            ids[over] = next_id + np.arange(int(over.sum()))
            next_id += int(over.sum())
            deals = [maybe_deal(rng, share) if o else None for o in over]
            core.reset(state, over, ids, deals=deals)
            check_invariants(state)


# --- the views -----------------------------------------------------------------------------------
def _action(rng, mask, kinds):
    """An action of a random kind: (action, kind) with kind in legal / illegal / bad."""
    kind = str(rng.choice(["legal", "illegal", "bad"], p=kinds))
    mask = np.asarray(mask, bool)
    if kind == "illegal" and not (~mask).any():
        kind = "legal"
    if kind == "bad":
        return BAD_ACTIONS[int(rng.integers(len(BAD_ACTIONS)))], kind
    return int(uniform_legal_actions(mask if kind == "legal" else ~mask, rng)), kind


def _kinds(rng):
    bad = float(rng.choice([0.0, 0.02, 0.1]))
    illegal = float(rng.choice([0.0, 0.05, 0.3]))
    return [1.0 - bad - illegal, illegal, bad]


def _reset_options(rng, share):
    deal = maybe_deal(rng, share)
    return None if deal is None else {"deal": deal}


def _maybe_copy(env, rng):
    """Now and then a pickled copy of the env takes its place (it must be the same game)."""
    if rng.random() >= 0.002:
        return env
    twin = pickle.loads(pickle.dumps(env))
    if twin.snapshot() != env.snapshot():
        raise Refused("a pickled copy shows another table")
    return twin


def fuzz_parallel(rng, budget: int, stats) -> None:
    config = random_config(rng)
    env = spit_env.parallel_env(config)
    kinds, share = _kinds(rng), float(rng.choice([0.0, 0.3]))
    raising = config.illegal_action == "raise"
    obs, _ = env.reset(seed=int(rng.integers(2**62)), options=_reset_options(rng, share))
    done = 0
    while done < budget:
        if not env.agents:
            if rng.random() < 0.2:
                expect_refused(stats, lambda e=env: e.step(dict.fromkeys(e.possible_agents, 0)),
                               env.snapshot, "a step after the end")
            seed = None if rng.random() < 0.5 else int(rng.integers(2**62))
            obs, _ = env.reset(seed=seed, options=_reset_options(rng, share))
            stats["games"] += 1
            continue
        masks = env.action_masks()
        picked = {a: _action(rng, masks[a], kinds) for a in env.agents}
        actions = {a: act for a, (act, _) in picked.items()}
        bad = any(k == "bad" for _, k in picked.values())
        illegal = {a for a, (_, k) in picked.items() if k == "illegal"}
        if bad or raising and illegal:
            expect_refused(stats, lambda a=actions, e=env: e.step(a), env.snapshot, "a bad step")
            continue
        before = list(env.agents)
        obs, rewards, terms, truncs, infos = env.step(actions)
        check_invariants(env.core_state)
        for d in (obs, rewards, terms, truncs, infos):
            if list(d) != before:
                raise Refused(f"step results keyed by {list(d)}, not {before}")
        if sum(rewards.values()) != 0.0:
            raise Refused(f"rewards not zero-sum: {rewards}")
        flagged = {f"player_{e['player']}" for e in env.last_events() if e["type"] == "illegal"}
        reported = {a for a in before if infos[a]["illegal"]}
        if flagged != illegal or reported != illegal:
            raise Refused(f"illegal events for {flagged}, illegal actions of {illegal}")
        ended = terms[before[0]] or truncs[before[0]]
        if env.agents != ([] if ended else before):
            raise Refused("agents do not leave together at the end")
        env = _maybe_copy(env, rng)
        done += 1
        stats["game_steps"]["parallel"] += 1


def fuzz_aec(rng, budget: int, stats) -> None:
    config = random_config(rng)
    env = spit_env.env(config)
    kinds, share = _kinds(rng), float(rng.choice([0.0, 0.3]))
    raising = config.illegal_action == "raise"
    env.reset(seed=int(rng.integers(2**62)), options=_reset_options(rng, share))
    done = 0
    while done < budget:
        if not env.agents:
            if rng.random() < 0.2:
                expect_refused(stats, lambda e=env: e.step(None), env.snapshot, "a step after the end")
            env.reset(seed=None if rng.random() < 0.5 else int(rng.integers(2**62)),
                      options=_reset_options(rng, share))
            stats["games"] += 1
            continue
        agent = env.agent_selection
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            if rng.random() < 0.1:
                expect_refused(stats, lambda e=env: e.step(0), env.snapshot, "a dead agent's action")
            env.step(None)
            continue
        action, kind = _action(rng, obs["action_mask"], kinds)
        if kind == "bad" or raising and kind == "illegal":
            expect_refused(stats, lambda a=action, e=env: e.step(a), env.snapshot, "a bad AEC step")
            if env.agent_selection != agent:
                raise Refused("a refused AEC step moved the agent selection on")
            continue
        env.step(action)
        if agent == "player_1":
            check_invariants(env.core_state)
            done += 1
            stats["game_steps"]["aec"] += 1
        elif env.agent_selection != "player_1":
            raise Refused("player_1 is not selected after player_0's action")
        env = _maybe_copy(env, rng)


def fuzz_gym(rng, budget: int, stats) -> None:
    config = random_config(rng, duel=True)
    env = SpitGymEnv(opponent=OPPONENTS[int(rng.integers(len(OPPONENTS)))], config=config,
                     learner_seat=[0, 1, "random"][int(rng.integers(3))],
                     reward=str(rng.choice(["game", "round"])),
                     episode=str(rng.choice(["game", "round"])),
                     shaping=float(rng.choice([0.0, 0.1])))
    kinds, share = _kinds(rng), float(rng.choice([0.0, 0.3]))
    raising = config.illegal_action == "raise"
    env.reset(seed=int(rng.integers(2**62)), options=_reset_options(rng, share))
    over, done = False, 0
    busy = rules.OBS["self_busy"].start
    while done < budget:
        if over:
            if rng.random() < 0.2:
                expect_refused(stats, lambda e=env: e.step(0), env.snapshot, "a step after the end")
            env.reset(seed=None if rng.random() < 0.5 else int(rng.integers(2**62)),
                      options=_reset_options(rng, share))
            over = False
            stats["games"] += 1
            continue
        action, kind = _action(rng, env.action_masks(), kinds)
        if kind == "bad" or raising and kind == "illegal":
            expect_refused(stats, lambda a=action, e=env: e.step(a), env.snapshot, "a bad Gymnasium step")
            continue
        obs, reward, term, trunc, info = env.step(action)
        check_invariants(env.duel.state)
        if term and trunc or not np.isfinite(reward):
            raise Refused(f"terminated and truncated, or a reward of {reward}")
        flagged = [e for e in env.last_events() if e["type"] == "illegal"]
        if (kind == "illegal") != any(e["player"] == info["learner_seat"] for e in flagged) or (
                kind == "illegal") != bool(info["illegal"]):
            raise Refused("the learner's illegal action was not reported (or a legal one was)")
        over = term or trunc
        if not over and obs[busy] != 0.0:
            raise Refused("the learner is busy after a step")
        env = _maybe_copy(env, rng)
        done += 1
        stats["game_steps"]["gym"] += 1


def fuzz_vec(rng, budget: int, stats) -> None:
    config = random_config(rng, duel=True)
    n = int(rng.choice([1, 3, 16, 64]))
    env = SpitVecEnv(n, opponent=OPPONENTS[int(rng.integers(len(OPPONENTS)))], config=config,
                     seed=int(rng.integers(2**62)), learner_seat=[0, 1, "random"][int(rng.integers(3))],
                     reward=str(rng.choice(["game", "round"])),
                     episode=str(rng.choice(["game", "round"])),
                     skip_forced_waits=int(rng.choice([0, 0, 3])))
    kinds = _kinds(rng)
    raising = config.illegal_action == "raise"
    share = float(rng.choice([0.0, 0.5]))
    if share:
        env.set_options([_reset_options(rng, share) for _ in range(n)])
    env.reset()
    busy = rules.OBS["self_busy"].start

    def tables():
        return [env.snapshot(i) for i in range(n)]

    done = 0
    for _ in range(int(rng.integers(20, 300))):
        if done >= budget:
            break
        masks = env.action_masks()
        actions = uniform_legal_actions(masks, rng)
        wild = rng.random(n) < kinds[1]
        actions[wild] = uniform_legal_actions(~masks[wild], rng)
        if rng.random() < kinds[2] * 2:
            bad = [actions[:-1], actions.astype(np.float64), np.full(n, 23), None,
                   np.zeros((n, 2), np.int64)][int(rng.integers(5))]
            expect_refused(stats, lambda a=bad: env.step(a), tables, "a bad VecEnv step")
            continue
        if raising and wild.any():
            expect_refused(stats, lambda a=actions, e=env: e.step(a), tables, "an illegal VecEnv step")
            continue
        obs, rewards, dones, infos = env.step(actions)
        check_invariants(env.duel.state)
        if (obs[:, busy] != 0.0).any() or not np.isfinite(rewards).all():
            raise Refused("a learner is busy after a VecEnv step, or a reward is not finite")
        for i in np.flatnonzero(dones):
            if "terminal_observation" not in infos[i]:
                raise Refused("an ended row without its terminal_observation")
        stats["games"] += int(dones.sum())
        if rng.random() < 0.01:
            env.set_options([_reset_options(rng, 0.5) for _ in range(n)])
            env.reset()
        if rng.random() < 0.05:  # some rows get an opponent (and maybe a latency) of their own
            rows = np.flatnonzero(rng.random(n) < 0.5).tolist()
            env.set_opponent(OPPONENTS[int(rng.integers(len(OPPONENTS)))], indices=rows)
        done += n
        stats["game_steps"]["vec"] += n


TARGETS = {"core": fuzz_core, "parallel": fuzz_parallel, "aec": fuzz_aec, "gym": fuzz_gym,
           "vec": fuzz_vec}
#: game-steps of one case (the core and the VecEnv also stop after a few hundred calls)
CASE_BUDGET = {"core": (2_000, 100_000), "vec": (500, 10_000), "gym": (50, 800),
               "parallel": (50, 800), "aec": (50, 800)}


def _new_stats() -> dict:
    return {"game_steps": dict.fromkeys(TARGETS, 0), "configs": 0, "refused": 0, "games": 0,
            "crashes": [], "invariant_breaks": []}


def run_case(target: str, seed: int, budget: int, stats: dict | None = None) -> dict:
    """One case: a random config of ``seed`` fuzzed through ``target`` for ``budget`` game-steps;
    a failure is recorded in ``stats`` (crash or invariant break), with the seed that replays it."""
    stats = _new_stats() if stats is None else stats
    stats["configs"] += 1
    rng = np.random.default_rng(seed)
    try:
        TARGETS[target](rng, budget, stats)
    except AssertionError as err:  # check_invariants and the checks above
        stats["invariant_breaks"].append(f"{target} seed {seed}: {err}")
    except Exception:  # noqa: BLE001 (any other exception is a crash, reported with its trace)
        stats["crashes"].append(f"{target} seed {seed}:\n{traceback.format_exc(limit=-4)}")
    return stats


def run_fuzz(total: int, seed: int) -> dict:
    """Fuzz ``total`` game-steps, shared among the targets by SHARES; returns the figures."""
    stats = _new_stats()
    start = time.perf_counter()
    case = 0
    for target, share in SHARES.items():
        lo, hi = CASE_BUDGET[target]
        goal = int(total * share)
        while stats["game_steps"][target] < goal:
            case_seed = seed * 1_000_003 + case
            case += 1
            budget = min(int(np.random.default_rng(case_seed).integers(lo, hi)),
                         goal - stats["game_steps"][target])
            run_case(target, case_seed, max(budget, 1), stats)
            if len(stats["crashes"]) + len(stats["invariant_breaks"]) >= MAX_FAILURES:
                break
    stats["seconds"] = time.perf_counter() - start
    stats["total_game_steps"] = sum(stats["game_steps"].values())
    return stats


def _report(stats) -> str:
    steps = ", ".join(f"{k} {v:,}" for k, v in stats["game_steps"].items())
    return (f"fuzz: {stats['total_game_steps']:,} game-steps ({steps}), {stats['configs']} configs, "
            f"{stats['games']:,} games ended, {stats['refused']:,} misuses refused, "
            f"{len(stats['crashes'])} crashes, {len(stats['invariant_breaks'])} invariant breaks, "
            f"{stats['seconds']:.0f} s")


def _assert_clean(stats) -> None:
    failures = stats["crashes"] + stats["invariant_breaks"]
    assert not failures, _report(stats) + "\n\n" + "\n\n".join(failures[:5])


def test_fuzz_small():
    stats = run_fuzz(SMALL, seed=1)
    _assert_clean(stats)
    assert stats["total_game_steps"] >= SMALL
    assert all(v > 0 for v in stats["game_steps"].values())
    assert stats["refused"] > 0 and stats["games"] > 0  # the fuzz reaches misuses and game ends


def test_fuzz_finds_a_broken_invariant(monkeypatch):
    # the fuzz is able to fail: a core step that loses a card is found
    real = core.step

    def losing(state, actions, **kw):
        state, out = real(state, actions, **kw)
        state.height[0, 0, 0] = 6  # a stock place one card too high
        return state, out

    monkeypatch.setattr(core, "step", losing)
    stats = run_case("core", 3, 2_000)
    assert stats["invariant_breaks"] and "row 0" in stats["invariant_breaks"][0]


@pytest.mark.slow
def test_fuzz_full():
    """The full run: 10,000,000 game-steps (SPIT_SLOW_SCALE=ci: 300,000); -s shows the figures."""
    total = CI if os.environ.get("SPIT_SLOW_SCALE") == "ci" else FULL
    stats = run_fuzz(total, seed=int(os.environ.get("SPIT_FUZZ_SEED", "2026")))
    print("\n" + _report(stats))
    _assert_clean(stats)
    assert stats["total_game_steps"] >= total
