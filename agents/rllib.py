"""A policy trained with RLlib (``experiments/train_rllib.py``) as a batched bot, ``"rllib"``.

The name is declared in the entry-point group ``spit_env.policies``.

``agents.make("rllib", path="runs/rllib/checkpoint")`` loads the trained RLModule from an RLlib
checkpoint and returns an :class:`RLlibPolicy`, which plays from the seat view every policy gets
(egocentric observations, so one module plays both seats): in the tournament (a checkpoint
folder is a player there too), the notebooks and the other training scripts.

``path`` may be a training run's ``--out`` folder (its ``checkpoint/``), an algorithm checkpoint
(``Algorithm.save_to_path``) or one RLModule's own folder
(``<checkpoint>/learner_group/learner/rl_module/<module id>``). Ray (the ``scale`` extra) is
imported only when a policy loads; the RLModule classes live in :mod:`agents.rllib_modules`.

Inference runs the module's ``forward_inference`` (torch, CPU, no gradients) on the batch; the
legal mask (after the module's ``mask_wait`` option) is applied again in NumPy and a stochastic
policy draws with the ``rng`` it is given, so games stay reproducible from their seeds.

A whole algorithm (to train on) restores with :func:`restore_algorithm`: RLlib's
``Algorithm.from_checkpoint``, then the learner's module weights given to every remote env
runner and waited for (:func:`sync_env_runner_weights`). RLlib's own restore sends them without
waiting and drops a request to a runner that still has two in flight, so in a fresh process a
runner may keep the weights it was built with, and the first iterations would sample with them.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from agents.network import forward_in_blocks, mask_idle_wait
from spit_env.rules import N_ACTIONS, OBS_DIM

__all__ = [
    "RAY_MISSING",
    "LEARNER_MODULE",
    "SINGLE_AGENT_MODULE",
    "RLlibPolicy",
    "find_module_dir",
    "is_rllib_checkpoint",
    "make_rllib",
    "require_ray",
    "restore_algorithm",
    "sync_env_runner_weights",
]

#: The one-line message when Ray is not installed.
RAY_MISSING = ("Ray is not installed: this needs the 'scale' extra "
               "(pip install -c constraints.txt -e \".[scale]\")")

#: The module id of the trained policy in the multi-agent checkpoints of
#: ``experiments/train_rllib.py`` (self-play, and bot runs on the PettingZoo path).
LEARNER_MODULE = "learner"

#: The module id of a single-agent checkpoint (RLlib's ``DEFAULT_MODULE_ID``): the bot runs on the
#: vector env of ``Spit-v0``.
SINGLE_AGENT_MODULE = "default_policy"

_MODULES_DIR = ("learner_group", "learner", "rl_module")


class RayMissingError(ImportError):
    """Ray (with RLlib) is not installed; the message names the ``scale`` extra."""


def require_ray():
    """Import and return ``ray``, or raise :class:`RayMissingError` naming the ``scale`` extra."""
    try:
        import ray
        import ray.rllib  # noqa: F401  (RLlib ships as ray[rllib]; a bare ray lacks its deps)
    except ImportError as err:
        raise RayMissingError(RAY_MISSING) from err
    return ray


def is_rllib_checkpoint(path) -> bool:
    """Whether ``path`` is a folder :func:`find_module_dir` can load a module from.

    That is an RLlib algorithm checkpoint, a run folder holding one in ``checkpoint/``, or an
    RLModule folder.
    """
    path = Path(path)
    return path.is_dir() and any(
        (p / "rllib_checkpoint.json").is_file() or (p / "class_and_ctor_args.pkl").is_file()
        for p in (path, path / "checkpoint")
    )


def find_module_dir(path, module_id: str | None = None) -> Path:
    """The folder of RLModule ``module_id`` inside a checkpoint, a run folder or a module folder.

    Args:
        path: a run's ``--out`` folder, an algorithm checkpoint or an RLModule's own folder
            (returned as it is).
        module_id: the module to find; None: the trained policy, :data:`LEARNER_MODULE` or
            else (a single-agent checkpoint) :data:`SINGLE_AGENT_MODULE`.

    Raises:
        ValueError: ``path`` is not a folder, holds no RLlib checkpoint, or has no module
            ``module_id`` (the message lists the module ids it has).
    """
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"path: no RLlib checkpoint folder at {str(path)!r}")
    if (path / "module_state.pkl").is_file() or (path / "module_state.pt").is_file():
        return path  # a single RLModule's own folder
    for root in (path, path / "checkpoint"):
        modules = root.joinpath(*_MODULES_DIR)
        if modules.is_dir():
            if module_id is None:
                module_id = LEARNER_MODULE if (modules / LEARNER_MODULE).is_dir() else \
                    SINGLE_AGENT_MODULE
            found = modules / module_id
            if not found.is_dir():
                known = sorted(p.name for p in modules.iterdir() if p.is_dir())
                raise ValueError(f"module_id: {module_id!r} is not in the checkpoint "
                                 f"{str(root)!r}; it holds {known}")
            return found
    raise ValueError(
        f"path: {str(path)!r} is not an RLlib checkpoint (no {'/'.join(_MODULES_DIR)} in it or "
        "in its checkpoint/ folder)"
    )


class RLlibPolicy:
    """A trained RLlib RLModule (``agents.rllib_modules.MaskedPPOModule``) as a policy.

    A :class:`spit_env.policy.Policy`:
    ``policy(observations (B, D) float32, action_masks (B, 23) bool, rng) -> (B,) int64``, always
    legal. With the module's ``mask_wait`` option (on by default in training) WAIT is taken out of
    every row that has another legal move, as in training.

    Args:
        module: an RLModule taking ``{"observation": (B, D), "action_mask": (B, 23)}``
            observations, or (B, D) ones (a module of the bot runs, which reads the mask from
            them), and returning action logits (``action_dist_inputs``).
        deterministic: play the most probable legal action (default) instead of sampling one.

    Raises:
        ValueError: a module whose spaces are not Spit's (D, 23) for this version of the rules
            (e.g. a checkpoint trained before the observation grew).
    """

    def __init__(self, module, deterministic: bool = True):
        import torch

        space = getattr(module, "observation_space", None)
        self._dict_obs = hasattr(space, "spaces") and "observation" in space.spaces
        inner = space["observation"] if self._dict_obs else space
        n_actions = getattr(getattr(module, "action_space", None), "n", None)
        shape = tuple(getattr(inner, "shape", None) or ())
        if shape != (OBS_DIM,) or n_actions != N_ACTIONS:
            raise ValueError(
                f"module: expected a Dict observation space with 'observation' ({OBS_DIM},) or a "
                f"Box ({OBS_DIM},), and {N_ACTIONS} actions, got {space} and {n_actions}"
            )
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be True or False, got {deterministic!r}")
        self.module = module.eval() if hasattr(module, "eval") else module
        self.options = dict(getattr(module, "spit_options", {}) or {})
        self.deterministic = deterministic
        self._torch = torch

    @classmethod
    def load(cls, path, module_id: str | None = None,
             deterministic: bool = True) -> RLlibPolicy:
        """A policy from a checkpoint (see :func:`find_module_dir`).

        Args:
            path: a run folder, an algorithm checkpoint or an RLModule folder.
            module_id: the module to load (None: the trained policy, :func:`find_module_dir`).
            deterministic: as in :class:`RLlibPolicy`.

        Raises:
            RayMissingError: Ray is not installed.
            ValueError: as :func:`find_module_dir`, or a module that is not Spit's.
        """
        require_ray()
        folder = find_module_dir(path, module_id)
        from ray.rllib.core.rl_module.rl_module import RLModule

        try:
            module = RLModule.from_checkpoint(folder.resolve())
        except Exception as err:  # noqa: BLE001 - a corrupt or foreign checkpoint: say which
            raise ValueError(
                f"path: cannot load an RLModule from {str(folder)!r} ({err})") from err
        return cls(module, deterministic=deterministic)

    def logits(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """(B, 23) float32 action logits, as the module masks them.

        Args:
            observations: (B, D) float32, layout ``spit_env.rules.OBSERVATION``.
            action_masks: (B, 23) bool legal moves; the module takes WAIT out of them itself
                (``mask_wait``) and puts every illegal action at a very large negative logit.
        """
        torch = self._torch
        dict_obs = self._dict_obs  # a Box module reads the mask from the observation itself

        # in blocks: the same bits in any batch (agents.network.FORWARD_BLOCK)
        def forward(obs, masks):
            obs = torch.as_tensor(obs)
            if dict_obs:
                obs = {"observation": obs, "action_mask": torch.as_tensor(masks)}
            with torch.no_grad():
                return self.module.forward_inference({"obs": obs})["action_dist_inputs"].numpy()

        return forward_in_blocks(forward, np.asarray(observations, dtype=np.float32),
                                 np.asarray(action_masks, dtype=np.float32))

    def __call__(
        self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """The policy call: (B,) int64 legal action ids.

        Args:
            observations: (B, D) float32, layout ``spit_env.rules.OBSERVATION``.
            action_masks: (B, 23) bool legal moves.
            rng: draws the sampled moves of a stochastic policy (``deterministic=False``).
        """
        masks = np.asarray(action_masks, dtype=bool)
        if len(masks) == 0:
            return np.zeros(0, dtype=np.int64)
        if self.options.get("mask_wait"):
            masks = mask_idle_wait(masks)
        scores = np.where(masks, self.logits(observations, masks), -np.inf)
        if not self.deterministic:
            # Gumbel-max: argmax(logit + Gumbel noise) is a draw from softmax(logits).
            scores = scores + rng.gumbel(size=scores.shape)
        return np.argmax(scores, axis=1).astype(np.int64)

    def __repr__(self) -> str:
        return f"RLlibPolicy(deterministic={self.deterministic})"


def make_rllib(path=None, module=None, module_id: str | None = None,
               deterministic: bool = True) -> RLlibPolicy:
    """Registry factory for ``"rllib"``: exactly one of ``path`` (a checkpoint) or ``module``.

    Args:
        path: a run folder, an algorithm checkpoint or an RLModule folder
            (:meth:`RLlibPolicy.load`).
        module: an RLModule already loaded.
        module_id: the module to load from ``path``.
        deterministic: as in :class:`RLlibPolicy`.

    Raises:
        RayMissingError: Ray is not installed (only when loading from ``path``).
        ValueError: neither or both given, no checkpoint there, or a module that is not Spit's.
    """
    if (path is None) == (module is None):
        raise ValueError("rllib policy needs exactly one of path=<checkpoint folder> or "
                         "module=<RLModule>")
    if path is not None:
        return RLlibPolicy.load(path, module_id=module_id, deterministic=deterministic)
    return RLlibPolicy(module, deterministic=deterministic)


def restore_algorithm(path):
    """An RLlib algorithm from its checkpoint, every env runner holding the learner's weights.

    ``Algorithm.from_checkpoint`` (nothing to register first: the config names importable
    classes), then :func:`sync_env_runner_weights`. Start Ray first
    (``experiments.cluster.connect.ray_session``), or RLlib starts a default local one; either
    way Python's global ``random`` state is left as it was (Ray's start draws from it).

    Args:
        path: an algorithm checkpoint (``Algorithm.save_to_path``) or a training run's folder
            (its ``checkpoint/``).

    Returns:
        the ``ray.rllib.algorithms.algorithm.Algorithm``, ready to ``train()`` on.

    Raises:
        RayMissingError: Ray is not installed.
        ValueError: ``path`` holds no algorithm checkpoint.
    """
    require_ray()
    from ray.rllib.algorithms.algorithm import Algorithm

    path = Path(path)
    root = next((p for p in (path, path / "checkpoint")
                 if (p / "rllib_checkpoint.json").is_file()), None)
    if root is None:
        raise ValueError(f"path: {str(path)!r} is not an RLlib algorithm checkpoint (no "
                         "rllib_checkpoint.json in it or in its checkpoint/ folder)")
    state = random.getstate()  # Ray, if RLlib starts it here, draws from the global random
    try:
        algo = Algorithm.from_checkpoint(str(root.resolve()))
    finally:
        random.setstate(state)
    sync_env_runner_weights(algo)
    return algo


def sync_env_runner_weights(algo) -> None:
    """Set the learner's module weights in every remote env runner of ``algo``, and wait.

    The weights go without their sequence number, so each runner takes them whatever number it
    holds; the call returns once every healthy runner has them. Without remote runners (the
    env runner in this process: RLlib's restore sets it directly) there is nothing to do.
    """
    group = algo.env_runner_group
    if group is None or group.num_remote_env_runners() == 0:
        return
    import ray
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE

    part = f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}"
    state = algo.learner_group.get_state(components=part, inference_only=True)
    weights = ray.put({COMPONENT_RL_MODULE: state[COMPONENT_LEARNER][COMPONENT_RL_MODULE]})
    group.foreach_env_runner("set_state", kwargs={"state": weights}, local_env_runner=False)
