"""render_mode="rgb_array" in every view: a (576, 800, 3) uint8 frame of the snapshot, drawn by
spit_env.render_rgb in the replay page's look; an unsupported mode is refused with the list."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import build_deal

import spit_env
from spit_env import Latency, SpitConfig, rules
from spit_env.render_rgb import FRAME_SHAPE, render_rgb

SEAT_COLOURS = ((79, 195, 247), (255, 183, 77))
CARD_BACK = (43, 79, 146)


def _count(frame: np.ndarray, colour) -> int:
    return int(np.all(frame == np.array(colour, np.uint8), axis=-1).sum())


def test_every_view_renders_a_frame_of_its_snapshot():
    par = spit_env.parallel_env(render_mode="rgb_array")
    par.reset(seed=1)
    aec = spit_env.env(render_mode="rgb_array")
    aec.reset(seed=1)
    gym = spit_env.SpitGymEnv(render_mode="rgb_array", learner_seat=0)
    gym.reset(seed=1)
    venv = spit_env.SpitVecEnv(2, render_mode="rgb_array", learner_seat=0, seed=1)
    venv.reset()
    frames = [par.render(), aec.render(), gym.render(), *venv.get_images()]
    for frame in frames:
        assert frame.shape == FRAME_SHAPE and frame.dtype == np.uint8
    # the same deal (game 0 of seed 1) and names: the same picture; a different game differs
    np.testing.assert_array_equal(frames[0], frames[1])
    assert not np.array_equal(frames[0], frames[4])
    tiled = venv.render()  # SB3's tile_images: two frames one above the other
    assert tiled.shape == (2 * FRAME_SHAPE[0], FRAME_SHAPE[1], 3)
    np.testing.assert_array_equal(tiled[FRAME_SHAPE[0]:], frames[4])
    np.testing.assert_array_equal(venv.env_method("render", indices=[1])[0], frames[4])


def test_a_frame_is_a_pure_function_of_the_snapshot_and_shows_the_table():
    env = spit_env.parallel_env(SpitConfig(latency=Latency.fixed(300)), render_mode="rgb_array")
    obs, _ = env.reset(seed=0, options={"deal": build_deal({0: 4}, {15: 5})})
    start = env.render()
    snap = json.loads(json.dumps(env.snapshot()))
    np.testing.assert_array_equal(render_rgb(snap), start)
    assert _count(start, CARD_BACK) > 0  # face-down stock cards and the spit stacks
    # no move in flight: no seat colour outlines, only the seats' two dots
    dots = [_count(start, c) for c in SEAT_COLOURS]
    # seat 0 plays its 4 on the 5: the card in flight and the pile it aims at are outlined
    play = rules.play_action(0, 1)
    assert obs["player_0"]["action_mask"][play]
    env.step({"player_0": play, "player_1": rules.WAIT})
    assert env.snapshot()["in_flight"][0] is not None
    flying = env.render()
    assert _count(flying, SEAT_COLOURS[0]) > dots[0] + 500
    assert _count(flying, SEAT_COLOURS[1]) == dots[1]
    with pytest.raises(ValueError, match="missing the key 'stocks'"):
        render_rgb({k: v for k, v in snap.items() if k != "stocks"})


@pytest.mark.parametrize("make", [
    lambda m: spit_env.parallel_env(render_mode=m),
    lambda m: spit_env.env(render_mode=m),
    lambda m: spit_env.SpitGymEnv(render_mode=m),
    lambda m: spit_env.SpitVecEnv(1, render_mode=m),
])
def test_an_unsupported_render_mode_is_refused_with_the_supported_ones(make):
    with pytest.raises(ValueError, match=r"\['ansi', 'human', 'rgb_array'\], got 'rgb_array_list'"):
        make("rgb_array_list")
    assert make("rgb_array").metadata["render_modes"] == ["ansi", "human", "rgb_array"]
