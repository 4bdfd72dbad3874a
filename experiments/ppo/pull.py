"""PPO with a pull toward a fixed policy (used by ``experiments.train_ppo``, ``--pull-coef``).

:class:`PulledMaskablePPO` is sb3-contrib's ``MaskablePPO`` whose loss has one more term,
``pull_coef * KL(anchor || policy)`` over the moves the policy chooses among, averaged over the
minibatch: the cross-entropy of the policy on the anchor's move probabilities (a soft behaviour
cloning term) minus the anchor's entropy, which has no gradient. The anchor is a frozen policy
(the warm-started one, or another model of the same input) that holds PPO near a good start
while the advantages are still poor. With ``pull_coef == 0`` the update is MaskablePPO's own.

:func:`with_pull` turns a model (new, loaded or warm-started) into one, sharing its policy,
buffers and settings; the saved file is an ordinary MaskablePPO model of the package's format
(the anchor is not saved).
"""

from __future__ import annotations

import copy

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3.common.utils import explained_variance
from torch.nn import functional as F

__all__ = ["PulledMaskablePPO", "with_pull", "pull_divergence", "frozen_actor"]


def frozen_actor(policy):
    """A frozen copy of ``policy`` (a MaskableActorCriticPolicy), for the pull's anchor."""
    anchor = copy.deepcopy(policy)
    anchor.set_training_mode(False)
    for p in anchor.parameters():
        p.requires_grad_(False)
    return anchor


def pull_divergence(anchor, policy, observations, action_masks) -> th.Tensor:
    """Mean ``KL(anchor || policy)`` over a batch, on the moves ``policy`` chooses among.

    Args:
        anchor: the frozen policy pulled toward (same input as ``policy``).
        policy: the policy being trained (gradients flow through it).
        observations: (B, D) float32 tensor.
        action_masks: (B, 23) bool or 0/1, the env's legal moves (each policy narrows them by
            its own rule, ``agents.ppo_model.SpitPolicy.playing_masks``).

    Returns:
        a scalar tensor >= 0 (0 when the two policies agree on every row).
    """
    current = policy.get_distribution(observations, action_masks).distribution
    with th.no_grad():
        target = anchor.get_distribution(observations, action_masks).distribution
    legal = current.logits > -1e7  # sb3-contrib masks with -1e8
    log_p, log_q = target.logits, current.logits
    kl = th.where(legal & (target.probs > 0), target.probs * (log_p - log_q), 0.0).sum(dim=1)
    return kl.mean()


