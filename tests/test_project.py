"""The project's own promises: the README's commands are the ones CI runs, and no code reads the
team's shared folder (users do not have it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md must open with a bash block holding the two commands"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2
    assert "experiments.train_ppo" in commands[0]
    assert "pytest" in commands[1]
    for command in commands:
        assert "-c constraints.txt" in command, "torch must come from the pinned CPU build"


def test_ci_runs_the_readme_setup_and_test_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    _, test_command = _readme_commands()
    for part in test_command.split(" && ")[1:]:
        if part.startswith(". "):
            continue  # CI activates its own venv folder
        assert part in ci, f"CI does not run the README's {part!r}"


def test_constraints_pin_the_cpu_torch_and_pyproject_keeps_a_range():
    assert "torch==2.13.0" in (ROOT / "constraints.txt").read_text().split()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"torch>=[\d.]+,<\d+"', pyproject)


def test_code_never_reads_the_shared_folder():
    offenders = []
    for folder in ("spit_env", "agents", "experiments", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == Path(__file__).name:
                continue
            if re.search(r"\.\./" + "shared|/work/" + "shared", path.read_text()):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"these files read the shared folder, which users do not have: {offenders}"


def test_every_script_error_names_its_program():
    """A script's own errors read as argparse's and tyro's: "python -m experiments.X: error: ...".

    A message that opens with a bare "error:" (printed or given to sys.exit) is refused.
    """
    import ast

    bare = []
    for path in sorted((ROOT / "experiments").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            first = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
            if isinstance(first, ast.Constant) and isinstance(first.value, str) \
                    and first.value.startswith("error:"):
                bare.append(f"{path.name}:{node.lineno}")
    assert not bare, f"errors without the program's name: {bare}"
