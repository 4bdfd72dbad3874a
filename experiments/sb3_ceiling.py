"""SB3's own ceiling: how fast MaskablePPO trains train_ppo's network when the environment is free.

::

    python -m experiments.sb3_ceiling                          # 262,144 steps, train_ppo defaults
    python -m experiments.sb3_ceiling --total-timesteps 500000 --json out/sb3_ceiling.json

The model is the one ``experiments.train_ppo`` builds at its defaults (``Args()`` of
``experiments.ppo.args``: the network, ``n_steps``, ``batch_size``, ``n_epochs``, the learning
rates and coefficients, its policy with the network's input computed inside it, one torch thread,
CPU), trained by ``MaskablePPO.learn`` through ``VecMonitor`` as in training. Only the
environment differs: :class:`ReplayVecEnv` replays a bank of real steps (observations, legal
masks, rewards and episode ends) recorded beforehand from train_ppo's own training environment,
so every step costs an array lookup. Its
steps per second are the most SB3 can do with this network on this machine; train_ppo's
``steps_per_second`` beside it shows what the real environment (and the rest of the training
loop) costs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecMonitor

from experiments.cli import ArgumentParser
from spit_env.progress import counted

__all__ = ["ReplayVecEnv", "record_bank", "run", "main"]


class ReplayVecEnv(VecEnv):
    """A VecEnv that costs nothing: it replays recorded steps in a loop.

    Args:
        obs: (T, B, D) float32 the observations, step by step.
        masks: (T, B, 23) bool the legal masks (``action_masks()``).
        rewards: (T, B) float32, the recorded rewards.
        dones: (T, B) bool, the recorded episode ends.

    Step t returns ``obs[t % T]`` whatever the actions; ``action_masks()`` are those of the
    current observation. Ended episodes carry no ``terminal_observation`` (none is truncated).
    """

    def __init__(self, obs, masks, rewards, dones):
        self._obs, self._masks, self._rewards, self._dones = obs, masks, rewards, dones
        self._t = 0
        self.render_mode = None
        t, b, k = obs.shape
        super().__init__(b, spaces.Box(0.0, 1.0, (k,), np.float32),
                         spaces.Discrete(masks.shape[2]))

    def reset(self):
        """Back to the first recorded step."""
        self._t = 0
        return self._obs[0]

    def step_async(self, actions) -> None:
        """Ignore the actions (the replay does not depend on them)."""

    def step_wait(self):
        """The next recorded step: (obs, rewards, dones, infos)."""
        self._t = (self._t + 1) % len(self._obs)
        t = self._t
        return self._obs[t], self._rewards[t], self._dones[t], [{} for _ in range(self.num_envs)]

    def action_masks(self) -> np.ndarray:
        """(B, 23) bool: the recorded masks of the current step."""
        return self._masks[self._t]

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        """``action_masks`` per row, as MaskablePPO asks for it."""
        if method_name != "action_masks":
            raise AttributeError(f"ReplayVecEnv has no method {method_name!r}")
        masks = self.action_masks()
        return [masks[i] for i in self._get_indices(indices)]

    def close(self) -> None:
        """Nothing to release."""

    def get_attr(self, attr_name, indices=None):
        """This object's attribute, once per index."""
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name, value, indices=None) -> None:
        """Set an attribute of this object."""
        setattr(self, attr_name, value)

    def env_is_wrapped(self, wrapper_class, indices=None):
        """False per index."""
        return [False for _ in self._get_indices(indices)]


