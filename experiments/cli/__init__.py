"""The scripts' command lines: help texts made from the truth, errors that say what to type.

* :class:`ArgumentParser` (argparse with :class:`HelpFormatter`): every paragraph of a
  description or epilog is re-flowed on its own, so sentences stay whole and lists stay lists;
  ``%`` is a plain character in every text (only ``%(default)s``-style fields are filled, so
  "95%" reads as written); an unknown flag is reported with the nearest known one (difflib).
* :func:`tyro_cli`: tyro for a dataclass of arguments, each field's help its docstring as one
  paragraph (tyro keeps the docstring's line breaks, which then break lines mid-sentence), with
  ``{placeholders}`` filled from the truth (``{players}``: the registered bots), and a preset
  flag (``--smoke``) whose values apply to every field not given on the command line
  (:func:`given_fields`).
* :func:`player_help`: the player names the registry knows, for a help text.
* :func:`install_hint`: the README's install command for an extra.
* :func:`one_line_warnings`: a warning meant for the user (a FutureWarning, e.g. an old latency
  preset's name in a profile) shown on stderr as one line, "warning: <message>"; both parsers
  turn it on when they read the real command line (``sys.argv``).
* :mod:`experiments.cli.checks`: the trainers' :class:`ArgumentError` and the flag checks they
  share (positive numbers, latency, game length, players, output paths, model files).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import re
import sys
import textwrap
import typing
import warnings

from experiments.cli.checks import ArgumentError
from spit_env.checks import did_you_mean

__all__ = ["ArgumentParser", "ArgumentError", "HelpFormatter", "tyro_cli", "field_help",
           "given_fields", "help_values", "player_names", "player_help", "install_hint",
           "one_line_warnings", "code_commit"]

_FIELD = re.compile(r"%\((\w+)\)[sdfr]")


def one_line_warnings() -> None:
    """Show FutureWarnings as one line on stderr, ``warning: <message>``, from now on.

    A FutureWarning is meant for the user (Python shows it by default, unlike a
    DeprecationWarning); a script's user needs its message, not the library's file, line and
    source line, and each message once (a profile may be parsed more than once). Other
    categories keep Python's format. Calling it again changes nothing.
    """
    shown = warnings.formatwarning
    if getattr(shown, "one_line", False):
        return
    said = set()

    def formatwarning(message, category, filename, lineno, line=None):
        if not issubclass(category, FutureWarning):
            return shown(message, category, filename, lineno, line)
        text = f"warning: {message}\n"
        if text in said:
            return ""
        said.add(text)
        return text

    formatwarning.one_line = True
    warnings.formatwarning = formatwarning


def code_commit(short: bool = False) -> str:
    """The commit a result is made on, as the files that record it write it.

    The checkout's HEAD (its short form with ``short``), with ``+changes`` when the code
    (``agents``, ``spit_env``, ``experiments``; not the docs) differs from it; ``"unknown"``
    outside a git checkout.
    """
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", *(["--short"] if short else []), "HEAD"],
                              cwd=here, capture_output=True, text=True, timeout=30)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                "agents", "spit_env", "experiments"],
                               cwd=here.parent, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` as the README does: with the constraints file."""
    return f'pip install -c constraints.txt -e ".[{extra}]"'


def player_names() -> list[str]:
    """The registered policy names a player can be given by.

    ``rllib`` is left out: an RLlib policy is given by its checkpoint's path instead.
    """
    from spit_env.policy import registered_policies

    return [n for n in registered_policies() if n != "rllib"]


def player_help() -> str:
    """The registry's player names for a help text: "chain, greedy, ...; network: the ..."."""
    names = player_names()
    note = ""
    if "network" in names:
        note += ("; network: the policy network shipped with the package, trained by expert "
                 "iteration")
        if "ppo" in names:
            note += " (ppo: its older name)"
    if "expert" in names:
        note += "; expert: that network with search at play time"
    return ", ".join(names) + note