class PulledMaskablePPO(MaskablePPO):
    """MaskablePPO with ``pull_coef * KL(anchor || policy)`` added to its loss (module docstring).

    Set ``anchor`` (a frozen policy, :func:`frozen_actor`) and ``pull_coef`` (>= 0) before
    ``learn``; :func:`with_pull` does it. Every update is also appended to ``update_log``:
    {"timesteps", "explained_variance" (of the values the rollout was collected with, as SB3
    logs it), "approx_kl", "value_loss", "pull_kl"}. The anchor, coefficient and log are not
    saved with the model.
    """

    anchor = None
    pull_coef: float = 0.0

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "anchor", "pull_coef", "update_log"]

    def train(self) -> None:
        """MaskablePPO's update (sb3-contrib 2.x ``MaskablePPO.train``) with the pull term."""
        if self.pull_coef < 0 or (self.pull_coef > 0 and self.anchor is None):
            raise ValueError(f"pull_coef must be >= 0 with an anchor set, got {self.pull_coef} "
                             f"and anchor {self.anchor!r}")
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)
        if self.clip_range_vf is not None:
            clip_range_vf = self.clip_range_vf(self._current_progress_remaining)
        entropy_losses, pg_losses, value_losses, clip_fractions, pulls = [], [], [], [], []
        continue_training = True
        for _epoch in range(self.n_epochs):
            approx_kl_divs = []
            for rollout_data in self.rollout_buffer.get(self.batch_size):
                actions = rollout_data.actions
                if isinstance(self.action_space, spaces.Discrete):
                    actions = rollout_data.actions.long().flatten()
                values, log_prob, entropy = self.policy.evaluate_actions(
                    rollout_data.observations, actions, action_masks=rollout_data.action_masks)
                values = values.flatten()
                advantages = rollout_data.advantages
                if self.normalize_advantage:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                ratio = th.exp(log_prob - rollout_data.old_log_prob)
                policy_loss_1 = advantages * ratio
                policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
                policy_loss = -th.min(policy_loss_1, policy_loss_2).mean()
                pg_losses.append(policy_loss.item())
                clip_fractions.append(th.mean((th.abs(ratio - 1) > clip_range).float()).item())
                if self.clip_range_vf is None:
                    values_pred = values
                else:
                    values_pred = rollout_data.old_values + th.clamp(
                        values - rollout_data.old_values, -clip_range_vf, clip_range_vf)
                value_loss = F.mse_loss(rollout_data.returns, values_pred)
                value_losses.append(value_loss.item())
                entropy_loss = -th.mean(-log_prob) if entropy is None else -th.mean(entropy)
                entropy_losses.append(entropy_loss.item())
                loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
                if self.pull_coef > 0:  # the one addition to MaskablePPO's loss
                    pull = pull_divergence(self.anchor, self.policy, rollout_data.observations,
                                           rollout_data.action_masks)
                    pulls.append(pull.item())
                    loss = loss + self.pull_coef * pull
                with th.no_grad():
                    log_ratio = log_prob - rollout_data.old_log_prob
                    approx_kl_div = th.mean((th.exp(log_ratio) - 1) - log_ratio).cpu().numpy()
                    approx_kl_divs.append(approx_kl_div)
                if self.target_kl is not None and approx_kl_div > 1.5 * self.target_kl:
                    continue_training = False
                    break
                self.policy.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
            self._n_updates += 1
            if not continue_training:
                break
        explained_var = explained_variance(self.rollout_buffer.values.flatten(),
                                           self.rollout_buffer.returns.flatten())
        self.logger.record("train/entropy_loss", np.mean(entropy_losses))
        self.logger.record("train/policy_gradient_loss", np.mean(pg_losses))
        self.logger.record("train/value_loss", np.mean(value_losses))
        self.logger.record("train/approx_kl", np.mean(approx_kl_divs))
        self.logger.record("train/clip_fraction", np.mean(clip_fractions))
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/explained_variance", explained_var)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)
        if self.clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)
        if pulls:
            self.logger.record("train/pull_kl", np.mean(pulls))
        if not hasattr(self, "update_log"):
            self.update_log = []
        self.update_log.append({
            "timesteps": int(self.num_timesteps), "explained_variance": float(explained_var),
            "approx_kl": float(np.mean(approx_kl_divs)), "value_loss": float(np.mean(value_losses)),
            "pull_kl": float(np.mean(pulls)) if pulls else None})


def with_pull(model: MaskablePPO, anchor=None, pull_coef: float = 0.0) -> PulledMaskablePPO:
    """``model`` as a :class:`PulledMaskablePPO`: the same policy, buffers, settings and counts.

    Args:
        model: a MaskablePPO model (it is not to be trained on its own afterwards: the two
            share their policy and optimizer).
        anchor: the frozen policy to pull toward (:func:`frozen_actor`); None with
            ``pull_coef == 0``.
        pull_coef: the coefficient of the KL term, >= 0 (0: MaskablePPO's update).

    Raises:
        ValueError: a negative or non-finite ``pull_coef``, or a positive one without an anchor.
    """
    if not np.isfinite(pull_coef) or pull_coef < 0:
        raise ValueError(f"pull_coef must be a finite number >= 0, got {pull_coef}")
    if pull_coef > 0 and anchor is None:
        raise ValueError("pull_coef > 0 needs an anchor policy to pull toward")
    pulled = PulledMaskablePPO.__new__(PulledMaskablePPO)
    pulled.__dict__.update(model.__dict__)  # a view of the same model under the subclass
    pulled.anchor, pulled.pull_coef, pulled.update_log = anchor, float(pull_coef), []
    return pulled