def record_bank(args, steps: int, seed: int):
    """Record ``steps`` steps of train_ppo's training environment with a random learner.

    Args:
        args: train_ppo's arguments (``experiments.ppo.args.Args``) the environment is built
            with.
        steps: the steps to record.
        seed: the games' seed and the learner's.

    Returns:
        ``(obs, masks, rewards, dones)`` arrays as :class:`ReplayVecEnv` takes them; the learner
        plays uniformly over the legal masks.
    """
    from sb3_contrib.common.maskable.utils import get_action_masks

    from experiments.ppo.envs import make_training_env
    from spit_env.policy import uniform_legal_actions

    _, _, env = make_training_env(
        num_envs=args.num_envs, groups=1, opponent=args.opponent, seed=seed,
        learner_seat="random", reward=args.reward, episode=args.episode, shaping=args.shaping,
        skip_forced_waits=args.skip_forced_waits, truncation_reward=args.truncation_reward)
    obs = [env.reset()]
    masks, rewards, dones = [get_action_masks(env)], [np.zeros(args.num_envs, np.float32)], [
        np.zeros(args.num_envs, bool)]
    for _ in range(steps - 1):  # the learner's draws: each game's own (SpitVecEnv.learner_rng)
        o, r, d, _ = env.step(uniform_legal_actions(masks[-1], env.learner_rng()))
        obs.append(o)
        masks.append(get_action_masks(env))
        rewards.append(np.asarray(r, np.float32))
        dones.append(np.asarray(d, bool))
    env.close()
    return np.stack(obs), np.stack(masks), np.stack(rewards), np.stack(dones)


def run(total_timesteps: int, bank_steps: int = 64, seed: int = 0,
        show_progress: bool = True) -> dict:
    """Train train_ppo's default model on the replayed bank; return the speed figures.

    ``show_progress``: the training's progress on stderr (``experiments.ppo.progress``).
    """
    import torch
    from stable_baselines3.common.callbacks import CallbackList

    from agents.ppo_model import new_model
    from experiments.ppo.args import Args
    from experiments.ppo.progress import ProgressCallback, training_progress

    args = Args()
    torch.set_num_threads(args.torch_threads)
    bank = record_bank(args, bank_steps, seed)
    env = VecMonitor(ReplayVecEnv(*bank))
    model = new_model(
        env, net_arch=args.net_arch, options=dict(
            mask_wait=args.mask_wait, obs_mask=args.obs_mask, racer_features=args.racer_features),
        learning_rate=args.learning_rate, n_steps=args.n_steps, batch_size=args.batch_size,
        n_epochs=args.n_epochs, gamma=args.gamma, gae_lambda=args.gae_lambda,
        clip_range=args.clip_range, ent_coef=args.ent_coef, seed=seed, device="cpu", verbose=0,
    )
    rollout = args.num_envs * args.n_steps  # SB3 trains whole rollouts
    progress = training_progress(-(-total_timesteps // rollout) * rollout, enabled=show_progress)
    t0 = time.perf_counter()
    model.learn(total_timesteps=total_timesteps,
                callback=CallbackList([ProgressCallback(progress)]))
    seconds = time.perf_counter() - t0
    steps = int(model.num_timesteps)
    return {
        "timesteps": steps,
        "seconds": round(seconds, 2),
        "steps_per_second": round(steps / seconds, 1),
        "num_envs": args.num_envs, "n_steps": args.n_steps, "batch_size": args.batch_size,
        "n_epochs": args.n_epochs, "net_arch": list(args.net_arch),
        "input_size": int(model.policy.features_dim), "torch_threads": args.torch_threads,
        "versions": {"torch": torch.__version__, "python": sys.version.split()[0]},
        "note": "MaskablePPO + VecMonitor on a VecEnv replaying recorded steps (no game is "
                "played while training): the most train_ppo's defaults can do on this machine",
    }


def main(argv: list[str] | None = None) -> dict:
    """Measure from the command line (``--help``) and print the result.

    Returns:
        the result, as :func:`run` gives it.
    """
    parser = ArgumentParser(prog="python -m experiments.sb3_ceiling",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-timesteps", type=int, default=262_144,
                        help="learner decisions to train for (default 262144 = 16 rollouts of "
                             "train_ppo's 512 x 32)")
    parser.add_argument("--bank-steps", type=int, default=64,
                        help="recorded environment steps replayed in a loop (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the recorded games and model")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument("--quiet", action="store_true", help="no progress (no bar, no lines)")
    args = parser.parse_args(argv)
    if args.total_timesteps < 1:
        parser.error("--total-timesteps must be >= 1")
    if args.bank_steps < 2:
        parser.error("--bank-steps must be >= 2")
    result = run(args.total_timesteps, args.bank_steps, args.seed, show_progress=not args.quiet)
    print(f"SB3 ceiling: {counted(result['timesteps'], 'step')} in {result['seconds']:.0f} s = "
          f"{result['steps_per_second']:,.0f} steps/s (MaskablePPO, train_ppo's defaults, an "
          f"environment that costs nothing)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2))
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
