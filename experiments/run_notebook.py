"""Run notebooks top to bottom, showing which cell runs and what it prints as it prints it.

    python -m experiments.run_notebook notebooks/ppo_training.ipynb --inplace
    python -m experiments.run_notebook notebooks/heuristics_benchmark.ipynb --out /tmp/nb.ipynb

``jupyter execute`` says nothing until a notebook is done; a notebook that trains or plays a
tournament runs for minutes. This runs it with nbclient (the kernel of this interpreter) and
shows its progress (``spit_env.progress``: cells done of all the code cells, each cell's first
line and time), and passes each cell's printed output (its own progress lines, say) through as
it comes. An error stops the run with the cell's number and the error; the notebook is then not
written. ``tests/test_notebooks.py`` runs the notebooks through :func:`run_notebook`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from experiments.cli import ArgumentParser, install_hint

__all__ = ["run_notebook", "main"]

#: The program name of the usage line and of every error ("{PROG}: error: ...").
PROG = "python -m experiments.run_notebook"


def _first_line(source: str) -> str:
    lines = [ln for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    text = lines[0].strip() if lines else "(comments only)"
    return text if len(text) <= 60 else text[:57] + "..."


def run_notebook(path, *, timeout: int = 1800, show_progress: bool = True, echo: bool = True,
                 stream=None, cwd=None):
    """Execute the notebook at ``path`` cell by cell and return it, outputs filled in.

    Args:
        path: the .ipynb file.
        timeout: seconds a cell may run before it is stopped (an error).
        show_progress: the cells' progress (cells done of the code cells).
        echo: pass each cell's printed output (stdout, stderr) through as it comes.
        stream: where progress and echoed output go (default sys.stderr).
        cwd: the kernel's working folder (default: the notebook's folder).

    Returns:
        the executed ``nbformat.NotebookNode``.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell failed (its number is in the message).
        ImportError: nbclient / nbformat / ipykernel are missing (the [notebooks] extra).
    """
    import nbclient
    import nbformat

    from spit_env.progress import Progress

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    out = stream if stream is not None else sys.stderr
    progress = Progress(len(code), f"notebook {path.name}", unit="cells", enabled=show_progress,
                        stream=stream, bar=False, lines=len(code) or 1, min_gap_s=0)
    started: dict[int, float] = {}

    class Client(nbclient.NotebookClient):
        def output(self, outs, msg, display_id, cell_index):  # every message of a cell's output
            content = msg.get("content", {})
            if echo and msg.get("msg_type") == "stream":
                out.write(content.get("text", ""))
                out.flush()
            return super().output(outs, msg, display_id, cell_index)

    def on_start(cell, cell_index):
        started[cell_index] = time.perf_counter()
        number = code.index(cell_index) + 1 if cell_index in code else 0
        progress.write(f"[cell {number}/{len(code)}] {_first_line(cell.source)}")

    def on_complete(cell, cell_index):
        progress.update(1)

    client = Client(nb, timeout=timeout, kernel_name="python3",
                    resources={"metadata": {"path": str(cwd or path.parent)}},
                    on_cell_start=on_start, on_cell_complete=on_complete)
    try:
        client.execute()
    finally:
        progress.close()
    return nb


def main(argv=None) -> int:
    """Command-line entry point: run each notebook given, write it back or elsewhere."""
    p = ArgumentParser(prog=PROG,
                       description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="+", type=Path, help="the .ipynb files to run, in order")
    p.add_argument("--inplace", action="store_true",
                   help="write each executed notebook over its file")
    p.add_argument("--out", type=Path,
                   help="write the executed notebook here (one notebook only)")
    p.add_argument("--timeout", type=int, default=1800,
                   help="seconds a cell may run (default: %(default)s)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress and no echo of the cells' output")
    args = p.parse_args(argv)
    for nb_path in args.notebooks:
        if not nb_path.is_file():
            p.error(f"notebooks: no notebook at {str(nb_path)!r}")
    if args.out is not None and len(args.notebooks) != 1:
        p.error("--out takes one notebook; give --inplace for several")
    if args.out is not None and args.inplace:
        p.error("give --inplace or --out, not both")
    if args.timeout < 1:
        p.error("--timeout must be >= 1")
    try:
        import nbclient  # noqa: F401
        import nbformat
    except ImportError as err:
        sys.exit(f"{PROG}: error: running notebooks needs the notebooks extra ({err}); install it "
                 f"with: {install_hint('notebooks')}")
    from nbclient.exceptions import CellExecutionError

    for nb_path in args.notebooks:
        try:
            nb = run_notebook(nb_path, timeout=args.timeout, show_progress=not args.quiet,
                              echo=not args.quiet)
        except CellExecutionError as err:
            print(f"{PROG}: error: {nb_path}: {err}", file=sys.stderr)
            return 1
        target = nb_path if args.inplace else args.out
        if target is not None:
            nbformat.write(nb, target)
            print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
