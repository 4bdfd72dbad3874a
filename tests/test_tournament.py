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
    assert T.short_name("runs/distilled.zip@expert") == "distilled@expert"
    assert T.short_name("runs/rllib_bot_s0/checkpoint") == "rllib_bot_s0"
    assert T.short_name("greedy@expert") == "greedy@expert"
    assert T.short_name("runs/a_very_long_model_name_indeed.zip") == "a_very_long_mod~"
