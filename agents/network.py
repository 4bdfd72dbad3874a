"""The policy network as a player (``"network"``): its loader, the shipped network, its input.

The player is declared as ``"network"`` by entry point, and as ``"ppo"``, its older name (the
same factory, :func:`make_network`); the input contract is the one rule training and playing
share.

``agents.make("network", path="runs/x/model.zip")`` (or ``spit_env.policy.make_policy``) loads a
model file of the package's format (``agents.ppo_model``: a MaskablePPO file, as
``experiments/train_ppo.py``, ``experiments/expert_iteration.py`` and
``experiments/ship_model.py`` write them) and returns a :class:`NetworkPolicy`: it plays from the
same seat view every policy gets (egocentric observations, so a network trained on either seat
plays both), in the tournament, the notebooks, and as a frozen self-play opponent inside
training. ``agents.make("network")`` without a path plays the network shipped with the package
(:data:`SHIPPED_MODEL`, package data), a policy network trained by expert iteration (how, and
its results: ``docs/results/ppo_shipped.md``), so ``"network"`` works as a name anywhere a bot's
name does (``SpitVecEnv(opponent="network")``, ``--players network,racer``). Any MaskablePPO
model of Spit's spaces plays, a plain ``"MlpPolicy"`` one too.

Inference runs the model's actor (features -> policy MLP -> action logits) in one torch forward
pass per call, on CPU under ``torch.no_grad``; masking and the choice are done in NumPy so that a
stochastic policy draws only from the ``rng`` it is given (games stay reproducible from their
seeds and do not touch torch's global random state).

The input contract (:func:`model_input`), the options of the package's model format
(``agents.ppo_model.SpitPolicy``): with ``mask_wait`` the model plays with WAIT taken out of every
mask row that has another legal move (:func:`playing_masks`); with ``obs_mask`` its network's
input is the (D,) observation followed by those (23,) masks as 0/1 floats; with
``racer_features`` it is followed by the racer bot's reading of each legal play
(:func:`racer_features`, 40 floats). The mask in the input is the one the observation shows
(``spit_env.observation.observed_masks``, under the model's rule options
``spit_env.observation.RULE_OPTIONS``), so the model needs the observation only; the policy
computes its input itself (``agents.ppo_model.SpitFeatures``). This module is NumPy only (torch
is imported when a policy is built); the torch and SB3 side lives in :mod:`agents.ppo_model`.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path

import numpy as np

from agents.heuristics import RacerBot, read_table
from spit_env.checks import check_bool, check_int
from spit_env.observation import RULE_OPTIONS, check_ranks
from spit_env.rules import N_ACTIONS, N_STOCKS, OBS_DIM, PLAY_BASE

__all__ = ["NetworkPolicy", "PPOPolicy", "make_network", "load_model", "mask_idle_wait",
           "INPUT_OPTIONS", "input_options", "input_size", "playing_masks", "model_input",
           "racer_features", "RACER_FEATURES", "SHIPPED_MODEL", "shipped_model_path",
           "LegacyModelError", "CONVERT_HINT", "is_legacy", "FORWARD_BLOCK", "forward_in_blocks"]

#: The shipped network, a file of this package (``agents``): a policy network trained by expert
#: iteration, written by ``experiments.ship_model``.
SHIPPED_MODEL = "models/network.zip"

#: The input options of a model (``agents.ppo_model.SpitPolicy``'s keyword arguments), with the
#: values of a model that has none (a plain ``"MlpPolicy"``): the plain observation, every legal
#: move.
INPUT_OPTIONS = {"mask_wait": False, "obs_mask": False, "racer_features": False}

#: Floats :func:`racer_features` appends: four per PLAY(s, c), S * 2 plays.
RACER_FEATURES = 4 * N_STOCKS * 2
_PLAY_IDS = PLAY_BASE + np.arange(2 * N_STOCKS)  # PLAY(s, c) = PLAY_BASE + 2 s + c
_RACER = RacerBot()  # stateless: its analysis depends on the observation alone


def mask_idle_wait(masks: np.ndarray) -> np.ndarray:
    """(B, 23) bool masks with WAIT removed from every row that has another legal move."""
    masks = np.array(masks, dtype=bool, copy=True)
    masks[:, 0] &= ~masks[:, 1:].any(axis=1)
    return masks


def input_options(model) -> dict:
    """The options of ``model`` (a MaskablePPO model or its policy), as a new dict.

    :data:`INPUT_OPTIONS` and the rule options (``spit_env.observation.RULE_OPTIONS``) updated
    with the policy's own (``spit_options`` of an ``agents.ppo_model.SpitPolicy``); a plain SB3
    policy has none.
    """
    policy = getattr(model, "policy", model)
    return {**INPUT_OPTIONS, **RULE_OPTIONS, **(getattr(policy, "spit_options", None) or {})}


def input_size(options: dict) -> int:
    """The length of the network's input for input ``options`` (:data:`INPUT_OPTIONS`).

    D, plus 23 with ``obs_mask``, plus 40 with ``racer_features``.
    """
    return (OBS_DIM + (N_ACTIONS if options.get("obs_mask") else 0)
            + (RACER_FEATURES if options.get("racer_features") else 0))


def racer_features(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The racer bot's reading of every play, as network input (the ``racer_features`` option).

    For each PLAY(s, c), in action-id order (s major), four floats: the count of our other
    face-up tops that fit a centre top after the play / 4, the opponent's face-up tops that do /
    5, the racer's score of the play / 10 clipped to [-1, 1] (its race reading of the opponent's
    move in flight included, believing both seats at club latency), and 1 if racer holds the play
    doomed (``agents.heuristics.RacerBot.analysis``); all 0 for a play ``masks`` does not allow.

    Without the mask in the input (``obs_mask`` off) a legal play whose four values are all 0
    looks like a forbidden one.

    Args:
        observations: (B, D) float32 observations (layout ``spit_env.rules.OBSERVATION``).
        masks: (B, 23) bool, the moves the model chooses among.

    Returns:
        (B, 40) float32, feature k of play j at column 4 j + k.

    Raises:
        ValueError: bad shapes or a mask that is not bool; observations whose one-hot ranks do
            not decode to ranks 0-13 (not a Spit environment's observations).
    """
    obs, masks = _check_batch(observations, masks)
    if obs.shape[0] == 0:
        return np.zeros((0, RACER_FEATURES), np.float32)
    if masks.dtype != bool:
        raise ValueError(f"masks must be a bool array, got dtype {masks.dtype}")
    view = read_table(obs)
    check_ranks(view)
    score, doomed, follow, deny = _RACER.analysis(view)
    feats = np.stack([follow / 4.0, deny / 5.0, np.clip(score / 10.0, -1.0, 1.0), doomed],
                     axis=-1).reshape(len(obs), 2 * N_STOCKS, 4)
    feats *= masks[:, _PLAY_IDS, None]
    return feats.reshape(len(obs), RACER_FEATURES).astype(np.float32)


