"""The helpers the tests share (one module): short games for the API checkers, a mask computed
from a snapshot by the rule table of docs/RULES.md (independent of the core's mask code), deals
built to order, and random legal play (on ``spit_env.policy.uniform_legal_actions``, the
package's one "any legal move" helper)."""

from __future__ import annotations

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
