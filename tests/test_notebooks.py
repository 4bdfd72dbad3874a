"""Both notebooks run top to bottom at a small size, through ``experiments.run_notebook`` (nbclient,
the current interpreter's kernel), which shows the cells' progress and passes their output through.

``heuristics_benchmark.ipynb`` saves its figures; ``ppo_training.ipynb`` trains a tiny run (2,048
steps), plays the shipped model against every bot on 3 deals and saves its figures.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "heuristics_benchmark.ipynb"


def _run(path):
    """The notebook executed, and what the run printed (its progress and the cells' output)."""
    from experiments.run_notebook import run_notebook

    stream = io.StringIO()
    nb = run_notebook(path, timeout=900, stream=stream)
    return nb, stream.getvalue()


def test_heuristics_notebook_runs_and_saves_its_figures(tmp_path, monkeypatch):
    out = tmp_path / "figures"
    monkeypatch.setenv("SPIT_NB_GAMES", "3")
    monkeypatch.setenv("SPIT_NB_LATENCY_GAMES", "2")
    monkeypatch.setenv("SPIT_NB_LATENCY_GRID", "400,600")
    monkeypatch.setenv("SPIT_NB_OUT", str(out))
    monkeypatch.setenv("SPIT_NB_PLANNER_GAMES", "1")
    monkeypatch.delenv("CI", raising=False)  # the notebook shows its progress outside CI only
    # "python3" is the kernel of the running interpreter: jupyter_client starts it with
    # sys.executable when ipykernel is importable here
    nb, printed = _run(NOTEBOOK)
    cells = sum(c.cell_type == "code" for c in nb.cells)
    assert f"[cell 1/{cells}]" in printed and f"[cell {cells}/{cells}]" in printed
    assert f"notebook {NOTEBOOK.name}: {cells}/{cells} cells (100%)" in printed
    assert "tournament (6 pairings): 36/36 games (100%)" in printed, "a cell's progress"
    assert "\r" not in printed
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
    nb, printed = _run(TRAINING)
    assert "training: " in printed and "final evaluation (" in printed
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
    assert played["model"] == "network" and played["deals"] == 3
    assert set(played["results"]) == {"random", "greedy", "chain", "racer"}
    assert all(r["games"] == 6 for r in played["results"].values())
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []))
    assert images >= 5


def test_run_notebook_script_refuses_bad_input_and_names_the_failing_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print('first')"), nbformat.v4.new_code_cell("1 / 0")]
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "experiments.run_notebook", *args],
                              capture_output=True, text=True, timeout=300,
                              cwd=Path(__file__).resolve().parents[1])

    res = run(str(path), "--inplace")
    assert res.returncode == 1 and "ZeroDivisionError" in res.stderr
    assert "[cell 2/2] 1 / 0" in res.stderr and "first" in res.stderr
    assert nbformat.read(path, as_version=4).cells[0].outputs == [], "a failed run wrote the file"
    res = run(str(tmp_path / "none.ipynb"))
    assert res.returncode == 2 and "no notebook at" in res.stderr
    res = run(str(path), "--inplace", "--out", str(tmp_path / "x.ipynb"))
    assert res.returncode == 2 and "not both" in res.stderr