def help_values(**extra) -> dict[str, str]:
    """The placeholders of :func:`tyro_cli`'s help texts, from the registry.

    ``{players}``: :func:`player_help`; ``{bots}``: the heuristic bots, weakest first;
    ``{strongest}``: the strongest of them; and ``extra``.
    """
    import agents

    bots = list(agents.BOTS)
    return {"players": player_help(), "bots": ", ".join(bots), "strongest": bots[-1], **extra}


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter with whole paragraphs and a literal ``%``.

    Descriptions and epilogs are re-flowed paragraph by paragraph (blank lines kept; a paragraph
    whose lines are indented is kept as written, an example block); argument help is re-flowed
    as usual. Only ``%(name)s`` fields are filled; any other ``%`` (and ``%%``) prints as ``%``.
    """

    def _fill_text(self, text, width, indent):
        out = []
        for block in re.split(r"\n\s*\n", text.strip("\n")):
            lines = block.splitlines()
            if len(lines) > 1 and all(ln.startswith(" ") for ln in lines[1:]) \
                    and lines[0].startswith(" "):
                out.append("\n".join(indent + ln for ln in lines))
            else:
                out.append(textwrap.fill(" ".join(block.split()), width, initial_indent=indent,
                                         subsequent_indent=indent, break_on_hyphens=False))
        return "\n\n".join(out)

    def _split_lines(self, text, width):
        # names such as planner-fast stay whole
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill(self, text: str, params: dict) -> str:
        text = _FIELD.sub(lambda m: str(params.get(m.group(1), m.group(0))), text)
        return _plain(text.replace("%%", "%"))

    def _format_text(self, text):
        # argparse's own, with the fields filled by _fill instead of the % operator
        text = self._fill(text, {"prog": self._prog})
        width = max(self._width - self._current_indent, 11)
        return self._fill_text(text, width, " " * self._current_indent) + "\n\n"

    def _expand_help(self, action):
        params = dict(vars(action), prog=self._prog)
        for name in list(params):
            if params[name] is argparse.SUPPRESS:
                del params[name]
        for name in list(params):
            if hasattr(params[name], "__name__"):
                params[name] = params[name].__name__
        if params.get("choices") is not None:
            params["choices"] = ", ".join(str(c) for c in params["choices"])
        return self._fill(self._get_help_string(action), params)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with :class:`HelpFormatter`, and the nearest flag named for an unknown one."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):
        """As argparse; an unrecognized argument names the nearest known flag (difflib).

        Reading the real command line (``args`` None), it turns on :func:`one_line_warnings`.
        """
        if args is None:
            one_line_warnings()
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            flags = [s for a in self._actions for s in a.option_strings]
            hints = "".join(did_you_mean(x.split("=")[0], flags) for x in extras
                            if x.startswith("-"))
            self.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
        return namespace


def _plain(text: str) -> str:
    # the docstrings' reST literals (``agents/models/network.zip``) read as plain text in a terminal
    return text.replace("``", "")


def field_help(cls) -> dict[str, str]:
    """Each field docstring of the dataclass ``cls`` as whole paragraphs (lines joined).

    Returns:
        {field name: its docstring, the lines of each paragraph joined by single spaces}.
    """
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    out = {}
    for prev, node in zip(body, body[1:], strict=False):
        if (isinstance(prev, ast.AnnAssign) and isinstance(prev.target, ast.Name)
                and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(node.value.value))
            out[prev.target.id] = "\n\n".join(" ".join(p.split()) for p in paragraphs)
    return out


def given_fields(cls, argv: list[str]) -> set[str]:
    """The fields of the dataclass ``cls`` that the command line ``argv`` sets explicitly.

    A flag counts in any of tyro's spellings: ``--total-timesteps 5``, ``--total-timesteps=5``,
    ``--total_timesteps 5`` and, for a bool, ``--no-tensorboard``; tokens after a lone ``--``
    and values are not flags.

    Returns:
        the field names (``"total_timesteps"``, ``"tensorboard"``).
    """
    names = {f.name for f in dataclasses.fields(cls)}
    given = set()
    for token in argv:
        if token == "--":
            break
        if not token.startswith("--"):
            continue
        name = token[2:].split("=", 1)[0].replace("-", "_")
        if name in names:
            given.add(name)
        elif name.startswith("no_") and name[3:] in names:
            given.add(name[3:])
    return given


def tyro_cli(cls, args=None, *, prog: str, description: str, fill: dict | None = None,
             presets: dict[str, dict] | None = None):
    """Parse ``args`` into a ``cls`` instance with tyro, the help made of whole paragraphs.

    Each field's help is its docstring (:func:`field_help`) with ``{key}`` replaced by
    ``fill[key]``, given to tyro as the field's help (``tyro.conf.arg``), so tyro wraps it to
    the terminal instead of keeping the source's line breaks.

    Args:
        cls: the dataclass of arguments (every field with a default).
        args: the command line (default: ``sys.argv[1:]``).
        prog: the program name of the usage line.
        description: the text above the options.
        fill: placeholder values for the help texts ({"players": player_help()}, ...).
        presets: {bool field: {field: value}}: when that flag is on (``--smoke``), each listed
            field the command line does not set (:func:`given_fields`) takes the preset's
            value; a flag given explicitly keeps its value, whatever its position.

    Returns:
        a ``cls`` with the parsed values.

    Reading the real command line (``args`` None), it turns on :func:`one_line_warnings`.
    """
    import tyro

    if args is None:
        one_line_warnings()

    hints = typing.get_type_hints(cls, include_extras=True)
    helps = field_help(cls)
    fields = []
    for f in dataclasses.fields(cls):
        text = helps.get(f.name, "")
        for key, value in (fill or {}).items():
            text = text.replace("{" + key + "}", str(value))
        default = (dataclasses.field(default_factory=f.default_factory)
                   if f.default is dataclasses.MISSING else dataclasses.field(default=f.default))
        fields.append((f.name, typing.Annotated[hints[f.name], tyro.conf.arg(help=_plain(text))],
                       default))
    shadow = dataclasses.make_dataclass(cls.__name__, fields)
    shadow.__doc__ = cls.__doc__
    argv = list(sys.argv[1:] if args is None else args)
    parsed = tyro.cli(shadow, args=argv, prog=prog, description=_plain(description))
    values = {f.name: getattr(parsed, f.name) for f in dataclasses.fields(cls)}
    given = given_fields(cls, argv)
    for switch, preset in (presets or {}).items():
        if values[switch]:
            values.update({k: v for k, v in preset.items() if k not in given})
    return cls(**values)