def _check_batch(observations, action_masks) -> tuple[np.ndarray, np.ndarray]:
    """``(observations (B, D) float32, action_masks (B, 23))`` as arrays.

    Raises:
        ValueError: naming the argument whose shape is wrong.
    """
    obs = np.asarray(observations, dtype=np.float32)
    if obs.ndim != 2 or obs.shape[1] != OBS_DIM:
        raise ValueError(f"observations must have shape (B, {OBS_DIM}), got {obs.shape}")
    masks = np.asarray(action_masks)
    if masks.shape != (obs.shape[0], N_ACTIONS):
        raise ValueError(f"action_masks must have shape ({obs.shape[0]}, {N_ACTIONS}) (one row "
                         f"per observation), got {masks.shape}")
    return obs, masks


def playing_masks(action_masks: np.ndarray, options: dict) -> np.ndarray:
    """(B, 23) bool: the legal moves the model chooses among (after ``mask_wait``), a new array."""
    if options.get("mask_wait"):
        return mask_idle_wait(action_masks)
    return np.array(action_masks, dtype=bool, copy=True)


def model_input(observations: np.ndarray, action_masks: np.ndarray,
                options: dict) -> tuple[np.ndarray, np.ndarray]:
    """The network's input and the playing masks, from an env's view (module docstring).

    Args:
        observations: (B, D) float32, layout ``spit_env.rules.OBSERVATION``.
        action_masks: (B, 23) bool, the env's legal moves.
        options: the model's input options (:func:`input_options`).

    Returns:
        (inputs (B, input_size(options)) float32, masks (B, 23) bool from :func:`playing_masks`).

    Raises:
        ValueError: observations not (B, D) or masks not (B, 23).
    """
    obs, action_masks = _check_batch(observations, action_masks)
    masks = playing_masks(action_masks, options)
    parts = [obs]
    if options.get("obs_mask"):
        parts.append(masks.astype(np.float32))
    if options.get("racer_features"):
        parts.append(racer_features(obs, masks))
    return (np.concatenate(parts, axis=1) if len(parts) > 1 else obs), masks


