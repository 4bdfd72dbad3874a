"""The warm start of a PPO model (used by ``experiments.train_ppo``).

Collect a teacher's games in the training environment (:func:`collect_teacher_data`), fit the
actor to the teacher's moves (:func:`behaviour_clone`) and the critic to the discounted returns
of those games (:func:`fit_critic`), so that PPO's first update starts from the teacher's play
and from advantages that are not noise.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.vec_env import VecEnv

from agents.network import playing_masks
from spit_env.policy import call_policy, reads_public_table

__all__ = ["TeacherData", "collect_teacher_data", "behaviour_clone", "fit_critic",
           "discounted_returns", "lambda_returns", "held_out_idx", "held_out_rows",
           "HELD_OUT_EVERY"]

#: The critic's fit holds out the games of every this-many-th VecEnv row (:func:`fit_critic`).
HELD_OUT_EVERY = 10


def held_out_idx(num_envs: int, every: int = HELD_OUT_EVERY) -> tuple[np.ndarray, np.ndarray]:
    """(fitted, held-out) int64 row indices of ``num_envs`` rows, as :func:`fit_critic` splits.

    Every ``every``-th row is held out, row 0 first.
    """
    idx = np.arange(num_envs)
    return idx[idx % every != 0], idx[idx % every == 0]


def held_out_rows(num_envs: int, every: int = HELD_OUT_EVERY) -> tuple[np.ndarray, np.ndarray]:
    """Deprecated name of :func:`held_out_idx` (for one release): the same split, with a warning.

    Warns:
        DeprecationWarning: always.
    """
    warnings.warn("held_out_rows is deprecated: use held_out_idx (the split is integer row "
                  "indices)", DeprecationWarning, stacklevel=2)
    return held_out_idx(num_envs, every)


@dataclass
class TeacherData:
    """A teacher's decisions in the learner's seat, as warm-start data.

    Attributes:
        observations: (N, D) float32, what the model reads.
        masks: (N, 23) bool, the moves the model chooses among (after its ``mask_wait``).
        actions: (N,) int64, the teacher's moves (every one allowed by its row's mask).
        returns: (N,) float32, the discounted return from each decision to the end of its game
            (the learner's rewards, ``gamma`` per decision); NaN for the decisions of games that
            had not ended when the collection stopped.
        idx: (N,) int64, the VecEnv row each decision was made in (games of one row are
            independent of the other rows', so a split by row holds whole games out).
        steps: (N,) int64, the VecEnv step each decision was made at.
        rewards: (T, B) float32, the learner's reward of every VecEnv step of the collection.
        dones: (T, B) bool, the step ended its row's game.
        last_observations: (B, D) float32, the observations after the last step.
        played: decisions the teacher made, the forbidden ones included.
        forbidden: decisions whose move the model's masks forbid (0 unless
            ``on_forbidden="skip"``); they are played but not in the arrays.
    """

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    idx: np.ndarray
    steps: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    last_observations: np.ndarray
    played: int
    forbidden: int

    def summary(self) -> dict:
        """{"samples", "played", "forbidden", "with_return"}: what the collection kept."""
        return {"samples": int(len(self.actions)), "played": int(self.played),
                "forbidden": int(self.forbidden),
                "with_return": int(np.isfinite(self.returns).sum())}


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, gamma: float) -> np.ndarray:
    """The discounted return of every step of a VecEnv's run: ``G_t = r_t + gamma G_{t+1}``.

    Args:
        rewards: (T, B) float, the reward of each step of each row.
        dones: (T, B) bool, the step ended its row's episode (the next step is a new one).
        gamma: the discount per step, in (0, 1].

    Returns:
        (T, B) float64: the return to the end of the episode; NaN where the episode had not
        ended by step T - 1 (its return is unknown).
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    dones = np.asarray(dones, dtype=bool)
    if rewards.shape != dones.shape or rewards.ndim != 2:
        raise ValueError(f"rewards and dones must both be (T, B), got {rewards.shape} and "
                         f"{dones.shape}")
    out = np.empty_like(rewards)
    following = np.full(rewards.shape[1], np.nan)  # unknown beyond the last step
    for t in range(len(rewards) - 1, -1, -1):
        following = rewards[t] + gamma * np.where(dones[t], 0.0, following)
        out[t] = following
    return out


def collect_teacher_data(env: VecEnv, teacher, samples: int, options: dict, progress=None, *,
                         gamma: float = 1.0, on_forbidden: str = "raise") -> TeacherData:
    """The teacher's moves in the learner's seat of ``env``, as training data.

    ``env`` is a training env (``experiments.ppo.envs.make_training_env``): the recorded
    observations are what the model reads, the masks the moves it chooses among (the env's
    legal moves after its ``mask_wait``, ``agents.network.playing_masks``). A teacher move those
    masks forbid (a bot may WAIT on purpose where ``mask_wait`` does not let the model) cannot
    be imitated: by default it is an error, so that no teacher move is left out unseen; with
    ``on_forbidden="skip"`` it is played, counted (``TeacherData.forbidden``) and not recorded.
    The teacher draws from each game's own stream for the learner's seat
    (``SpitVecEnv.learner_rng``), so the data of a game depends on its seed and game id alone.

    Args:
        env: the VecEnv to play in (a SpitVecEnv, or wrappers around one); it is reset first
            and left running.
        teacher: a Policy (one that plans on the public table, like ``planner``, gets the
            learners' tables from ``env.public_table()``).
        samples: at least this many decisions are recorded.
        options: the model's options (``agents.network.input_options``).
        progress: called with the count of decisions each step records (a
            ``spit_env.progress.Progress``), or None.
        gamma: the discount per decision of the returns (PPO's gamma), in (0, 1].
        on_forbidden: "raise" or "skip" (above).

    Returns:
        a :class:`TeacherData` with N >= ``samples`` decisions.

    Raises:
        ValueError: a bad ``on_forbidden`` or ``gamma``; with "raise", a teacher move the
            model's masks forbid (the message says how many and which option forbids them).
    """
    if on_forbidden not in ("raise", "skip"):
        raise ValueError(f"on_forbidden must be 'raise' or 'skip', got {on_forbidden!r}")
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    obs = env.reset()
    kept_obs, kept_masks, kept_actions, kept_steps, kept_idx = [], [], [], [], []
    rewards, dones = [], []
    n = played = forbidden = 0
    every = np.arange(env.num_envs)
    while n < samples:
        legal = get_action_masks(env)  # as MaskablePPO reads them, through every wrapper
        rng = env.learner_rng()
        if reads_public_table(teacher):  # a planning teacher (planner) also reads the table
            actions = call_policy(teacher, obs, legal, rng, table=env.public_table)
        else:
            actions = np.asarray(teacher(obs, legal, rng), dtype=np.int64)
        masks = playing_masks(legal, options)
        keep = masks[every, actions]
        if not keep.all() and on_forbidden == "raise":
            raise ValueError(
                f"the teacher played {int((~keep).sum())} move(s) the model's masks forbid "
                f"(options {options}: mask_wait takes WAIT out whenever another move is legal, "
                f"and a teacher may WAIT on purpose); use mask_wait=False to imitate every move")
        kept_obs.append(obs[keep])
        kept_masks.append(masks[keep])
        kept_actions.append(actions[keep])
        kept_steps.append(np.full(int(keep.sum()), len(rewards)))
        kept_idx.append(every[keep])
        played += len(actions)
        forbidden += int((~keep).sum())
        n += int(keep.sum())
        if progress is not None:
            progress(int(keep.sum()))
        obs, reward, done, _ = env.step(actions)
        rewards.append(reward)
        dones.append(done)
    steps, where = np.concatenate(kept_steps), np.concatenate(kept_idx)
    rewards, dones = np.stack(rewards).astype(np.float32), np.stack(dones).astype(bool)
    returns = discounted_returns(rewards, dones, gamma)[steps, where]
    return TeacherData(np.concatenate(kept_obs), np.concatenate(kept_masks),
                       np.concatenate(kept_actions), returns.astype(np.float32), where, steps,
                       rewards, dones, np.asarray(obs, dtype=np.float32), played, forbidden)


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


def _explained_variance(pred: np.ndarray, target: np.ndarray) -> float:
    """1 - Var(target - pred) / Var(target), as SB3 logs it (NaN for a constant target)."""
    var = float(np.var(target))
    return float("nan") if var == 0 else 1.0 - float(np.var(target - pred)) / var


def lambda_returns(values: np.ndarray, last_values: np.ndarray, rewards: np.ndarray,
                   dones: np.ndarray, gamma: float, gae_lambda: float) -> np.ndarray:
    """TD(lambda) returns of a VecEnv's run, as PPO computes its value targets (GAE + values).

    Args:
        values: (T, B) the critic's values of the observations of each step.
        last_values: (B,) its values of the observations after the last step.
        rewards: (T, B) rewards.
        dones: (T, B) bool, the step ended its row's episode.
        gamma: discount per step.
        gae_lambda: GAE's lambda.

    Returns:
        (T, B) float64: advantages + values (SB3's ``RolloutBuffer.compute_returns_and_advantage``).
    """
    values = np.asarray(values, dtype=np.float64)
    advantages = np.zeros_like(values)
    last_gae = np.zeros(values.shape[1])
    for t in range(len(values) - 1, -1, -1):
        following = last_values if t == len(values) - 1 else values[t + 1]
        live = 1.0 - np.asarray(dones[t], dtype=np.float64)
        delta = rewards[t] + gamma * following * live - values[t]
        last_gae = delta + gamma * gae_lambda * live * last_gae
        advantages[t] = last_gae
    return advantages + values


def fit_critic(model, data: TeacherData, *, gamma: float, gae_lambda: float, steps: int,
               batch_size: int, learning_rate: float, seed: int, rounds: int = 10,
               held_out: int = HELD_OUT_EVERY, progress=None) -> dict:
    """Fit the value network of ``model`` to the teacher's games; the actor is untouched.

    The targets are PPO's own: TD(lambda) returns (``gamma``, ``gae_lambda``) of the teacher's
    rewards, bootstrapped on the critic's values, recomputed ``rounds`` times over the fit
    (fitted value iteration on the teacher's games). Monte Carlo returns to the end of a game
    would be a poor target: a game spans hundreds of decisions and many rounds, and a few
    hundred games' outcomes are memorised rather than learnt. Mean squared error over the value
    MLP and value head, ``steps`` Adam steps on random minibatches of ``batch_size``. The games
    of every ``held_out``-th VecEnv row are held out and scored as PPO logs its first update's
    explained variance (values against their TD(lambda) returns) after every round; the value
    network kept is the best scored (the starting one if none scored better).

    Args:
        model: a MaskablePPO model whose features extractor holds no weights.
        data: the teacher's games (:func:`collect_teacher_data`), every decision recorded.
        gamma: the discount per decision (PPO's).
        gae_lambda: GAE's lambda (PPO's).
        steps: Adam steps in all.
        batch_size: decisions per minibatch.
        learning_rate: Adam's learning rate.
        seed: seeds the minibatches' draws.
        rounds: times the targets are recomputed (>= 1).
        held_out: every this-many-th row is held out (>= 2).
        progress: called with 1 after each step, or None.

    Returns:
        {"samples" (fitted), "held_out_samples", "loss" (the last round's mean),
        "held_out_explained_variance_before", "held_out_explained_variance" (of the network
        kept), "best_round" (0 = the starting network)}.

    Raises:
        ValueError: decisions missing from ``data`` (skipped forbidden moves), no fitted or no
            held-out row, bad ``held_out`` or ``rounds``, or trainable features.
    """
    import torch

    if held_out < 2 or rounds < 1:
        raise ValueError(f"held_out must be >= 2 and rounds >= 1, got {held_out} and {rounds}")
    T, B = data.rewards.shape
    if data.forbidden or len(data.actions) != T * B:
        raise ValueError("fit_critic needs every decision of the collection (no forbidden move "
                         "skipped): the TD targets follow each game step by step")
    fitted, test_idx = held_out_idx(B, held_out)
    if fitted.size == 0 or test_idx.size == 0:
        raise ValueError(f"fit_critic needs fitted and held-out rows, got {B} row(s)")
    policy = model.policy
    if any(p.requires_grad for p in policy.features_extractor.parameters()):
        raise ValueError("fit_critic fits the value MLP on fixed inputs: the model's features "
                         "extractor must hold no trainable weights")
    order = np.empty((T, B), dtype=np.int64)  # the sample of each (step, row)
    order[data.steps, data.idx] = np.arange(T * B)
    vf_features = getattr(policy, "vf_features_extractor", None) or policy.features_extractor
    with torch.no_grad():
        inputs = vf_features(torch.as_tensor(np.concatenate([data.observations[order.ravel()],
                                                             data.last_observations])))
    test = np.isin(np.arange(B), test_idx)
    params = (list(policy.mlp_extractor.value_net.parameters())
              + list(policy.value_net.parameters()))

    def values() -> np.ndarray:
        with torch.no_grad():
            out = torch.cat([policy.value_net(policy.mlp_extractor.forward_critic(chunk))
                             for chunk in torch.split(inputs, 65536)]).flatten().numpy()
        return out[:T * B].reshape(T, B), out[T * B:]

    def targets_and_score():
        now, last = values()
        target = lambda_returns(now, last, data.rewards, data.dones, gamma, gae_lambda)
        v, r = now[:, test].ravel(), target[:, test].ravel()
        return target, _explained_variance(v, r)

    fit_idx = torch.as_tensor((np.arange(T)[:, None] * B + fitted[None, :]).ravel())
    optimiser = torch.optim.Adam(params, lr=learning_rate)
    gen = torch.Generator().manual_seed(int(seed))
    target, before = targets_and_score()
    best = (before if np.isfinite(before) else -np.inf, 0, [p.detach().clone() for p in params])
    policy.set_training_mode(True)
    losses = []
    done = 0
    for r in range(1, rounds + 1):
        target_t = torch.as_tensor(target.ravel(), dtype=torch.float32)
        losses = []
        for _ in range(steps * r // rounds - done):
            idx = fit_idx[torch.randint(0, len(fit_idx), (batch_size,), generator=gen)]
            pred = policy.value_net(policy.mlp_extractor.forward_critic(inputs[idx])).flatten()
            loss = torch.nn.functional.mse_loss(pred, target_t[idx])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
            done += 1
            if progress is not None:
                progress(1)
        target, score = targets_and_score()
        if score > best[0]:
            best = (score, r, [p.detach().clone() for p in params])
    policy.set_training_mode(False)
    with torch.no_grad():
        for p, kept in zip(params, best[2], strict=True):
            p.copy_(kept)
    return {"samples": int(T * fitted.size), "held_out_samples": int(T * test_idx.size),
            "loss": float(np.mean(losses)) if losses else float("nan"),
            "held_out_explained_variance_before": float(before),
            "held_out_explained_variance": float(best[0]), "best_round": best[1]}
