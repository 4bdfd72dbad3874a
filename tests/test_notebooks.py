"""Both notebooks run top to bottom at a small size (nbclient, the current interpreter's kernel).

``heuristics_benchmark.ipynb`` saves its figures; ``ppo_training.ipynb`` trains a tiny run (2,048
steps), plays the shipped model against every bot on 3 deals and saves its figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "heuristics_benchmark.ipynb"


def test_heuristics_notebook_runs_and_saves_its_figures(tmp_path, monkeypatch):
    out = tmp_path / "figures"
    monkeypatch.setenv("SPIT_NB_GAMES", "3")
    monkeypatch.setenv("SPIT_NB_LATENCY_GAMES", "2")
    monkeypatch.setenv("SPIT_NB_LATENCY_GRID", "400,600")
    monkeypatch.setenv("SPIT_NB_OUT", str(out))
    monkeypatch.setenv("SPIT_NB_PLANNER_GAMES", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # "python3" is the kernel of the running interpreter: jupyter_client starts it with
    # sys.executable when ipykernel is importable here
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    for name in ("winrate_matrix.png", "ratings.png", "latency_curve.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG", name
    result = json.loads((out / "tournament.json").read_text())
    assert result["deals"] == 3 and len(result["pairings"]) == 6
    curve = json.loads((out / "latency_curve.json").read_text())
    assert [p["mean_ms"] for p in curve["points"]] == [400, 600]
    # the notebook showed its plots inline
    text = "".join(o.get("data", {}).get("text/markdown", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    assert "| planner-fast | racer | 2 |" in text  # the planner's live pairings
    assert "| digger | greedy |" in text  # the ten-line bot, registered and played
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []))
    assert images >= 3


TRAINING = NOTEBOOK.parent / "ppo_training.ipynb"


def test_training_notebook_runs_at_a_tiny_size(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    out = tmp_path / "figures"
    monkeypatch.setenv("SPIT_NB_TINY", "1")
    monkeypatch.setenv("SPIT_NB_TRAIN_STEPS", "2048")
    monkeypatch.setenv("SPIT_NB_DEALS", "3")
    monkeypatch.setenv("SPIT_NB_OUT", str(out))
    nb = nbformat.read(TRAINING, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(TRAINING.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    # the small run's folder, and its curve drawn from it
    assert (out / "run" / "model.zip").is_file()
    assert json.loads((out / "run" / "eval.json").read_text())["final"]["timesteps"] >= 2048
    for name in ("small_run_curve.png", "shipped_run_curve.png", "shipped_vs_bots.png",
                 "winrate_by_rounds.png", "deal_outcomes.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG", name
    played = json.loads((out / "shipped_vs_bots.json").read_text())
    assert played["model"] == "ppo" and played["deals"] == 3
    assert set(played["results"]) == {"random", "greedy", "chain", "racer"}
    assert all(r["games"] == 6 for r in played["results"].values())
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []))
    assert images >= 5
