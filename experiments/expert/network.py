"""The network of expert iteration: the package's model format, fitted to labelled positions.

The network is a MaskablePPO model of ``agents.ppo_model`` (:func:`new_network`): it reads the
observation, the legal mask and the racer's reading of each play (``obs_mask``,
``racer_features``), and chooses among every legal move (``mask_wait`` off, so a teacher's WAIT
on purpose is a move it can make: no label is dropped). The file it is saved to
(``agents.ppo_model.save_model``) plays as ``agents.make("network", path=...)`` and is a model
``experiments.train_ppo`` can go on training.

:func:`fit` fits both heads at once: the actor by cross-entropy to the soft targets over the legal
moves, the critic by squared error to a value target in [-1, 1]. :func:`scores` measures a
network on labelled positions: how often its argmax is the teacher's move (agreement), and, on
the positions where the teacher departs from its reference move, how often the network's argmax
is that departure (the labels that carry the gain over the reference).
"""

from __future__ import annotations

import numpy as np
import torch

from agents.ppo_model import new_model
from experiments.expert.positions import Positions
from experiments.ppo.hyperparameters import PPO_DEFAULTS
from spit_env.envs.vec import SpitVecEnv

__all__ = ["OPTIONS", "VALUE_TARGETS", "new_network", "value_targets", "fit", "scores"]

#: The network's input options (``agents.network.INPUT_OPTIONS``): every legal move playable.
OPTIONS = {"mask_wait": False, "obs_mask": True, "racer_features": True}
#: The value targets :func:`value_targets` knows.
VALUE_TARGETS = ("outcome", "plan", "mean")


