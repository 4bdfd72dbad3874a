"""Sphinx configuration of the documentation site.

The site's pages are the project's Markdown files (MyST): the README is the front page and
CONTRIBUTING.md a page, both included from outside this folder (``index.md``,
``contributing.md``); every other page is a file of ``docs/``. The API reference is generated
from the docstrings (autodoc and autosummary, Google style through napoleon). docutils reads a
profile such as ``racer@pro`` as an e-mail address; :func:`_unlink_mailto` keeps it text, and a
page with a ``mailto:`` link fails the build (:func:`_refuse_mailto`).

Build (warnings are errors, as in CI)::

    sphinx-build -W --keep-going -E -b html docs docs/_build/html
"""

from __future__ import annotations

import html
import importlib
import posixpath
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "spit-env"
author = "spit-env contributors"
copyright = "spit-env contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# "--resume" stays two hyphens (the flags), not an en dash
smartquotes = False

html_theme = "furo"
html_title = "spit-env"

# --- MyST -------------------------------------------------------------------------------------
# The pages link to each other's sections by their GitHub anchors (docs/ENVIRONMENTS.md#seeding).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# --- API reference ----------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
# Each object is documented once, in the module that defines it: a package's page lists its
# modules, not the names its __all__ re-exports (spit_env.SpitConfig is spit_env.config.SpitConfig).
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
# Ray (the [scale] extra) is mocked: the RLlib modules' pages build without it, the same with
# or without Ray installed.
autodoc_mock_imports = ["ray"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# a dataclass's fields are listed with their docstrings: no second list of bare parameter types
autodoc_typehints_description_target = "documented"
autodoc_class_signature = "mixed"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True

# --- the included root files ------------------------------------------------------------------
#: the Markdown files outside docs/ and the site's page of each
INCLUDED = {"README.md": "index.md", "CONTRIBUTING.md": "contributing.md"}
_LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def site_target(target: str) -> str:
    """The site's path of a link written in a root Markdown file, relative to ``docs/``.

    Args:
        target: the link's path as the file writes it, relative to the repository's root
            (``docs/RULES.md``, ``CONTRIBUTING.md``, ``docs/results/``).

    Returns:
        The same file's path relative to ``docs/``: ``RULES.md``, ``contributing.md``, and for a
        folder its ``README.md`` (``results/README.md``), as GitHub shows a folder's README.
        A URL, or a file outside ``docs/`` that is not one of :data:`INCLUDED`, comes back
        unchanged (the build then reports it as a broken link).
    """
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return target
    path = posixpath.normpath(target)
    if path in INCLUDED:
        return INCLUDED[path]
    if not path.startswith("docs/"):
        return target
    inside = path[len("docs/"):]
    if (DOCS / inside).is_dir():
        inside = posixpath.join(inside, "README.md")
    return inside


def _rewrite_links(app, relative_path, parent_docname, content):
    """``include-read``: the root files' links, written for GitHub, made relative to ``docs/``."""
    if Path(relative_path).name not in INCLUDED:
        return
    content[0] = _LINK.sub(
        lambda m: m[1] + site_target(m[2]) + (m[3] or "") + m[4], content[0])


def _annotated(name: str) -> bool:
    """Whether the attribute of dotted ``name`` has a type annotation in its class or module."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:-1]:
                owner = getattr(owner, part)
        except AttributeError:
            return False
        return parts[-1] in getattr(owner, "__annotations__", {})
    return False


def _keep_prose_prefix(app, what, name, obj, options, lines):
    """An annotated attribute's docstring keeps the words before its first colon.

    Napoleon reads the field docstring "Run folder: config.json, ..." as an attribute of type
    "Run folder" (Google style's ``type: description``). An attribute with an annotation (the
    trainers' dataclass fields) has its type already, so the words are the description's: put back.
    """
    if what not in ("attribute", "data") or ":type:" not in "".join(lines[-1:]):
        return
    if not _annotated(name):
        return
    words = lines[-1].split(":type:", 1)[1].strip()
    del lines[-1]
    if lines and not lines[-1].strip():
        del lines[-1]
    if lines:
        lines[0] = f"{words}: {lines[0]}"
    else:
        lines.append(words)


def _help_values(name: str) -> dict[str, str]:
    """The placeholder values the trainer of the object ``name`` fills its help with."""
    from experiments.cli import help_values

    if name.startswith("experiments.expert."):
        from experiments.expert.args import NETWORK, SELF

        return help_values(self=SELF, network=NETWORK)
    if name.startswith("experiments.rllib."):
        from experiments.rllib.args import rllib_bots

        return help_values(rllib_bots=", ".join(rllib_bots()))
    return help_values()


def _fill_help_placeholders(app, what, name, obj, options, lines):
    """A trainer's field docstrings with ``{players}`` and the like filled as ``--help`` does.

    The values come from the registry (:func:`experiments.cli.help_values`: the registered
    players, the bots), as the trainers' ``main`` fills them.
    """
    if not name.startswith("experiments.") or not any("{" in line for line in lines):
        return
    values = _help_values(name)
    for i, line in enumerate(lines):
        for key, value in values.items():
            line = line.replace("{" + key + "}", value)
        lines[i] = line


def _unlink_mailto(app, doctree):
    """Every ``mailto:`` reference made text again.

    docutils links any ``name@word`` as an e-mail address; here that is a profile
    (``racer@pro``, ``name@latency``), never mail.
    """
    from docutils import nodes

    for ref in list(doctree.findall(nodes.reference)):
        if ref.get("refuri", "").startswith("mailto:"):
            ref.replace_self(nodes.Text(ref.astext()))


def _refuse_mailto(app, exception):
    """A warning (an error under ``-W``) for each built page that still links to ``mailto:``."""
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.util import logging

    for page in sorted(Path(app.outdir).rglob("*.html")):
        found = re.findall(r'href="mailto:([^"]*)"', page.read_text(encoding="utf-8"))
        if found:
            shown = sorted({unquote(html.unescape(address)) for address in found})
            logging.getLogger(__name__).warning(
                "%s links to mailto: %s (a profile read as an e-mail address)",
                page.relative_to(app.outdir), ", ".join(shown))


def setup(app):
    """Register the link rewriting of the included root files; start the API pages afresh.

    autosummary writes the API reference's pages into ``docs/_api`` (not kept in git); a page of
    a module that no longer exists would stay there, so every build writes them all again.
    """
    shutil.rmtree(DOCS / "_api", ignore_errors=True)
    app.connect("include-read", _rewrite_links)
    # after napoleon (priority 500), which turns the docstrings into reST
    app.connect("autodoc-process-docstring", _keep_prose_prefix, priority=600)
    app.connect("autodoc-process-docstring", _fill_help_placeholders)
    app.connect("doctree-read", _unlink_mailto)
    app.connect("build-finished", _refuse_mailto)
    return {"parallel_read_safe": True}
