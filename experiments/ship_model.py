"""Write a trained model as the small file the package ships (``agents/models/network.zip``).

``agents.make("network")`` (or ``"ppo"``, its older name) plays that file when no path is given::

    python -m experiments.ship_model runs/xit128/model.zip          # -> agents/models/network.zip
    python -m experiments.ship_model runs/xit128/model.zip --out small.zip --no-half

The result is a portable MaskablePPO ``.zip`` (``agents.ppo_model.save_model``: nothing
version-bound in it, so it loads on every NumPy, Gymnasium and SB3 version the package admits)
that ``MaskablePPO.load``, ``agents.make("network", path=...)`` and sb3-contrib's
``evaluate_policy``
read, with what only training needs left out: the last rollout's observations, the episode
buffers and Adam's moment estimates (the optimizer keeps its settings; resuming from the file
starts Adam afresh). With ``--half`` (the default) the network weights are stored as float16,
loaded back into float32 (the file halves; play is unchanged up to float16 rounding, so evaluate
the written file, as ``docs/results/ppo_shipped.json`` does). The zip is compressed.

A model file of the older format (its input computed outside the model, an ``MlpPolicy`` with
``spit_options``) is converted on the way (``agents.ppo_model.from_legacy``: the same weights,
the same moves); ``--no-half`` then keeps its weights as they are.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import tyro

__all__ = ["Args", "ship", "main", "SHIPPED_PATH"]

#: The program name of the usage line and of every error ("{PROG}: error: ...").
PROG = "python -m experiments.ship_model"

#: Where the package keeps the shipped network (package data of ``agents``).
SHIPPED_PATH = Path(__file__).resolve().parents[1] / "agents" / "models" / "network.zip"


@dataclass
class Args:
    """Write a trained MaskablePPO model as a small file for the package."""

    model: tyro.conf.Positional[Path]
    """The model .zip saved by experiments/train_ppo.py (or one of the older format)."""
    out: Path = SHIPPED_PATH
    """Where to write the small file (the default is the package's shipped model)."""
    half: bool = True
    """Store the weights as float16 (half the size; loaded back as float32)."""


def ship(model_path, out, half: bool = True) -> int:
    """Write ``model_path`` (a MaskablePPO .zip) to ``out`` without its training-only state.

    Returns:
        The size of the written file in bytes.

    Raises:
        ValueError: ``model_path`` is not a MaskablePPO model of Spit (see
            ``agents.network.load_model``).
    """
    from agents.network import LegacyModelError, load_model
    from agents.ppo_model import from_legacy, save_model

    try:
        model = load_model(model_path)
    except LegacyModelError:
        from sb3_contrib import MaskablePPO

        model = from_legacy(MaskablePPO.load(model_path, device="cpu"))
    return save_model(model, out, half=half, training_state=False)


def main(argv=None) -> int:
    """Command-line entry point."""
    from experiments.cli import tyro_cli

    args = tyro_cli(Args, argv, prog=PROG,
                    description=__doc__.split("\n\n")[0])
    try:
        size = ship(args.model, args.out, half=args.half)
    except ValueError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
