"""The documentation site (docs/conf.py) leaves no page out and resolves the root files' links.

The site itself is built with warnings as errors by CI (.ci/run): a broken link, a reference to a
name that does not exist or a docstring that does not parse fails there. These checks need no
Sphinx: every Markdown file of docs/ is a page reachable from the front page's toctrees, the
README and CONTRIBUTING are included, and the links those two write for GitHub land on pages.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```\{(toctree|include)\}(.*?)\n(.*?)^```", re.M | re.S)
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def _conf():
    spec = importlib.util.spec_from_file_location("docs_conf", DOCS / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def site_markdown(docs: Path = DOCS) -> set[Path]:
    """The Markdown files of ``docs`` (the build's output left out)."""
    return {p.resolve() for p in docs.rglob("*.md") if "_build" not in p.relative_to(docs).parts}


def directives(page: Path) -> tuple[list[Path], list[Path]]:
    """(toctree entries, included files) of a MyST page, as paths."""
    entries, included = [], []
    for kind, argument, body in _BLOCK.findall(page.read_text()):
        if kind == "include":
            included.append((page.parent / argument.strip()).resolve())
            continue
        for line in body.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                entry = (page.parent / line).resolve()
                entries.append(entry if entry.suffix else entry.with_suffix(".md"))
    return entries, included


def reachable(docs: Path = DOCS) -> tuple[set[Path], set[Path]]:
    """(pages reachable from ``docs``/index.md through toctrees, files those pages include)."""
    seen, included, todo = set(), set(), [(docs / "index.md").resolve()]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        assert page.is_file(), f"a toctree names {page}, which does not exist"
        entries, inc = directives(page)
        todo += entries
        included.update(inc)
    return seen, included


def test_every_markdown_file_is_a_page_of_the_site():
    pages, included = reachable()
    missing = sorted(str(p.relative_to(ROOT)) for p in site_markdown() - pages)
    assert not missing, ("Markdown files in no toctree (add each to a toctree in docs/index.md): "
                         f"{missing}")
    for name in _conf().INCLUDED:
        assert (ROOT / name).resolve() in included, f"{name} is not included in the site"


def test_the_toctree_check_sees_a_forgotten_page(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.md").write_text("```{toctree}\n:hidden:\n\nA.md\nsub/C\n```\n")
    for name in ("A.md", "B.md", "sub/C.md", "sub/D.md"):
        (tmp_path / name).write_text("# a page\n")
    pages, _ = reachable(tmp_path)
    assert site_markdown(tmp_path) - pages == {(tmp_path / "B.md").resolve(),
                                               (tmp_path / "sub/D.md").resolve()}


@pytest.mark.parametrize("target, page", [
    ("docs/RULES.md", "RULES.md"),
    ("docs/results/", "results/README.md"),
    ("docs/results/tournament.md", "results/tournament.md"),
    ("docs/images/replay.png", "images/replay.png"),
    ("CONTRIBUTING.md", "contributing.md"),
    ("README.md", "index.md"),
    ("https://example.org/a.md", "https://example.org/a.md"),
    ("constraints.txt", "constraints.txt"),
])
def test_root_links_map_to_the_site(target, page):
    assert _conf().site_target(target) == page


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_every_link_of_the_root_files_lands_in_the_site(name):
    conf = _conf()
    broken = []
    for target in _LINK.findall((ROOT / name).read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        if not (DOCS / conf.site_target(target)).is_file():
            broken.append(target)
    assert not broken, f"{name} links to files the site does not hold: {broken}"


def test_ci_builds_the_site_as_contributing_says_with_warnings_as_errors():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    command = next(line for line in text.splitlines() if line.startswith("sphinx-build "))
    assert " -W " in command and command.endswith(" docs docs/_build/html")
    ci = (ROOT / ".ci" / "run").read_text()
    built = [line for line in ci.splitlines() if line.startswith("sphinx-build ")]
    assert built, "CI does not build the documentation site"
    assert all(" -W " in line for line in built), "CI builds the site without -W"
    assert set(command.split()) <= set(built[0].split()), \
        f"CI's build {built[0]!r} is not CONTRIBUTING's {command!r}"


def test_a_profile_in_a_docstring_is_never_an_email_link(tmp_path, caplog):
    pytest.importorskip("sphinx")  # the [docs] extra
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.core import publish_doctree

    conf = _conf()
    tree = publish_doctree("Profiles: racer@pro, name@latency.")
    assert [r["refuri"] for r in tree.findall(nodes.reference)] == [
        "mailto:racer@pro", "mailto:name@latency"]  # docutils reads them as e-mail addresses
    conf._unlink_mailto(None, tree)
    assert not list(tree.findall(nodes.reference))
    assert tree.astext() == "Profiles: racer@pro, name@latency."
    # a built page that still links to mailto: is a warning, an error under -W
    (tmp_path / "_api").mkdir()
    (tmp_path / "_api" / "x.html").write_text('<a href="mailto:racer&#37;&#52;&#48;pro">r</a>')
    (tmp_path / "index.html").write_text('<a href="https://example.org/">racer@pro</a>')
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"))
    with caplog.at_level("WARNING"):
        conf._refuse_mailto(app, None)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["_api/x.html links to mailto: racer@pro (a profile read as an e-mail address)"]
