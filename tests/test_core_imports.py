"""The core's modules build on each other in the order its package docstring gives: each imports
only the facts of ``spit_env`` and core modules named before it, at the top of the module (no
import inside a function hides a circle)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import spit_env.core

CORE = Path(spit_env.core.__file__).parent
MODULES = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
FACTS = {"rules", "streams", "checks", "config", "latency"}


def _docstring_order() -> list[str]:
    text = spit_env.core.__doc__
    paragraph = text[text.index("The modules, in the order"):]
    names = re.findall(r"``(\w+)``", paragraph)
    return list(dict.fromkeys(n for n in names if n in MODULES))


def _imports(module: str):
    """(line, level, name, at the top of the module) of every relative import of ``module``."""
    tree = ast.parse((CORE / f"{module}.py").read_text())
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            names = [node.module] if node.module else [a.name for a in node.names]
            for name in names:
                yield node.lineno, node.level, name.split(".")[0], id(node) in top


def test_the_docstring_names_every_core_module_once_in_import_order():
    order = _docstring_order()
    assert sorted(order) == MODULES, f"the docstring's module order misses {set(MODULES) - set(order)}"
    wrong = []
    for k, module in enumerate(order):
        for line, level, name, at_top in _imports(module):
            if level == 1 and name not in order[:k]:
                wrong.append(f"core/{module}.py:{line} imports {name}, not named before it")
            if level == 2 and name not in FACTS:
                wrong.append(f"core/{module}.py:{line} imports spit_env.{name}, not a fact")
            if not at_top:
                wrong.append(f"core/{module}.py:{line} imports {name} inside a function")
    assert not wrong, "\n".join(wrong)
