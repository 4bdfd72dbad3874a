"""The helpers the tests share (the browser tests' own are in ``browser_helpers.py``).

Short games for the API checkers, a mask computed from a snapshot by the rule table of
docs/RULES.md (independent of the core's mask code), deals built to order, random legal play (on
``spit_env.policy.uniform_legal_actions``, the package's one "any legal move" helper), and what
"nothing changed" means for any view: the same tables (snapshots of every game) and the same
future given the same inputs.
"""

from __future__ import annotations

import copy

import numpy as np

from spit_env import SpitConfig, rules
from spit_env.policy import uniform_legal_actions

#: Short games for API checkers: random play is truncated after about 250 decision epochs.
SHORT = SpitConfig(max_game_ms=30_000)


def rules_mask(snap: dict, seat: int, config: SpitConfig) -> np.ndarray:
    """(23,) bool: the legal moves of ``seat`` by docs/RULES.md's table, from a snapshot."""
    mask = np.zeros(rules.N_ACTIONS, bool)
    mask[rules.WAIT] = True
    if snap["phase"] == "over" or snap["in_flight"][seat] is not None:
        return mask
    if snap["phase"] == "slap":  # D11: the slap is compulsory
        mask[rules.WAIT] = False
        mask[rules.SLAP_BASE:] = True
        return mask
    stocks = snap["stocks"][seat]
    piles = (snap["centre"][seat], snap["centre"][1 - seat])  # egocentric: own, opponent's
    some_empty = any(len(place) == 0 for place in stocks)
    for s, place in enumerate(stocks):
        if not place:
            continue
        card, face_up = place[-1]
        if face_up:
            for c in range(2):
                if piles[c] and rules.adjacent(card, piles[c][-1], config.wrap_ranks):
                    mask[rules.play_action(s, c)] = True
            if some_empty and len(place) >= 2:
                mask[rules.fill_action(s)] = True
        elif not config.auto_flip:
            mask[rules.flip_action(s)] = True
    return mask


def card_of_rank(rank: int, taken: set[int]) -> int:
    """A card id of ``rank`` (1-13) not in ``taken`` (added to it)."""
    for suit in range(4):
        card = suit * rules.N_RANKS + rank - 1
        if card not in taken:
            taken.add(card)
            return card
    raise AssertionError(f"no card of rank {rank} left")


def build_deal(pack0_fixed: dict[int, int], pack1_fixed: dict[int, int], size0: int = 26):
    """Two packs with the given {position: rank} fixed (D3 positions: 0, 5, 9, 12, 14 are the
    stock tops, 15 the first spit card); the other positions get the remaining cards."""
    taken: set[int] = set()
    fixed = [{pos: card_of_rank(r, taken) for pos, r in f.items()} for f in (pack0_fixed, pack1_fixed)]
    rest = [c for c in range(rules.N_CARDS) if c not in taken]
    packs = []
    for f, size in zip(fixed, (size0, rules.N_CARDS - size0), strict=True):
        pack = []
        for pos in range(size):
            pack.append(f[pos] if pos in f else rest.pop())
        packs.append(pack)
    assert sorted(packs[0] + packs[1]) == list(range(rules.N_CARDS))
    return packs


def random_actions(env, obs, rng) -> dict:
    """One uniformly random legal action per live agent of a PettingZoo parallel env."""
    return {agent: int(uniform_legal_actions(obs[agent]["action_mask"].astype(bool), rng))
            for agent in env.agents}


def random_joint_actions(mask: np.ndarray, rng, wait_bias: float = 0.0) -> np.ndarray:
    """(B, 2) int64: a uniformly random legal action per seat of a (B, 2, 23) core mask, each
    replaced by WAIT with probability ``wait_bias`` where WAIT is legal (not for a free seat in
    the slap phase, D11)."""
    actions = uniform_legal_actions(mask, rng)
    # drawn even at wait_bias 0, so that a run's stream does not depend on it
    actions[(rng.random(actions.shape) < wait_bias) & mask[..., rules.WAIT]] = rules.WAIT
    return actions


# --- "nothing changed": the tables and the future of an environment --------------------------------
#: Games that end within a few decision epochs (truncated at 0.9 s of game time), to reach the end.
TINY = SpitConfig(max_game_ms=900, max_rounds=1, spit_delay_ms=700)


