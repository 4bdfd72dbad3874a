"""The folders keep their promises: what sits directly in experiments/ is a runnable script that no
other module imports (library pieces live in sub-folders or in agents/), agents/ and experiments/
import absolutely, and CONTRIBUTING.md's layout block is the tree: every file and folder it names
is there, and every module and sub-folder of the three packages is named in it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spit_env", "agents", "experiments")
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


# --- CONTRIBUTING.md's layout block --------------------------------------------------------------
#: a name in the block: a folder ("core/") or a file ("step.py", "RULES.md")
_NAME = re.compile(r"[\w.-]+/|[\w-]+(\.\w+)+")


def layout_block() -> list[str]:
    """The lines of the code block under CONTRIBUTING.md's "Layout" heading."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    start = text.index("## Layout and the direction of imports")
    block = text[text.index("```\n", start) + 4:]
    return block[:block.index("```")].splitlines()


def named_paths(lines: list[str]) -> list[str]:
    """The paths the block names, folders ending in "/".

    The block is a tree, two spaces a level: an entry line is its names (separated by one
    space) and then, after two spaces or more, what they hold; a line indented more than two
    spaces past the entry before it goes on with that entry's text. A folder's entries follow
    it, one level deeper.

    Raises:
        AssertionError: a line that is neither (naming the line).
    """
    paths: list[str] = []
    parents: list[tuple[int, str]] = []  # (indent, "a/b/") of the folders open above
    last = -2
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent > last + 2:
            continue  # the entry's text goes on
        names = re.split(r" {2,}", line.strip(), maxsplit=1)[0].split(" ")
        assert indent % 2 == 0 and all(_NAME.fullmatch(n) for n in names), (
            f"CONTRIBUTING.md's layout block, line {number}: not an entry (names one space "
            f"apart, two levels of two spaces at most past the one before): {line!r}")
        while parents and parents[-1][0] >= indent:
            parents.pop()
        assert indent == (parents[-1][0] + 2 if parents else 0), (
            f"CONTRIBUTING.md's layout block, line {number}: indented {indent}, not one level "
            f"below a folder: {line!r}")
        base = parents[-1][1] if parents else ""
        for name in names:
            paths.append(base + name)
        folders = [n for n in names if n.endswith("/")]
        if folders:
            assert len(names) == 1, (
                f"CONTRIBUTING.md's layout block, line {number}: a folder has a line of its own")
            parents.append((indent, base + folders[0]))
        last = indent
    return paths


def package_tree() -> set[str]:
    """Every module (but ``__init__.py``) and sub-folder of the packages, folders ending in "/"."""
    out = set()
    for package in PACKAGES:
        out.add(f"{package}/")
        for path in (ROOT / package).rglob("*"):
            rel = path.relative_to(ROOT)
            if any(part.startswith((".", "__pycache__")) for part in rel.parts):
                continue
            if path.is_dir():
                out.add(f"{rel.as_posix()}/")
            elif path.suffix == ".py" and path.name != "__init__.py":
                out.add(rel.as_posix())
    return out


def test_the_layout_block_reads_as_a_tree():
    lines = ["a/  what a holds", "  b.py c.py  two modules", "                 their text goes on",
             "  d/", "    e.py", "f/"]
    assert named_paths(lines) == ["a/", "a/b.py", "a/c.py", "a/d/", "a/d/e.py", "f/"]
    for bad in (["a/", " b.py"], ["a/", "  b.py", "    c.py"], ["a/", "  not a name  text"],
                ["a/ b/  two folders"]):
        try:
            named_paths(bad)
        except AssertionError:
            continue
        raise AssertionError(f"read {bad} as a tree")


def test_the_layout_block_names_what_is_there():
    named = named_paths(layout_block())
    twice = sorted({p for p in named if named.count(p) > 1})
    assert not twice, f"CONTRIBUTING.md's layout block names these twice: {twice}"
    missing = [p for p in named if not (ROOT / p).exists() or p.endswith("/") != (ROOT / p).is_dir()]
    assert not missing, f"CONTRIBUTING.md's layout block names what is not there: {missing}"


def test_every_module_and_folder_is_in_the_layout_block():
    unnamed = sorted(package_tree() - set(named_paths(layout_block())))
    assert not unnamed, ("say in CONTRIBUTING.md's layout block where these are and what they "
                         f"hold: {unnamed}")


def test_the_layout_block_lists_the_core_in_its_import_order():
    import spit_env.core

    doc = spit_env.core.__doc__
    order = re.findall(r"``(\w+)``", doc[doc.index("The modules, in the order"):])
    block = [p.removeprefix("spit_env/core/").removesuffix(".py")
             for p in named_paths(layout_block()) if p.startswith("spit_env/core/")
             and p.endswith(".py")]
    assert block == [m for m in dict.fromkeys(order) if m in block], \
        "CONTRIBUTING.md lists the core's modules in another order than spit_env/core/__init__.py"