def shipped_model_path() -> Path:
    """The path of the shipped network's file (:data:`SHIPPED_MODEL`).

    Raises:
        FileNotFoundError: the installed package lacks the file (a build without package data).
    """
    found = resources.files("agents").joinpath(SHIPPED_MODEL)
    if not found.is_file():
        raise FileNotFoundError(
            f"the shipped network agents/{SHIPPED_MODEL} is missing from this installation "
            f"(package data of spit-env); pass path=<model.zip> instead")
    return Path(str(found))


class LegacyModelError(ValueError):
    """A model file of the older format (its input computed outside the model); names the fix."""


#: How to turn a model file of the older format into one of this format (same weights, moves).
CONVERT_HINT = "convert it with: python -m experiments.ship_model OLD.zip --out NEW.zip --no-half"


def is_legacy(model) -> bool:
    """Whether ``model`` is of the older format: ``spit_options`` on the model, a plain policy."""
    return "spit_options" in vars(model) and not hasattr(model.policy, "spit_options")


def load_model(path, device: str = "cpu", **kwargs):
    """Load a model file of the package's format (a MaskablePPO ``.zip``, ``agents.ppo_model``).

    Args:
        path: the file, the file without its ``.zip``, or a run folder holding ``model.zip``.
        device: the torch device to load on.
        **kwargs: passed to ``MaskablePPO.load`` (``env``, ``tensorboard_log``, ...).

    Raises:
        ValueError: ``path`` does not exist or is not a MaskablePPO model.
        LegacyModelError: a model of the older format (:data:`CONVERT_HINT`).
    """
    from sb3_contrib import MaskablePPO

    path = Path(path)
    candidates = [path, path.with_suffix(".zip"), path / "model.zip"]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        looked = list(dict.fromkeys(str(p) for p in candidates))  # "x.zip" is its own .zip
        raise ValueError(f"path: no model file at {str(path)!r} (looked for {looked})")
    try:
        model = MaskablePPO.load(found, device=device, **kwargs)
    except Exception as err:  # noqa: BLE001 - a corrupt or foreign zip: say which argument
        raise ValueError(f"path: {str(found)!r} is not a MaskablePPO model ({err})") from err
    if is_legacy(model):
        raise LegacyModelError(f"path: {str(found)!r} is a model of the older format (its input "
                               f"was computed outside the model); {CONVERT_HINT}")
    return model


