"""Fitting the value network to its data, and what it explains on held-out games.

:func:`split_by_game` keeps whole games out (positions of one game are alike: a split by
position would measure memory). :func:`fit_value` fits a ReLU perceptron (torch, one thread by
default: the result is a function of the data and the seed) by Adam on the squared error to
one target, and returns it as an ``agents.value.ValueNetwork`` (NumPy, for play). :func:`evaluate`
gives the held-out figures: the explained variance of each target, the correlations, and the
calibration (the mean target in bins of the prediction).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agents.value import ValueNetwork, card_difference
from experiments.value.data import TARGETS, ValueData

__all__ = ["split_by_game", "fit_value", "evaluate", "calibration_bins"]


def split_by_game(data: ValueData, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, held-out): (N,) bool masks, a share ``holdout`` of the games held out whole."""
    games = np.unique(data.game_id)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 7]))
    n_hold = int(round(holdout * games.size))
    held = np.isin(data.game_id, rng.permutation(games)[:n_hold])
    return ~held, held


def _scaling(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale): (D,) float32; a feature that does not vary gets scale 0."""
    mean = obs.mean(axis=0, dtype=np.float64)
    std = obs.std(axis=0, dtype=np.float64)
    scale = np.where(std > 1e-6, 1.0 / np.maximum(std, 1e-6), 0.0)
    return mean.astype(np.float32), scale.astype(np.float32)


def fit_value(data: ValueData, target: str, *, residual: bool = True, hidden=(128, 128),
              steps: int = 4000,
              batch_size: int = 512, learning_rate: float = 1e-3, weight_decay: float = 1e-5,
              seed: int = 0, threads: int = 1, meta: dict | None = None,
              progress: Callable[[int], None] | None = None) -> tuple[ValueNetwork, list[float]]:
    """Fit ``V(obs)`` to ``data.targets[target]`` by Adam on the mean squared error.

    Args:
        data: the training positions.
        target: one of ``experiments.value.data.TARGETS``, or ``"mix"``: the mean of ``round``
            and ``game``.
        residual: fit the target less the card difference the observation shows (the
            network then adds it back: ``agents.value.ValueNetwork``'s ``residual``).
        hidden: the hidden layers' widths.
        steps: Adam steps.
        batch_size: positions per step, drawn with replacement.
        learning_rate: Adam's step size, decayed linearly to a tenth over the steps.
        weight_decay: AdamW's decoupled weight decay.
        seed: the initialisation's and the minibatches' seed.
        threads: torch threads.
        meta: recorded in the network's file (the target and hidden widths are added).
        progress: called with 1 after each step.

    Returns:
        ``(network, losses)``: the fitted network and the training loss of every 100th step.
    """
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    y_all = target_values(data, target)
    ok = np.isfinite(y_all)
    obs, y = data.obs[ok], y_all[ok]
    if residual:
        y = y - card_difference(obs)
    y = y.astype(np.float32)
    mean, scale = _scaling(obs)
    x = torch.from_numpy((obs - mean) * scale)
    yt = torch.from_numpy(y)
    sizes = [obs.shape[1], *hidden, 1]
    layers: list = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.AdamW(net.parameters(), lr=learning_rate, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, total_iters=max(steps, 1))
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for step in range(steps):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
        loss = torch.mean((net(x[idx]).squeeze(-1) - yt[idx]) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0:
            losses.append(float(loss.detach()))
        if progress is not None:
            progress(1)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    weights = [m.weight.detach().numpy().T.copy() for m in linears]
    biases = [m.bias.detach().numpy().copy() for m in linears]
    info = dict(meta or {}, target=target, residual=residual)
    return ValueNetwork(weights, biases, mean, scale, info), losses


def target_values(data: ValueData, target: str) -> np.ndarray:
    """(N,) float64 the target ``target`` of every position (``"mix"``: round and game's mean).

    Raises:
        ValueError: an unknown target.
    """
    if target == "mix":
        return 0.5 * (data.targets["round"].astype(np.float64) + data.targets["game"])
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)} or mix, got {target!r}")
    return data.targets[target].astype(np.float64)


def _explained(pred: np.ndarray, y: np.ndarray) -> float:
    """1 - Var(y - pred) / Var(y), on the finite pairs (NaN with fewer than 2)."""
    ok = np.isfinite(y)
    if ok.sum() < 2 or np.var(y[ok]) == 0:
        return float("nan")
    return float(1.0 - np.var(y[ok] - pred[ok]) / np.var(y[ok]))


def calibration_bins(pred: np.ndarray, y: np.ndarray, bins: int = 10) -> list[dict]:
    """The mean target in ``bins`` bins of equal count of the prediction.

    Returns:
        one dict per bin: ``pred`` (mean prediction), ``target`` (mean target), ``se`` (its
        standard error) and ``n``.
    """
    ok = np.isfinite(y)
    pred, y = pred[ok], y[ok]
    order = np.argsort(pred, kind="stable")
    out = []
    for part in np.array_split(order, bins):
        if part.size == 0:
            continue
        se = float(y[part].std(ddof=1) / np.sqrt(part.size)) if part.size > 1 else float("nan")
        out.append(dict(pred=float(pred[part].mean()), target=float(y[part].mean()), se=se,
                        n=int(part.size)))
    return out


def evaluate(net: ValueNetwork, data: ValueData, bins: int = 10) -> dict:
    """The network's held-out figures on ``data``.

    Returns:
        ``explained``: {target: explained variance of it by the prediction}; ``explained_change``:
        {target: explained variance of the target less the card difference the observation
        shows, by the prediction less it: what the network adds to the present}; ``corr``:
        {target: Pearson correlation}; ``outcome_win``: the explained variance of the game's
        result (+1 / 0 / -1) by the prediction's best linear rescaling (how much of who wins
        the value knows); ``calibration``: {target: :func:`calibration_bins`};
        ``calibration_change``: the same of the change to come (target and prediction less the
        card difference the observation shows); ``positions``
        and ``games``. A target the data lacks (NaN) gets NaN figures.
    """
    pred = net(data.obs)
    now = card_difference(data.obs)
    out: dict = {"positions": len(data), "games": int(np.unique(data.game_id).size),
                 "explained": {}, "explained_change": {}, "corr": {}, "calibration": {},
                 "calibration_change": {}}
    for name in (*TARGETS, "mix"):
        y = target_values(data, name)
        ok = np.isfinite(y)
        out["explained"][name] = _explained(pred, y)
        out["explained_change"][name] = _explained(pred - now, y - now)
        out["corr"][name] = (float(np.corrcoef(pred[ok], y[ok])[0, 1])
                             if ok.sum() > 2 and np.std(y[ok]) > 0 else float("nan"))
        out["calibration"][name] = calibration_bins(pred, y, bins)
        out["calibration_change"][name] = calibration_bins(pred - now, y - now, bins)
    r = out["corr"]["outcome"]
    out["outcome_win"] = float(r * r) if np.isfinite(r) else float("nan")
    return out
