"""render_mode="rgb_array" in every view: a (576, 800, 3) uint8 frame of the snapshot, drawn by
spit_env.render_rgb in the replay page's look; an unsupported mode is refused with the list."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import build_deal

import spit_env
from spit_env import Latency, SpitConfig, rules
from spit_env.render_rgb import FRAME_SHAPE, frame_layout, render_rgb

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



def _meets(a, b) -> bool:
    """Whether boxes (x0, y0, x1, y1), x1 and y1 exclusive, share a pixel."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _finished_snapshot(seed: int) -> dict:
    env = spit_env.parallel_env()
    obs, _ = env.reset(seed=seed)
    while env.agents:  # each seat plays its last legal move: a whole game, no randomness
        obs, *_ = env.step({a: int(np.flatnonzero(obs[a]["action_mask"])[-1])
                            for a in env.agents})
    snap = env.snapshot()
    assert snap["phase"] == "over" and snap["winner"] >= 0
    return snap


LONG = "distilled-planner-student-2026-12-04@novice"


@pytest.mark.parametrize("names", [
    ("player_0", "player_1"),
    ("player_0 (opponent)", "player_1 (learner)"),  # Spit-v0's
    (LONG, "you"),
])
@pytest.mark.parametrize("seed", [0, 1])  # seat 0 wins game 0, seat 1 game 1
def test_the_end_banner_covers_no_card_and_the_labels_name_the_owners(seed, names):
    snap = _finished_snapshot(seed)
    boxes = frame_layout(snap, names)
    banners = [(text, box) for kind, text, box in boxes if kind == "banner"]
    winner = names[snap["winner"]]
    assert [text for text, _ in banners] == [f"{winner} wins"]
    banner = banners[0][1]
    for kind, what, box in boxes:
        if kind != "banner":
            assert not _meets(banner, box), f"the banner {banner} meets the {kind} {what!r} {box}"
    # the banner is drawn where the layout says: its fill fills most of its box
    x0, y0, x1, y1 = banner
    frame = render_rgb(snap, names)
    assert _count(frame[y0:y1, x0:x1], (14, 52, 32)) > 0.3 * (x1 - x0) * (y1 - y0)
    # the piles and spit stacks are labelled by their owners (a long name cut with "...")
    labels = [(what, box) for kind, what, box in boxes if kind == "text" and 300 < box[1] < 376]
    texts = [w for w, _ in labels]
    for whose in [f"{names[q]}'s pile" for q in (0, 1)] + [f"{n}'s spit cards" for n in names]:
        name, what = whose.split("'s ")
        cut = [w for w in texts if w.endswith(f"...'s {what}") and name.startswith(w.split("...")[0])
               and len(w) > 20]
        assert whose in texts or (len(name) > 20 and len(cut) == 1), (whose, texts)
    counts = [w for w, _ in labels if w.endswith((" card", " cards"))]
    for n in (*map(len, snap["centre"]), *map(len, snap["spit"])):
        assert f"{n:,} card{'' if n == 1 else 's'}" in counts
    assert not [w for w, _ in labels if w.startswith(("pile ", "spit "))]
    # the bottom seat's (seat 0's) pile on the left, as on the page and in the terminal game
    own, opp = (next(box[0] for w, box in labels if w.startswith(names[q][:10]) and
                     w.endswith("pile")) for q in (0, 1))
    assert own < opp
    # no two labels meet, and every box lies inside the frame
    assert len(labels) == 8
    for i, (_, a) in enumerate(labels):
        assert not any(_meets(a, b) for _, b in labels[i + 1:])
    for _, _, (bx0, by0, bx1, by1) in boxes:
        assert 0 <= bx0 < bx1 <= FRAME_SHAPE[1] and 0 <= by0 < by1 <= FRAME_SHAPE[0]


def test_spit_v0_frames_name_the_learner_and_the_opponent():
    env = spit_env.SpitGymEnv(render_mode="rgb_array", learner_seat=1)
    env.reset(seed=3)
    names = ("player_0 (opponent)", "player_1 (learner)")
    np.testing.assert_array_equal(env.render(), render_rgb(env.snapshot(), names))
    texts = [what for kind, what, _ in frame_layout(env.snapshot(), names) if kind == "text"]
    assert {"player_0 (opponent)'s pile", "player_1 (learner)'s pile"} <= set(texts)
