"""spit_env.read_observation: every field of rules.OBSERVATION decoded, exactly, under its own
name, and equal to what the public snapshot says."""

from __future__ import annotations

import numpy as np
import pytest

import spit_env
from spit_env import core, rules
from spit_env.config import SpitConfig
from spit_env.observation import (
    FIELD_KINDS,
    ObservationView,
    observation_view_markdown,
    read_observation,
)


def _base(name: str) -> str:
    return name[5:] if name.startswith("self_") else name[4:] if name.startswith("opp_") else name


def test_every_observation_field_has_a_decoder_and_a_documented_attribute():
    names = [f.name for f in rules.OBSERVATION]
    missing = [n for n in names if _base(n) not in FIELD_KINDS]
    assert not missing, f"fields of rules.OBSERVATION without a decoding in FIELD_KINDS: {missing}"
    assert list(ObservationView.__dataclass_fields__) == names
    for n in names:
        assert n in ObservationView.__doc__ and f"`{n}`" in observation_view_markdown()
    assert spit_env.read_observation is read_observation


def _from_snapshot(snap: dict, seat: int, config: SpitConfig) -> dict:
    """The decoded fields of seat ``seat``, computed from the snapshot."""
    out = {"phase": rules.PHASE_NAMES.index(snap["phase"]),
           "centre_top_rank": [rules.rank(snap["centre"][q][-1]) if snap["centre"][q] else 0
                               for q in (seat, 1 - seat)],
           "centre_size": [len(snap["centre"][q]) for q in (seat, 1 - seat)],
           "stall_timer": 0.0 if config.stall_timeout_ms is None else
           min((snap["clock_ms"] - snap["last_move_ms"]) / config.stall_timeout_ms, 1.0),
           "centre_rank_count": [[sum(rules.rank(c) == r for c in snap["centre"][q])
                                  for r in range(1, 14)] for q in (seat, 1 - seat)]}
    seen = [c for player in snap["stocks"] for place in player for c, up in place if up]
    seen += snap["centre"][0] + snap["centre"][1]
    out["unseen_rank"] = [4 - sum(rules.rank(c) == r for c in seen) for r in range(1, 14)]
    for prefix, q in (("self_", seat), ("opp_", 1 - seat)):
        places = snap["stocks"][q]
        out[prefix + "stock_top_rank"] = [rules.rank(pl[-1][0]) if pl and pl[-1][1] else 0 for pl in places]
        out[prefix + "stock_top_face_down"] = [bool(pl) and not pl[-1][1] for pl in places]
        out[prefix + "stock_height"] = [len(pl) for pl in places]
        out[prefix + "spit_count"] = len(snap["spit"][q])
        out[prefix + "cards_held"] = sum(map(len, places)) + len(snap["spit"][q])
        move = snap["in_flight"][q]
        out[prefix + "busy"] = move is not None
        shown = move is not None and (prefix == "self_" or config.observe_opponent_move)
        out[prefix + "move_in_flight"] = move["action"] if shown else -1
        out[prefix + "time_to_land"] = 0.0 if move is None else min(move["lands_ms"] - snap["clock_ms"], 1000)
        out[prefix + "idle"] = min(snap["clock_ms"] - snap["moved_ms"][q], 3000)
    return out


@pytest.mark.parametrize("observe_opponent_move", [True, False])
def test_decoded_fields_match_the_snapshot(observe_opponent_move):
    config = SpitConfig(observe_opponent_move=observe_opponent_move, auto_flip=False, max_game_ms=100_000)
    state = core.init(config, 8, seed=4)
    rng = np.random.default_rng(2)
    checked = 0
    for step in range(200):
        obs = core.observe(state)
        for seat in (0, 1):
            view = read_observation(obs[:, seat])
            for i in (0, 3, 7):
                want = _from_snapshot(core.snapshot(state, i), seat, config)
                for name, value in want.items():
                    got = getattr(view, name)[i]
                    np.testing.assert_allclose(np.asarray(got, float), np.asarray(value, float), atol=1e-3,
                                               err_msg=f"{name}, step {step}, row {i}, seat {seat}")
                checked += 1
        mask = core.legal_action_mask(state)
        state, _ = core.step(state, np.where(mask, rng.random(mask.shape), -1).argmax(axis=2))
    assert checked > 0
    assert view.self_stock_top_rank.dtype == np.int64 and view.self_busy.dtype == np.bool_
    assert view.centre_top_rank.shape == (8, 2) and view.self_stock_height.shape == (8, 5)
    assert view.unseen_rank.shape == (8, 13) and view.centre_rank_count.shape == (8, 2, 13)
    assert view.unseen_rank.dtype == np.int64 and view.opp_idle.dtype == np.float64


def test_one_observation_reads_as_a_batch_of_one_and_bad_shapes_are_named():
    obs = core.observe(core.init(SpitConfig(), 1))[0, 0]
    assert read_observation(obs).phase.shape == (1,)
    with pytest.raises(ValueError, match=rf"\(B, {rules.OBS_DIM}\)"):
        read_observation(np.zeros((2, 5), np.float32))