#: Rows of every matrix product in a policy's forward pass. torch's float32 matrix products on
#: the CPU pick their kernel by the number of rows (where the switch lies depends on the CPU and
#: its BLAS: an AMD machine changed path below 4 rows, an Intel one above 12), and two kernels
#: differ in the last bits. A forward pass cut into blocks of exactly this many rows (the last
#: one padded with zeros) runs one kernel whatever the batch, so a row's logits are the same
#: bits in a batch of any size (one torch thread; ``tests/test_seeding.py`` checks it) and a
#: game's moves never depend on which other games decide in the same call. 64 rows cost about
#: 2x a single product at B=1200 and 2x a single row at B=1 (8 rows: 9x at B=1200).
FORWARD_BLOCK = 64


def forward_in_blocks(forward, *arrays: np.ndarray, block: int = FORWARD_BLOCK) -> np.ndarray:
    """``forward`` applied to fixed blocks of ``block`` rows of ``arrays``: (n, ...) results.

    Args:
        forward: called as ``forward(*blocks)`` with one (block, ...) array per input array, the
            last block zero-padded; returns a (block, ...) NumPy array.
        *arrays: (n, ...) arrays, the same n.
        block: rows per call (:data:`FORWARD_BLOCK`).

    Returns:
        The first n rows of the blocks' results, concatenated ((0, ...) if n == 0: ``forward``
        is called once on a padded block to learn the shape).
    """
    arrays = [np.asarray(a) for a in arrays]
    n = len(arrays[0])
    pad = (-n) % block if n else block
    padded = [np.concatenate([a, np.zeros((pad,) + a.shape[1:], a.dtype)]) if pad else a
              for a in arrays]
    out = [forward(*(a[i:i + block] for a in padded)) for i in range(0, n + pad, block)]
    return np.concatenate(out)[:n]


