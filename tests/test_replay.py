"""Replay records (spit_env.replay), their HTML page (spit_env.replay.html) and the replay script:
the record rebuilds every state through the core, bad files get clear errors, and what the page
shows beyond the snapshots (moves, races, marks) agrees with the events."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from helpers import build_deal

from experiments.replay import main as replay_main
from experiments.replay import play_game
from spit_env import SpitConfig, core, replay, rules
from spit_env.replay.html import card_label, marks_of, moves_of, replay_html, write_html

GAMES = [  # (players, config, seed, game): bots, profiles, other rules
    (("racer", "greedy@pro"), SpitConfig(), 7, 0),
    (("random", "chain"), SpitConfig(max_game_ms=60_000), 3, 2),
    (("greedy", "racer@novice"), SpitConfig(auto_flip=False, scoring="points", target_points=40), 1, 5),
]


@pytest.fixture(scope="module")
def records():
    return [play_game(players, config=config, seed=seed, game_id=game)
            for players, config, seed, game in GAMES]


def test_record_rebuilds_every_state_through_the_core(records):
    for record in records:
        assert replay.check(record) == len(record["steps"]) + 1
        assert record["outcome"]["finished"]
        assert record["outcome"]["steps"] == len(record["steps"])
        last = record["steps"][-1]["snapshot"]
        assert last["phase"] == "over"
        assert record["outcome"]["winner"] == last["winner"]


def test_record_survives_json_and_is_the_game_of_its_seed(records, tmp_path):
    record = records[0]
    path = replay.save(record, tmp_path / "game.json")
    again = replay.load(path)
    assert again == json.loads(json.dumps(record))
    assert replay.check(again) == len(record["steps"]) + 1
    # the same game as game 0 of seed 7 on the core: same deal, same start
    state = core.init(SpitConfig.from_dict(record["config"]), 1, 7, first_game=0)
    assert core.snapshot(state, 0) == record["initial"]
    assert [p["name"] for p in record["players"]] == ["racer", "greedy@pro"]
    assert record["players"][1]["latency"] == "pro"


def test_a_row_with_latencies_of_its_own_records_them_and_rebuilds():
    # a batch whose rows play at other latencies than the config's: the record of row 2 carries
    # that row's latencies (config and players), so it rebuilds alone
    config = SpitConfig(max_game_ms=20_000)
    latency = [(None, None), ("pro", 250), ("novice", "pro")]
    state = core.init(config, 3, 4, latency=latency)
    recorder = replay.Recorder(state, ["a", "b"], row=2)
    rng = np.random.default_rng(1)
    while state.phase[2] != rules.PHASE_OVER:
        mask = core.legal_action_mask(state)
        acts = np.where(mask, rng.random(mask.shape), -1).argmax(axis=2)
        state, out = core.step(state, acts, events=True)
        recorder.add(acts[2], state, out)
    record = recorder.record()
    assert [m["name"] for m in record["config"]["latency"]] == ["novice", "pro"]
    assert [p["latency"] for p in record["players"]] == ["novice", "pro"]
    assert SpitConfig.from_dict(record["config"]) == core.row_config(state, 2)
    assert replay.check(record) == len(record["steps"]) + 1
    other = replay.Recorder(core.init(config, 3, 4, latency=latency), ["a", "b"], row=1)
    assert [p["latency"] for p in other.players] == ["pro", "250ms"]


def test_deal_of_reads_back_the_deal_the_game_started_with():
    deal = build_deal({0: 5, 15: 9}, {0: 2, 15: 4}, size0=20)
    state = core.init(SpitConfig(), 1, 0, deals=[deal])
    assert replay.deal_of(core.snapshot(state, 0)) == (deal[0], deal[1])
    small = build_deal({}, {}, size0=8)  # a player with fewer than 15 cards and no spit cards
    state = core.init(SpitConfig(), 1, 0, deals=[small])
    assert replay.deal_of(core.snapshot(state, 0)) == (small[0], small[1])


def test_a_tampered_record_is_caught_at_the_step_that_differs(records):
    record = copy.deepcopy(records[0])
    k = len(record["steps"]) // 2
    snap = record["steps"][k]["snapshot"]
    snap["centre"][0] = snap["centre"][0][:-1] + [51 - snap["centre"][0][-1]]
    with pytest.raises(ValueError, match=rf"steps\[{k}\]\.snapshot: .*'centre'"):
        replay.check(record)
    record = copy.deepcopy(records[0])
    record["steps"][0]["actions"] = [22, 22]  # a slap at the start of play: illegal, played as WAIT
    with pytest.raises(ValueError, match="different state"):
        replay.check(record)


def test_load_names_the_problem(tmp_path, records):
    missing = tmp_path / "nope.json"
    with pytest.raises(ValueError, match="nope.json.*cannot be read"):
        replay.load(missing)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json.*not JSON"):
        replay.load(bad)
    other = tmp_path / "tournament.json"
    other.write_text(json.dumps({"players": ["a", "b"], "pairings": []}))
    with pytest.raises(ValueError, match="not a spit-env replay"):
        replay.load(other)
    newer = copy.deepcopy(records[0])
    newer["schema_version"] = 2
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(newer))
    with pytest.raises(ValueError, match=r"v2.json.*schema_version 2 is not supported.*reads replay schema version 1"):
        replay.load(path)
    broken = copy.deepcopy(records[0])
    broken["config"]["wait_ms"] = -5
    with pytest.raises(ValueError, match="config: wait_ms"):
        replay.validate(broken)
    broken = copy.deepcopy(records[0])
    broken["steps"][3]["actions"] = [0, 99]
    with pytest.raises(ValueError, match=r"steps\[3\]\.actions"):
        replay.validate(broken)
    broken = copy.deepcopy(records[0])
    del broken["deal"]
    with pytest.raises(ValueError, match=r"missing key\(s\) \['deal'\]"):
        replay.validate(broken)


def test_config_from_dict_is_the_inverse_of_to_dict():
    from spit_env import Latency

    for config in (SpitConfig(), SpitConfig(latency=("pro", 250), wait_ms=20, tie_break="player_1"),
                   SpitConfig(latency=(Latency.normal(400, 50, 100), Latency.lognormal(300, 90, 120)))):
        assert SpitConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(ValueError, match="unknown SpitConfig field"):
        SpitConfig.from_dict({"no_such_flag": 1})
    with pytest.raises(ValueError, match=r"latency\[1\]"):
        SpitConfig.from_dict({"latency": [{"kind": "fixed", "mean_ms": 100}, {"kind": "gamma"}]})


# --- what the page shows beyond the snapshots ----------------------------------------------------
def test_moves_account_for_every_landing_and_never_overlap(records):
    for record in records:
        moves = moves_of(record)
        frames = [record["initial"]] + [s["snapshot"] for s in record["steps"]]
        landings = sorted((ev["player"], ev["clock_ms"], ev["type"]) for s in record["steps"]
                          for ev in s["events"] if ev["type"] in ("play", "bounce", "fill", "flip", "slap"))
        landed = sorted((m["player"], m["end_ms"], m["outcome"]) for m in moves
                        if m["outcome"] in ("play", "bounce", "fill", "flip", "slap"))
        assert landed == landings
        for p in range(2):
            mine = [m for m in moves if m["player"] == p]
            for m in mine:
                assert m["start_ms"] == frames[m["step"]]["clock_ms"]
                assert m["start_ms"] <= m["end_ms"]
                if m["outcome"] == "in_flight":  # only a game truncated with a move in flight
                    assert frames[-1]["truncated"] and frames[-1]["in_flight"][p] is not None
                    assert m is mine[-1]
            for a, b in zip(mine, mine[1:], strict=False):
                assert a["end_ms"] <= b["start_ms"], "one hand, one move at a time (D7)"
        # every decision of a free seat is a move
        decisions = sum(1 for k, s in enumerate(record["steps"]) for p in range(2)
                        if frames[k]["in_flight"][p] is None and frames[k]["phase"] != "over")
        assert len(moves) == decisions


def test_races_name_the_card_that_got_there_first(records):
    races = [(r, m) for r in records for m in moves_of(r) if "race_ms" in m]
    assert races, "these games have lost races"
    for record, m in races:
        assert m["outcome"] == "bounce" and m["race_ms"] >= 0
        t = m["end_ms"] - m["race_ms"]
        assert m["start_ms"] <= t, "the rival landed while the card was in flight"
        plays = [ev for s in record["steps"] for ev in s["events"]
                 if ev["type"] == "play" and ev["pile"] == m["pile"] and t <= ev["clock_ms"] <= m["end_ms"]]
        assert plays[0]["clock_ms"] == t and plays[0]["card"] == m["race_card"]
        assert {ev["player"] for ev in plays} == {1 - m["player"]}, "only the rival played there meanwhile"


def test_marks_cover_round_ends_slaps_spits_and_the_end(records):
    record = records[0]
    marks = marks_of(record)
    kinds = {m["kind"] for m in marks}
    assert {"round_end", "slap", "spit", "game_end", "race"} <= kinds
    events = [ev for s in record["steps"] for ev in s["events"]]
    assert sum(m["kind"] == "round_end" for m in marks) == sum(ev["type"] == "round_end" for ev in events)
    assert sum(m["kind"] == "slap" for m in marks) == sum(ev["type"] == "slap" for ev in events)
    assert [m["clock_ms"] for m in marks] == sorted(m["clock_ms"] for m in marks)
    for m in marks:
        frame = record["steps"][m["step"] - 1]["snapshot"]
        assert frame["clock_ms"] >= m["clock_ms"], "a mark is shown once its time has come"
    end = record["outcome"]
    assert marks[-1]["kind"] == "game_end"
    assert marks[-1]["text"] == "game over: " + ("truncated" if end["truncated"] else end["result"])


def test_card_labels():
    assert card_label(0) == "A\u2663" and card_label(51) == "K\u2660" and card_label(22) == "10\u2666"
    with pytest.raises(ValueError):
        card_label(52)


# --- the page ------------------------------------------------------------------------------------
def _page_data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="spit-replay-data">(.*?)</script>', page, re.S)
    assert found, "the page embeds its data"
    return json.loads(found.group(1))


def test_page_is_self_contained_and_embeds_the_record(records):
    record = copy.deepcopy(records[1])
    record["players"][0]["name"] = "</script><script>alert(1)</script> __DATA__ /*__STYLE__*/"
    page = replay_html(record)
    assert _page_data(page)["record"] == json.loads(json.dumps(record))
    assert page.count("<script") == 2, "the data and the viewer, both inline"
    for external in ("<link", " src=", "http://", "https://", "@import", "url("):
        assert external not in page, f"the page must not load anything ({external!r})"
    assert "&lt;/script&gt;" in page.split("<body")[0], "the title is escaped"


def test_page_rejects_a_record_of_another_version(records):
    record = copy.deepcopy(records[0])
    record["schema_version"] = 7
    with pytest.raises(ValueError, match="schema_version 7"):
        replay_html(record)


# --- the script ----------------------------------------------------------------------------------
def test_script_writes_json_and_html_and_redraws_a_saved_record(tmp_path, capsys):
    page, data = tmp_path / "g.html", tmp_path / "g.json"
    record = replay_main(["--players", "greedy,chain@pro", "--seed", "4", "--game", "1",
                          "--out", str(page), "--json", str(data), "--quiet"])
    assert replay.load(data) == json.loads(json.dumps(record))
    assert _page_data(page.read_text())["record"] == json.loads(json.dumps(record))
    page2 = tmp_path / "again.html"
    replay_main(["--load", str(data), "--out", str(page2)])
    assert page2.read_text() == page.read_text()
    assert f"rebuilds all {len(record['steps']) + 1} recorded states" in capsys.readouterr().out


def _run(*args):
    return subprocess.run([sys.executable, "-m", "experiments.replay", *args],
                          capture_output=True, text=True, timeout=300)


def test_script_bad_input_gets_a_clear_error(tmp_path, records):
    res = _run("--help")
    assert res.returncode == 0 and "--players" in res.stdout and "--load" in res.stdout
    res = _run("--players", "racer,nosuchbot", "--out", str(tmp_path / "x.html"))
    assert res.returncode == 2 and "unknown policy 'nosuchbot'" in res.stderr and "racer" in res.stderr
    res = _run("--players", "racer,missing/model.zip", "--out", str(tmp_path / "x.html"))
    assert res.returncode == 2 and "no model file at 'missing/model.zip'" in res.stderr
    res = _run("--players", "racer", "--out", str(tmp_path / "x.html"))
    assert res.returncode == 2 and "exactly two players" in res.stderr
    res = _run("--players", "racer,greedy")
    assert res.returncode == 2 and "nothing to write" in res.stderr
    newer = copy.deepcopy(records[0])
    newer["schema_version"] = 2
    (tmp_path / "v2.json").write_text(json.dumps(newer))
    res = _run("--load", str(tmp_path / "v2.json"), "--out", str(tmp_path / "x.html"))
    assert res.returncode == 1 and "schema_version 2 is not supported" in res.stderr
    assert not (tmp_path / "x.html").exists(), "nothing is written on an error"


def test_a_trained_model_plays_by_its_path(tmp_path):
    from sb3_contrib import MaskablePPO

    from spit_env import SpitVecEnv

    model = MaskablePPO("MlpPolicy", SpitVecEnv(2, opponent="random", seed=0), n_steps=32, batch_size=32,
                        seed=0, device="cpu")
    model.save(tmp_path / "model.zip")  # untrained: it plays, badly
    spec = str(tmp_path / "model.zip") + "@pro"
    record = play_game((spec, "greedy"), config=SpitConfig(max_game_ms=60_000), seed=2)
    assert record["players"][0] == {"name": spec, "latency": "pro"}
    assert replay.check(record) == len(record["steps"]) + 1
    res = _run("--players", f"racer,{tmp_path / 'missing' / 'model.zip'}", "--out",
               str(tmp_path / "x.html"))
    assert res.returncode == 2 and "no model file" in res.stderr
    # "ppo" alone is the model shipped with the package
    record = play_game(("ppo", "greedy"), config=SpitConfig(max_game_ms=60_000), seed=2)
    assert replay.check(record) == len(record["steps"]) + 1


def test_write_html_creates_folders(tmp_path, records):
    path = write_html(records[2], tmp_path / "a" / "b" / "page.html")
    assert path.is_file() and "Spit replay: greedy vs racer@novice" in path.read_text()


def test_recorder_refuses_a_step_without_events():
    state = core.init(SpitConfig(), 1, 0)
    rec = replay.Recorder(state, ["a", "b"])
    state, out = core.step(state, np.zeros((1, 2), np.int64))
    with pytest.raises(ValueError, match="events=True"):
        rec.add([0, 0], state, out)
    with pytest.raises(ValueError, match="players must be two"):
        replay.Recorder(state, ["only one"])
    assert rules.N_PLAYERS == 2


def test_a_record_made_before_a_snapshot_key_existed_still_checks(records):
    """Records made before the snapshots gained ``moved_ms`` lack it; they still check, on the
    keys they hold, and a key the snapshots do not have is still caught."""
    record = copy.deepcopy(records[0])
    for snap in [record["initial"]] + [s["snapshot"] for s in record["steps"]]:
        del snap["moved_ms"]
    assert replay.check(record) == len(record["steps"]) + 1
    record["steps"][1]["snapshot"]["hidden"] = 1
    with pytest.raises(ValueError, match=r"steps\[1\]\.snapshot: .*'hidden'"):
        replay.check(record)