def new_network(net_arch, seed: int, learning_rate: float, config=None):
    """A fresh network (MaskablePPO of ``agents.ppo_model.new_model``, :data:`OPTIONS`), on CPU.

    Its PPO hyperparameters (saved with it, what ``experiments.train_ppo --resume`` goes on
    with) are the project's defaults (``experiments.ppo.hyperparameters.PPO_DEFAULTS``).

    Args:
        net_arch: hidden layer sizes of the policy and value MLPs.
        seed: the weights' initialisation seed.
        learning_rate: the model's own learning rate (what a later PPO run starts with).
        config: the SpitConfig of the games it will play (the rules its mask is read under
            come from it); None: ``SpitConfig()``.
    """
    ppo = PPO_DEFAULTS
    # enough games that one rollout holds a minibatch (SB3 warns otherwise)
    env = SpitVecEnv(num_envs=max(1, -(-ppo.batch_size // ppo.n_steps)), config=config)
    model = new_model(env, net_arch=tuple(net_arch), options=dict(OPTIONS), seed=seed,
                      **{**ppo.kwargs(), "learning_rate": learning_rate}, device="cpu")
    env.close()
    return model


def value_targets(positions: Positions, kind: str) -> np.ndarray:
    """(N,) float32 value targets in [-1, 1]; NaN where there is none.

    Args:
        positions: the labelled positions.
        kind: "outcome" (the game's result), "plan" (the planner's value of the reference move,
            the outcome where there is none: a bot's label) or "mean" (their mean where both
            are known).

    Raises:
        ValueError: another kind.
    """
    if kind not in VALUE_TARGETS:
        raise ValueError(f"value target must be one of {VALUE_TARGETS}, got {kind!r}")
    out, plan = positions.outcome, positions.plan_value
    if kind == "outcome":
        return out.copy()
    if kind == "plan":
        return np.where(np.isnan(plan), out, plan).astype(np.float32)
    return np.where(np.isnan(plan), out, np.where(np.isnan(out), plan, (plan + out) / 2)
                    ).astype(np.float32)


def _inputs(policy, obs: np.ndarray, chunk: int = 8192) -> torch.Tensor:
    """(N, F) float32 network inputs of ``obs`` (the features extractor holds no weights)."""
    out = []
    with torch.no_grad():
        for a in range(0, len(obs), chunk):
            out.append(policy.extract_features(torch.as_tensor(obs[a:a + chunk]),
                                               policy.pi_features_extractor))
    return torch.cat(out) if out else torch.zeros((0, policy.features_dim))


def _heads(policy, x: torch.Tensor):
    """(logits (n, 23), values (n,)) of the network on inputs ``x``."""
    pi, vf = policy.mlp_extractor(x)
    return policy.action_net(pi), policy.value_net(vf).squeeze(-1)


def fit(model, positions: Positions, *, value_target: str, steps: int, batch_size: int,
        learning_rate: float, value_coef: float, seed: int, progress=None) -> dict:
    """Fit the network of ``model`` to ``positions``: both heads, ``steps`` Adam steps.

    Loss per minibatch: the cross-entropy of the soft targets under the network's policy over
    the legal moves, plus ``value_coef`` times the mean squared error of the value head on the
    positions with a value target. Minibatches are drawn with replacement from a torch
    Generator seeded by ``seed``, so a fit is a function of its arguments.

    Args:
        model: a network of :func:`new_network` (changed in place).
        positions: the training positions (N >= 1).
        value_target: :func:`value_targets`' kind.
        steps: Adam steps (>= 1).
        batch_size: positions per step.
        learning_rate: Adam's learning rate.
        value_coef: the weight of the value loss.
        seed: the minibatches' seed.
        progress: called with 1 after every step, or None.

    Returns:
        {"policy_loss", "value_loss"}: their means over the last 10% of the steps.
    """
    policy = model.policy
    x = _inputs(policy, positions.obs)
    legal = torch.as_tensor(positions.masks)
    target = torch.as_tensor(positions.targets)
    v = value_targets(positions, value_target)
    has_v = torch.as_tensor(~np.isnan(v))
    v_t = torch.as_tensor(np.nan_to_num(v))
    params = [p for p in policy.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(params, lr=learning_rate)
    gen = torch.Generator().manual_seed(int(seed))
    policy.set_training_mode(True)
    pl, vl = [], []
    tail = steps - max(steps // 10, 1)
    for k in range(steps):
        idx = torch.randint(0, len(x), (batch_size,), generator=gen)
        logits, values = _heads(policy, x[idx])
        logp = torch.log_softmax(logits.masked_fill(~legal[idx], -1e9), dim=1)
        loss_pi = -(target[idx] * logp.masked_fill(~legal[idx], 0.0)).sum(1).mean()
        w = has_v[idx].float()
        loss_v = (w * (values - v_t[idx]) ** 2).sum() / w.sum().clamp(min=1.0)
        loss = loss_pi + value_coef * loss_v
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if k >= tail:
            pl.append(float(loss_pi.detach()))
            vl.append(float(loss_v.detach()))
        if progress is not None:
            progress(1)
    policy.set_training_mode(False)
    return {"policy_loss": float(np.mean(pl)), "value_loss": float(np.mean(vl))}


def scores(model, positions: Positions, value_target: str) -> dict:
    """How the network of ``model`` reads labelled positions.

    Returns:
        ``agreement``: share of positions where its argmax over the legal moves is the
        teacher's move; ``departures``: positions where the teacher's move is not the reference
        move; ``departure_agreement``: share of those where its argmax is the teacher's move (NaN
        with none); ``cross_entropy``: of the targets under its policy;
        ``value_mse``: of its value head on the positions with a target (NaN with none).
    """
    policy = model.policy
    with torch.no_grad():
        logits, values = _heads(policy, _inputs(policy, positions.obs))
    legal = torch.as_tensor(positions.masks)
    logp = torch.log_softmax(logits.masked_fill(~legal, -1e9), dim=1)
    ce = -(torch.as_tensor(positions.targets) * logp.masked_fill(~legal, 0.0)).sum(1)
    pick = logp.argmax(1).numpy()
    hit = pick == positions.teacher
    dep = positions.teacher != positions.reference
    v = value_targets(positions, value_target)
    known = ~np.isnan(v)
    return {
        "agreement": float(hit.mean()) if hit.size else float("nan"),
        "departures": int(dep.sum()),
        "departure_agreement": float(hit[dep].mean()) if dep.any() else float("nan"),
        "cross_entropy": float(ce.mean()) if ce.numel() else float("nan"),
        "value_mse": (float(((values.numpy()[known] - v[known]) ** 2).mean())
                      if known.any() else float("nan")),
    }
