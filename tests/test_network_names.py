"""The policy network's names: ``network`` and ``ppo`` are one registered factory, ``agents.ppo``
is a deprecated re-export of ``agents.network`` and ``spit_env.observation`` that warns when
imported, and nothing of the project imports it (a saved model file loads without it)."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from spit_env import policy

ROOT = Path(__file__).resolve().parents[1]


def test_network_and_ppo_are_the_same_registered_factory():
    found = {ep.name: ep.value for ep in importlib.metadata.entry_points(
        group=policy.ENTRY_POINT_GROUP)}
    assert found["network"] == found["ppo"] == "agents.network:make_network"


def test_the_old_module_warns_and_re_exports_the_same_objects():
    code = ("import warnings\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    import agents.ppo as old\n"
            "import agents.network as new, spit_env.observation as obs\n"
            "assert old.PPOPolicy is new.NetworkPolicy is new.PPOPolicy\n"
            "assert old.make_ppo is new.make_network\n"
            "assert old.observed_masks is obs.observed_masks and old.RULE_OPTIONS is obs.RULE_OPTIONS\n"
            "assert all(getattr(old, n) is getattr(new, n) for n in new.__all__ if n != 'make_network')\n"
            "print(sorted({w.category.__name__ for w in caught if 'agents.ppo' in str(w.message)}))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["['DeprecationWarning']"]


def _imports_of_the_old_module(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                 if isinstance(node, ast.ImportFrom) and node.module else [])
        if "agents.ppo" in names:
            lines.append(node.lineno)
    return lines


def test_nothing_of_the_project_imports_the_old_module():
    sources = [p for folder in ("agents", "experiments", "spit_env", "tests")
               for p in sorted((ROOT / folder).rglob("*.py"))
               if p.name not in ("ppo.py", "test_network_names.py")]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in sources for n in _imports_of_the_old_module(p)]
    notebooks = [p.name for p in (ROOT / "notebooks").glob("*.ipynb")
                 if "agents.ppo " in p.read_text() or "agents.ppo\\n" in p.read_text()
                 or "from agents import ppo" in p.read_text()]
    assert not offenders and not notebooks, offenders + notebooks


def test_a_model_file_loads_without_the_old_module():
    pytest.importorskip("sb3_contrib")
    code = ("import sys, warnings\n"
            "warnings.simplefilter('error', DeprecationWarning)\n"
            "from sb3_contrib import MaskablePPO\n"
            "from agents.network import shipped_model_path\n"
            "MaskablePPO.load(shipped_model_path(), device='cpu')\n"
            "MaskablePPO.load(sys.argv[1], device='cpu')\n"
            "assert 'agents.ppo' not in sys.modules and 'agents.ppo_model' in sys.modules\n")
    saved = ROOT / "tests" / "data" / "model_obs241.zip"  # an older file: agents.ppo_model too
    proc = subprocess.run([sys.executable, "-c", code, str(saved)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
