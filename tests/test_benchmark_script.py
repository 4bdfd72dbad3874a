"""The benchmark script runs at toy size and reports every row it promises (no speed is asserted:
speed is measured by the script, never by a test)."""

from __future__ import annotations

import pytest

from experiments import benchmark


def test_the_benchmark_reports_its_rows_and_ratios_at_toy_size(capsys):
    out = benchmark.main(["--quick", "--repeats", "1", "--sizes", "64", "--observed-sizes", "64",
                          "--only", "core", "observed", "--quiet"])
    assert [r["batch_size"] for r in out["core"]] == [64] == [r["batch_size"] for r in out["core_observed"]]
    assert out["core"][0]["ratio_to_reference"] > 0 and out["core_observed"][0]["cpu_ratio_to_reference"] > 0
    assert [r["batch_size"] for r in out["observation_path"]] == [64]
    assert out["adapters"] == []  # --only left them out
    assert "observation path B=64" in capsys.readouterr().out


def test_the_planner_rows_give_decisions_rollout_steps_and_ratios():
    import argparse

    rows = benchmark._planner_rows(argparse.Namespace(quick=True, repeats=1))
    assert [r["name"] for r in rows] == [f"{name} B=256 vs racer" for name, _, _ in benchmark.PLANNER_BUDGETS]
    assert rows[0]["budget"] == {"rollouts": 16, "horizon_ms": 3000}
    for row in rows:
        assert row["steps_per_s"] > 0 and row["rollouts_per_decision"] >= 2
        assert row["rollout_steps_per_decision"] >= row["rollouts_per_decision"]


def test_the_expert_rows_are_the_search_players_at_their_budgets():
    pytest.importorskip("sb3_contrib")
    import argparse

    rows = benchmark._expert_rows(argparse.Namespace(quick=True, repeats=1))
    assert [r["name"] for r in rows] == [f"{name} B=256 vs racer" for name, _, _ in benchmark.EXPERT_BUDGETS]
    assert rows[2]["budget"]["rollout_policy"] == "network"
    for row in rows:
        assert row["steps_per_s"] > 0 and row["cpu_ms_per_decision"] > 0
        assert row["rollouts_per_decision"] >= 2


@pytest.mark.parametrize("argv", [["--only", "nothing"], ["--repeats", "0"], ["--sizes", "0"]])
def test_bad_arguments_are_refused(argv):
    with pytest.raises(SystemExit):
        benchmark.main(argv)
