"""The tournament script (experiments/tournament.py): its command line writes every output and
names what is wrong; the games and statistics are the match library's (tests/test_arena.py)."""

from __future__ import annotations

import json

import pytest

from experiments import tournament as T


def test_command_line_writes_every_output(tmp_path):
    out = T.main([
        "--players", "random,greedy@pro", "--games", "2", "--batch", "4", "--quiet",
        "--json", str(tmp_path / "t.json"), "--csv", str(tmp_path / "t.csv"),
        "--heatmap", str(tmp_path / "t.png"), "--latency-study", "greedy",
        "--latency-grid", "400,600", "--latency-games", "1",
        "--latency-json", str(tmp_path / "l.json"), "--latency-plot", str(tmp_path / "l.png"),
    ])
    saved = json.loads((tmp_path / "t.json").read_text())
    assert saved["players"] == ["random", "greedy@pro"] == out["tournament"]["players"]
    assert saved["pairings"][0]["games"] == 4
    assert (tmp_path / "t.csv").read_text().startswith("a,b,deals,games")
    assert (tmp_path / "t_ratings.csv").exists()
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
