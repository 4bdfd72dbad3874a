"""The tournament script (experiments/tournament.py): its command line writes every output and
names what is wrong; the games and statistics are the match library's (tests/test_arena.py)."""

from __future__ import annotations

import json

import pytest

from experiments import tournament as T


def test_command_line_writes_every_output(tmp_path, capsys):
    out = T.main([
        "--players", "random,greedy@pro", "--games", "2", "--batch", "4", "--quiet",
        "--json", str(tmp_path / "t.json"), "--csv", str(tmp_path / "t.csv"),
        "--ratings-csv", str(tmp_path / "r.csv"), "--heatmap", str(tmp_path / "t.png"), "--latency-study", "greedy",
        "--latency-grid", "400,600", "--latency-games", "1",
        "--latency-json", str(tmp_path / "l.json"), "--latency-plot", str(tmp_path / "l.png"),
    ])
    saved = json.loads((tmp_path / "t.json").read_text())
    assert saved["players"] == ["random", "greedy@pro"] == out["tournament"]["players"]
    assert saved["pairings"][0]["games"] == 4
    assert (tmp_path / "t.csv").read_text().startswith("a,b,deals,games")
    assert (tmp_path / "r.csv").read_text().startswith("player,rating")
    printed = capsys.readouterr().out
    assert printed.startswith("Round robin: 2 duplicate deals per pairing (4 games), latency club")
    wrote = sorted(line.split(" ", 1)[1] for line in printed.splitlines()
                   if line.startswith("wrote "))
    assert wrote == sorted(str(p) for p in tmp_path.iterdir())  # a line for every file written
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "l.png").read_bytes()[:4] == b"\x89PNG"
    assert len(json.loads((tmp_path / "l.json").read_text())["points"]) == 2


def test_command_line_help_and_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        T.main(["--help"])
    assert exc.value.code == 0
    assert "--players" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        T.main(["--games", "0"])
    assert exc.value.code == 2


def test_ratings_csv_only_when_asked_and_long_names_shortened(tmp_path, capsys):
    T.main(["--players", "random,greedy", "--games", "1", "--batch", "2", "--quiet",
            "--csv", str(tmp_path / "t.csv")])
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]
    assert "wrote " + str(tmp_path / "t.csv") in capsys.readouterr().out
    assert T.short_name("runs/ppo_greedy_s0/model.zip") == "ppo_greedy_s0"
    assert T.short_name("runs/distilled.zip@pro") == "distilled@pro"
    assert T.short_name("runs/rllib_bot_s0/checkpoint") == "rllib_bot_s0"
    assert T.short_name("greedy@pro") == "greedy@pro"
    assert T.short_name("runs/a_very_long_model_name_indeed.zip") == "a_very_long_mod~"


def test_counts_meet_their_nouns_in_the_singular_and_with_separators(capsys):
    from agents.arena import plot_winrate_matrix

    T.main(["--players", "random,greedy", "--games", "1", "--batch", "2", "--quiet"])
    assert capsys.readouterr().out.startswith("Round robin: 1 duplicate deal per pairing (2 games)")
    one = {"players": ["a", "b"], "win_rate": [[0.5, 0.4], [0.6, 0.5]], "deals": 1,
           "ci_low": [[0, 0.1], [0.2, 0]], "ci_high": [[1, 0.8], [0.9, 1]]}
    title = plot_winrate_matrix(one).axes[0].get_title()
    assert "1 duplicate deal per pairing" in title
    title = plot_winrate_matrix({**one, "deals": 1000}).axes[0].get_title()
    assert "1,000 duplicate deals per pairing" in title


def test_short_names_are_distinct_and_the_legend_says_which_is_which(tmp_path, capsys):
    shipped = "/somewhere/agents/models/network.zip"
    steps = [f"runs/a/checkpoints/model_step_{n}.zip" for n in (1000000, 1000500)]
    folders = ["runs/s0/model.zip", "other/s0/model.zip"]
    players = ["network", shipped, *steps, *folders, "s0", "greedy@pro"]
    names = T.short_names(players)
    assert len(set(names.values())) == len(players), names
    assert all(len(n) <= 16 for n in names.values())
    assert names["network"] == "network" and names["greedy@pro"] == "greedy@pro"
    assert names[shipped] == "network.zip" and names["s0"] == "s0"
    assert names[steps[0]].endswith("1000000") and names[steps[1]].endswith("1000500")
    assert {names[f] for f in folders} == {"runs/s0", "other/s0"}
    # without a clash each name is its short_name
    assert T.short_names(["runs/s0/model.zip", "racer"]) == {"runs/s0/model.zip": "s0",
                                                            "racer": "racer"}
    # nothing tells two apart: numbered
    same = T.short_names(["runs/x/model.zip", "runs/x/checkpoint"])
    assert sorted(same.values()) == ["x#1", "x#2"]
    # the table: one row per player, each name once, and a legend line for each shortened one
    from agents.network import shipped_model_path

    network = str(shipped_model_path())
    T.main(["--players", f"network,{network},random", "--games", "1", "--batch", "2", "--quiet"])
    printed = capsys.readouterr().out
    ratings = printed.split("ratings (Bradley-Terry, Elo scale):\n")[1].splitlines()
    assert sorted(line.split()[0] for line in ratings[:3]) == ["network", "network.zip", "random"]
    assert f"  network.zip: {network}" in ratings[3:]


def test_a_missing_model_names_each_place_looked_at_once(tmp_path):
    from agents.network import load_model

    for given, looked in [
        (tmp_path / "x.zip", [tmp_path / "x.zip", tmp_path / "x.zip" / "model.zip"]),
        (tmp_path / "run", [tmp_path / "run", tmp_path / "run.zip", tmp_path / "run" / "model.zip"]),
    ]:
        with pytest.raises(ValueError) as err:
            load_model(given)
        assert f"(looked for {[str(p) for p in looked]})" in str(err.value)
