"""experiments.game_stats: the statistics agree with the games run_games reports, and the command
line writes its outputs and refuses bad arguments."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.arena import run_games
from experiments import game_stats as G
from spit_env.config import SpitConfig


def test_statistics_match_the_games_played():
    config = SpitConfig(max_rounds=3)  # some games hit the round limit
    stats = G.game_statistics("greedy", 24, config=config, seed=5, batch_size=8)
    games = run_games("greedy", "greedy", np.arange(24), config=config, seed=5, batch_size=8)
    assert stats["rounds"]["median"] == float(np.median(games["rounds"]))
    assert stats["minutes"]["p90"] == pytest.approx(np.percentile(games["clock_ms"], 90) / 60_000)
    ends = stats["ends"]
    assert sum(ends.values()) == pytest.approx(1.0)
    assert ends["max_rounds"] == pytest.approx((games["truncated"] & (games["rounds"] >= 3)).mean())
    assert ends["won"] == pytest.approx((games["winner"] >= 0).mean())
    assert 0 < ends["max_rounds"] < 1  # the limit is reached in some games, not all
    with pytest.raises(ValueError, match="games"):
        G.game_statistics("greedy", 0)


def test_command_line_writes_json_and_markdown(tmp_path):
    out = G.main(["--players", "greedy,random", "--games", "6", "--quiet", "--stall-timeout-ms",
                  "none", "--json", str(tmp_path / "s.json"), "--markdown", str(tmp_path / "s.md")])
    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved["rows"] == out["rows"] and [r["player"] for r in saved["rows"]] == ["greedy", "random"]
    assert saved["config"]["stall_timeout_ms"] is None
    page = (tmp_path / "s.md").read_text().splitlines()
    assert page[:2] == [G.MARKDOWN_TITLE, ""]  # a title: the documentation site's page needs one
    table = page[2:]
    assert len(table) == 4 and "one-pile win" in table[0]


@pytest.mark.parametrize("argv, msg", [
    (["--players", "nobody"], "unknown policy"),
    (["--stall-timeout-ms", "-5"], "stall_timeout_ms"),
    (["--games", "0"], "--games"),
])
def test_command_line_refuses_bad_arguments(argv, msg, capsys):
    with pytest.raises(SystemExit):
        G.main(argv)
    assert msg in capsys.readouterr().err
