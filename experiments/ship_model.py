"""Write a trained model as the small file the package ships (``agents/models/ppo.zip``).

``agents.make("ppo")`` plays that file when no path is given::

    python -m experiments.ship_model runs/ppo_long/model.zip            # -> agents/models/ppo.zip
    python -m experiments.ship_model runs/ppo_long/model.zip --out small.zip --no-half

The result is still a MaskablePPO ``.zip`` that ``MaskablePPO.load`` and ``agents.make("ppo",
path=...)`` read, with what only training needs left out: the last rollout's observations
(``_last_obs`` and the like, about 0.5 MB at 512 games), the episode buffers and Adam's moment
estimates (the optimizer keeps its settings; resuming from the file starts Adam afresh). With
``--half`` (the default) the network weights are stored as float16, loaded back into float32
(the file halves; play is unchanged up to float16 rounding, so evaluate the written file, as
``docs/results/ppo_shipped.json`` does). The zip is compressed (SB3 stores its entries plain).
"""

from __future__ import annotations

import io
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import tyro

__all__ = ["Args", "ship", "main", "SHIPPED_PATH", "TRAINING_ONLY"]

#: Where the package keeps the shipped model (package data of ``agents``).
SHIPPED_PATH = Path(__file__).resolve().parents[1] / "agents" / "models" / "ppo.zip"

#: Saved attributes of an SB3 model that only a running training needs.
TRAINING_ONLY = ["_last_obs", "_last_original_obs", "_last_episode_starts", "ep_info_buffer",
                 "ep_success_buffer"]


@dataclass
class Args:
    """Write a trained MaskablePPO model as a small file for the package."""

    model: tyro.conf.Positional[Path]
    """The model .zip saved by experiments/train_ppo.py."""
    out: Path = SHIPPED_PATH
    """Where to write the small file (the default is the package's shipped model)."""
    half: bool = True
    """Store the weights as float16 (half the size; loaded back as float32)."""


def ship(model_path, out, half: bool = True) -> int:
    """Write ``model_path`` (a MaskablePPO .zip) to ``out`` without its training-only state.

    Returns:
        The size of the written file in bytes.

    Raises:
        ValueError: ``model_path`` is not a MaskablePPO model (see ``agents.ppo.load_model``).
    """
    import torch

    from agents.ppo import load_model

    model = load_model(model_path)
    model.policy.optimizer.state.clear()  # Adam's moments: 2x the weights, training only
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "model.zip"
        model.save(plain, exclude=TRAINING_ONLY)
        with zipfile.ZipFile(plain) as src:
            entries = {name: src.read(name) for name in src.namelist()}
    if half:
        state = {k: v.half() if v.is_floating_point() else v
                 for k, v in model.policy.state_dict().items()}
        buffer = io.BytesIO()
        torch.save(state, buffer)
        entries["policy.pth"] = buffer.getvalue()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for name, data in entries.items():
            dst.writestr(name, data)
    return out.stat().st_size


def main(argv=None) -> int:
    """Command-line entry point."""
    from experiments.cli import tyro_cli

    args = tyro_cli(Args, argv, prog="python -m experiments.ship_model",
                    description=__doc__.split("\n\n")[0])
    try:
        size = ship(args.model, args.out, half=args.half)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