class NetworkPolicy:
    """A MaskablePPO model's actor (a policy network) as a :class:`spit_env.policy.Policy`.

    ``policy(observations (B, D) float32, action_masks (B, 23) bool, rng) -> (B,) int64``, always
    legal: illegal actions get probability 0 (logit -inf) before the choice. It plays the moves
    ``model.predict(observations, action_masks=action_masks, deterministic=True)`` plays.

    Args:
        model: a ``MaskablePPO`` model, or its ``.policy`` (a MaskableActorCriticPolicy), of
            Spit's spaces: a model of the package's format (``agents.ppo_model.SpitPolicy``, its
            options on the policy: :func:`input_options`) or a plain ``"MlpPolicy"`` one. The
            actor is deep-copied, so later training of ``model`` does not change this policy (a
            frozen snapshot, as self-play needs).
        deterministic: play the most probable legal action (default) instead of sampling one.
        threads: torch threads of the forward pass (torch's own setting is restored after
            it); 1 by default: a batch of game rows gains nothing from more, and more threads
            than free cores slow a forward pass down many times on a busy machine (measured: a
            small match 8x slower with torch's default of 2 threads beside another process).
            None keeps torch's setting.

    Raises:
        ValueError: a model whose observation or action space is not Spit's (D, 23);
            ``threads`` not None or an integer >= 1.
        LegacyModelError: a model of the older format (:data:`CONVERT_HINT`).
    """

    def __init__(self, model, deterministic: bool = True, threads: int | None = 1):
        import torch
        from torch import nn

        if hasattr(model, "policy") and is_legacy(model):
            raise LegacyModelError(f"model: a model of the older format; {CONVERT_HINT}")
        policy = getattr(model, "policy", model)
        #: the model's options (:func:`input_options`), e.g. mask_wait
        self.options = input_options(policy)
        obs_shape = tuple(policy.observation_space.shape)
        n_actions = getattr(policy.action_space, "n", None)
        if obs_shape != (OBS_DIM,) or n_actions != N_ACTIONS:
            raise ValueError(
                f"model: expected observation shape ({OBS_DIM},) and {N_ACTIONS} actions (Spit's "
                f"spaces), got {obs_shape} and {n_actions}")
        check_bool("deterministic", deterministic)
        self.threads = check_int("threads", threads, 1, none_ok=True)
        features = getattr(policy, "pi_features_extractor", None) or policy.features_extractor
        self._actor = copy.deepcopy(
            nn.Sequential(features, policy.mlp_extractor.policy_net, policy.action_net)
        ).to("cpu").eval()
        for p in self._actor.parameters():
            p.requires_grad_(False)
        self._torch = torch
        self.deterministic = deterministic

    @classmethod
    def load(cls, path, deterministic: bool = True, threads: int | None = 1) -> NetworkPolicy:
        """A policy from a saved model file (see :func:`load_model`)."""
        return cls(load_model(path), deterministic=deterministic, threads=threads)

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """(B, 23) float32 unmasked action logits.

        Args:
            observations: (B, D) float32, layout ``spit_env.rules.OBSERVATION`` (the model
                computes the rest of its input from them, :func:`model_input`).

        Raises:
            ValueError: observations not (B, D).
        """
        obs = np.asarray(observations, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != OBS_DIM:
            raise ValueError(f"observations must have shape (B, {OBS_DIM}), got {obs.shape}")
        return self._forward(obs)

    def _forward(self, inputs: np.ndarray) -> np.ndarray:
        torch = self._torch
        before = torch.get_num_threads()
        switch = self.threads is not None and before != self.threads
        if switch:
            torch.set_num_threads(self.threads)
        try:
            with torch.no_grad():  # in blocks: the same bits in any batch (FORWARD_BLOCK)
                return forward_in_blocks(lambda x: self._actor(torch.as_tensor(x)).numpy(),
                                         inputs)
        finally:
            if switch:
                torch.set_num_threads(before)

    def __call__(
        self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """The policy call: (B,) int64 legal action ids.

        Args:
            observations: (B, D) float32, layout ``spit_env.rules.OBSERVATION``.
            action_masks: (B, 23) bool legal moves (narrowed by ``mask_wait`` if the model has
                it).
            rng: draws the sampled moves of a stochastic policy (``deterministic=False``).

        Raises:
            ValueError: observations not (B, D) or masks not (B, 23).
        """
        obs, action_masks = _check_batch(observations, action_masks)
        if len(obs) == 0:
            return np.zeros(0, dtype=np.int64)
        masks = playing_masks(action_masks, self.options)
        scores = np.where(masks, self._forward(obs), -np.inf)
        if not self.deterministic:
            # Gumbel-max: argmax(logit + Gumbel noise) is a draw from softmax(logits).
            scores = scores + rng.gumbel(size=scores.shape)
        return np.argmax(scores, axis=1).astype(np.int64)

    def __repr__(self) -> str:
        return f"NetworkPolicy(deterministic={self.deterministic})"


#: The class's older name (kept for code that imports it).
PPOPolicy = NetworkPolicy


def make_network(path=None, model=None, deterministic: bool = True,
                 threads: int | None = 1) -> NetworkPolicy:
    """Registry factory for ``"network"`` (and ``"ppo"``, its older name): a :class:`NetworkPolicy`.

    Args:
        path: a saved model (:func:`load_model`).
        model: a MaskablePPO model or its policy.
        deterministic: as in :class:`NetworkPolicy`.
        threads: as in :class:`NetworkPolicy`.

    With neither ``path`` nor ``model``, the shipped network (:func:`shipped_model_path`).

    Raises:
        ValueError: both given, a missing file, or a model that is not Spit's.
        FileNotFoundError: neither given and the shipped network is missing.
    """
    if path is not None and model is not None:
        raise ValueError("network policy takes path=<model.zip> or model=<MaskablePPO>, not both")
    if path is None and model is None:
        path = shipped_model_path()
    if path is not None:
        return NetworkPolicy.load(path, deterministic=deterministic, threads=threads)
    return NetworkPolicy(model, deterministic=deterministic, threads=threads)