def plain(x):
    """``x`` with NumPy arrays and scalars as Python lists and numbers, so that ``==`` compares
    whole records (nested dicts, lists and tuples)."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x


def tables(env) -> list | None:
    """The snapshot of every game of a view (every row of a SpitVecEnv); None before a reset."""
    from spit_env import SpitVecEnv

    try:
        if isinstance(env, SpitVecEnv):
            return [env.snapshot(i) for i in range(env.num_envs)]
        return [env.snapshot()]
    except ValueError:
        return None


def _attempt(call):
    try:
        return ["ok", plain(call())]
    except ValueError as err:
        return ["ValueError", str(err)]


def future(env, steps: int = 4, seed: int = 0) -> list:
    """What a deep copy of ``env`` (any view) does next, given the same inputs: ``steps`` random
    legal decisions (the generator seeded with ``seed``), then, for an env that had been reset, a
    ``reset()`` without a seed (the next game id). A SpitVecEnv first gets ``step_wait()`` (its
    pending actions, or the error for none). A record comparable with ``==``; ``env`` is untouched."""
    from spit_env import SpitAECEnv, SpitGymEnv, SpitParallelEnv, SpitVecEnv

    env = copy.deepcopy(env)
    rng = np.random.default_rng(seed)
    started = tables(env) is not None
    out = []
    if isinstance(env, SpitVecEnv):
        out.append(_attempt(env.step_wait))
    for _ in range(steps):
        if tables(env) is None:
            break
        if isinstance(env, SpitVecEnv):
            out.append(_attempt(lambda: env.step(uniform_legal_actions(env.action_masks(), rng))))
        elif isinstance(env, SpitGymEnv):
            action = int(uniform_legal_actions(env.action_masks(), rng))
            out.append(_attempt(lambda a=action: env.step(a)))
        elif isinstance(env, SpitParallelEnv):
            if not env.agents:
                break
            out.append(_attempt(lambda: env.step(random_actions(env, env_obs(env), rng))))
        elif isinstance(env, SpitAECEnv):
            if not env.agents:
                break
            agent = env.agent_selection
            obs, _, term, trunc, _ = env.last()
            action = None if term or trunc else int(
                uniform_legal_actions(obs["action_mask"].astype(bool), rng))
            out.append([agent, _attempt(lambda a=action: env.step(a)),
                        plain(env.last()) if env.agents else None])
        else:
            raise TypeError(f"not a view of the package: {type(env).__name__}")
        out.append(tables(env))
    if started:
        out.append(_attempt(env.reset))
        out.append(tables(env))
    return out


def env_obs(env) -> dict:
    """The current observations of a ParallelEnv's live agents, as ``step`` returns them."""
    masks = env.action_masks()
    return {a: {"action_mask": masks[a].astype(np.int8)} for a in env.agents}


def assert_refused(env, call, match: str | None = None) -> str:
    """``call(env)`` must raise ValueError (its message matching ``match``) and leave ``env``
    exactly as it was: the same tables (every row) and the same future. Returns the message."""
    import pytest

    before, then = tables(env), future(env)
    with pytest.raises(ValueError, match=match) as err:
        call(env)
    assert tables(env) == before, f"the refused call changed the tables: {err.value}"
    assert future(env) == then, f"the refused call changed the future: {err.value}"
    return str(err.value)


def game_observations(n: int, seed: int = 0, steps: int = 40) -> np.ndarray:
    """(n, D) float32 observations of games in play (learner seats of a SpitVecEnv after
    ``steps`` random legal moves against greedy): inputs a policy that decodes the observation
    (a bot, a model with racer features) accepts, unlike random floats."""
    from spit_env import SpitVecEnv

    env = SpitVecEnv(n, opponent="greedy", seed=seed)
    obs = env.reset()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, _, _, _ = env.step(uniform_legal_actions(env.action_masks(), rng))
    env.close()
    return obs


def mid_game(config=None, batch: int = 24, steps: int = 30, seed: int = 2):
    """A core state of ``batch`` games of racer against racer, row i stopped after about
    ``steps * (1 - i / batch)`` steps: games at different stages, for the planners' tests."""
    import agents
    from spit_env import core

    config = config or SpitConfig()
    racer = agents.make("racer")
    rng = np.random.default_rng(seed)
    state = core.init(config, batch, seed=seed)
    for k in range(steps):
        obs, masks = core.observe(state), core.legal_action_mask(state)
        acts = np.stack([racer(obs[:, s], masks[:, s], rng) for s in range(2)], axis=1)
        state, _ = core.step(state, acts, rows=np.arange(batch) >= (k * batch) // steps)
    return state
