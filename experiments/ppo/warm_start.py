"""Behaviour-cloning warm start of a PPO actor (used by ``experiments.train_ppo``).

Collect a teacher bot's moves in the training environment, then fit the actor to them.
"""

from __future__ import annotations

import numpy as np
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.vec_env import VecEnv

from agents.ppo import playing_masks
from spit_env.policy import call_policy, reads_public_table

__all__ = ["collect_teacher_data", "behaviour_clone"]


def collect_teacher_data(env: VecEnv, teacher, samples: int, options: dict, progress=None):
    """The teacher's moves in the learner's seat of ``env``, as training data.

    ``env`` is a training env (``experiments.ppo.envs.make_training_env``): the recorded
    observations are what the model reads, the masks the moves it chooses among (the env's
    legal moves after its ``mask_wait``, ``agents.ppo.playing_masks``). The teacher's moves
    that those masks forbid (a bot may WAIT on purpose where ``mask_wait`` does not let the
    model) are played but not recorded, since they cannot be imitated. The teacher draws from
    each game's own stream for the learner's seat (``SpitVecEnv.learner_rng``), so the data of
    a game depends on its seed and game id alone.

    Args:
        env: the VecEnv to play in (a SpitVecEnv, or wrappers around one); it is reset first
            and left running.
        teacher: a Policy (one that plans on the public table, like ``planner``, gets the
            learners' tables from ``env.public_table()``).
        samples: at least this many (observation, mask, move) triples are collected.
        options: the model's options (``agents.ppo.input_options``).
        progress: called with the count of triples each step adds (a
            ``spit_env.progress.Progress``), or None.

    Returns:
        (observations (N, D) float32, masks (N, 23) bool, actions (N,) int64), N >= ``samples``.
    """
    obs = env.reset()
    all_obs, all_masks, all_actions = [], [], []
    n = 0
    while n < samples:
        legal = get_action_masks(env)  # as MaskablePPO reads them, through every wrapper
        rng = env.learner_rng()
        if reads_public_table(teacher):  # a planning teacher (planner) also reads the table
            actions = call_policy(teacher, obs, legal, rng, table=env.public_table)
        else:
            actions = np.asarray(teacher(obs, legal, rng), dtype=np.int64)
        masks = playing_masks(legal, options)
        keep = masks[np.arange(len(actions)), actions]
        all_obs.append(obs[keep])
        all_masks.append(masks[keep])
        all_actions.append(actions[keep])
        n += int(keep.sum())
        if progress is not None:
            progress(int(keep.sum()))
        obs, _, _, _ = env.step(actions)
    return np.concatenate(all_obs), np.concatenate(all_masks), np.concatenate(all_actions)


def behaviour_clone(model, observations, masks, actions, *, steps: int, batch_size: int,
                    learning_rate: float, seed: int, progress=None) -> dict:
    """Fit the actor of ``model`` to the teacher's moves; the value network is untouched.

    Masked cross-entropy (illegal logits -inf) over the policy MLP and action head, ``steps``
    Adam steps on random minibatches of ``batch_size``; ``progress`` (if given) is called with 1
    after each. The features extractor holds no weights (``agents.ppo_model.SpitFeatures``), so
    the network's inputs are computed once.

    Returns:
        {"loss", "accuracy"}: their means over the last 10% of the steps.
    """
    import torch

    policy = model.policy
    params = (list(policy.mlp_extractor.policy_net.parameters())
              + list(policy.action_net.parameters()))
    optimiser = torch.optim.Adam(params, lr=learning_rate)
    features = policy.pi_features_extractor
    if any(p.requires_grad for p in features.parameters()):
        raise ValueError("behaviour_clone fits the policy MLP on fixed inputs: the model's "
                         "features extractor must hold no trainable weights")
    with torch.no_grad():
        inputs = policy.extract_features(torch.as_tensor(observations), features)
    mask_t = torch.as_tensor(masks)
    act_t = torch.as_tensor(actions)
    gen = torch.Generator().manual_seed(int(seed))
    policy.set_training_mode(True)
    losses, hits = [], []
    for k in range(steps):
        idx = torch.randint(0, len(act_t), (batch_size,), generator=gen)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(inputs[idx]))
        logits = logits.masked_fill(~mask_t[idx], -1e8)
        loss = torch.nn.functional.cross_entropy(logits, act_t[idx])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if k >= steps - max(steps // 10, 1):
            losses.append(float(loss.detach()))
            hits.append(float((logits.argmax(1) == act_t[idx]).float().mean()))
        if progress is not None:
            progress(1)
    policy.set_training_mode(False)
    return {"loss": float(np.mean(losses)), "accuracy": float(np.mean(hits))}
