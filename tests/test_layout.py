"""The folders keep their promises: what sits directly in experiments/ is a runnable script that no
other module imports (library pieces live in sub-folders or in agents/), and agents/ and
experiments/ import absolutely."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.py") if p.stem != "__init__")


def _imports(path: Path):
    """(line, module name, level) of every import in ``path``; ``from a import b`` gives a.b too."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            yield node.lineno, base, node.level
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}" if base else alias.name, node.level


def _sources():
    for folder in ("agents", "experiments", "spit_env"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_every_script_runs_and_no_module_imports_a_script():
    for name in SCRIPTS:
        text = (ROOT / "experiments" / f"{name}.py").read_text()
        assert 'if __name__ == "__main__":' in text, f"experiments/{name}.py is not a script"
    scripts = {f"experiments.{name}" for name in SCRIPTS}
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {module}"
                 for path in _sources() for line, module, _ in _imports(path)
                 if module in scripts]
    assert not offenders, "a script is a leaf; move what is shared into a library module:\n" \
        + "\n".join(offenders)


def test_agents_and_experiments_import_absolutely():
    relative = [f"{path.relative_to(ROOT)}:{line}" for folder in ("agents", "experiments")
                for path in sorted((ROOT / folder).rglob("*.py"))
                for line, _, level in _imports(path) if level]
    assert not relative, f"relative imports: {relative}"
