"""RLlib pieces for Spit (the new API stack): the masked PPO learner, a heuristic bot, the env.

Importing this module imports Ray and torch (the ``scale`` extra); :mod:`agents.rllib` imports it
only when a policy loads, and ``experiments/rllib/config.py`` when it builds the algorithm.

Everything an algorithm's config names lives here or in ``spit_env`` (the module classes, the
environment class :class:`SpitMultiAgentEnv`, the policy mappings), importable by name, and
nothing is registered at run time: an RLlib checkpoint restores in a fresh process
(``Algorithm.from_checkpoint(path)``, ``RLModule.from_checkpoint(path)``) with no import first.
Every option that shapes a module (``mask_wait``, ``obs_mask``, the layer sizes) is a key of its
``model_config``, which RLlib saves with the checkpoint and passes again on restore.

:class:`MaskedPPOModule` takes either observation space of the environments, as it comes: the
PettingZoo dict ``{"observation": (B, D) float32, "action_mask": (B, 23) int8}`` per agent (the
Dict space of :class:`spit_env.SpitParallelEnv`, through RLlib's adapter
``ParallelPettingZooEnv``: the self-play runs), or the single learner's ``Box(0, 1, (D,))`` of
``Spit-v0`` and its vector env (``gymnasium.make_vec("Spit-v0", ...,
vectorization_mode="vector_entry_point")``: the bot runs), whose legal mask it reads from the
observation itself (``spit_env.observation.observed_masks``, equal to the env's mask, as the
shipped SB3 model does). :class:`BotModule` takes the Dict space.

* :class:`MaskedPPOModule`: RLlib's default PPO torch module with the action-masking pattern of
  RLlib's examples: the network reads the observation (and, with ``obs_mask``, the legal mask as
  23 more inputs), and every forward pass (inference, exploration, training) adds log(mask),
  floored at RLlib's ``FLOAT_MIN``, to the action logits, so an illegal move is never sampled
  and its log-probability never enters the loss.
* :class:`BotModule`: a registered batched bot (``agents.make(name)``) as an RLModule that RLlib
  runs but does not train (it is left out of ``policies_to_train``).
"""

from __future__ import annotations

import zlib

import gymnasium as gym
import numpy as np
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.rllib.utils.torch_utils import FLOAT_MIN

from spit_env import streams
from spit_env.observation import RULE_OPTIONS, observed_masks
from spit_env.rules import OBS_DIM

__all__ = ["MaskedPPOModule", "BotModule", "SPIT_MODEL_OPTIONS", "SpitMultiAgentEnv",
           "LEARNER", "BOT", "observation_keys", "learner_seat", "map_learner_vs_bot",
           "map_self_play"]

#: The module ids of a run of ``experiments/train_rllib.py``: the trained policy and the bot.
LEARNER, BOT = "learner", "bot"

#: model_config keys of :class:`MaskedPPOModule` beyond RLlib's ``DefaultModelConfig``, with
#: their defaults. ``mask_wait``: take WAIT out of the legal moves whenever another move is legal
#: (the learner never idles when it can act, as in ``train_ppo``). ``obs_mask``: feed the legal
#: mask (after ``mask_wait``) to the network beside the observation. Then the rule options
#: (``spit_env.observation.RULE_OPTIONS``: ``auto_flip``, ``wrap_ranks``, ``SpitConfig``'s
#: fields) the mask is read from a Box observation under (unused with the Dict space, which
#: carries the mask).
SPIT_MODEL_OPTIONS = {"mask_wait": True, "obs_mask": True, **RULE_OPTIONS}


def _is_dict_space(space) -> bool:
    return isinstance(space, gym.spaces.Dict) and \
        set(space.spaces) == {"observation", "action_mask"}


def _check_spaces(observation_space, action_space, box_ok: bool = False) -> None:
    box = isinstance(observation_space, gym.spaces.Box) and \
        tuple(observation_space.shape) == (OBS_DIM,)
    if not (_is_dict_space(observation_space) or box_ok and box):
        also = f" or the Box ({OBS_DIM},) of Spit-v0" if box_ok else ""
        raise ValueError(
            "observation_space must be the Dict space of spit_env.parallel_env() "
            f"({{'observation', 'action_mask'}}){also}, got {observation_space}"
        )
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"action_space must be Discrete, got {action_space}")


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module (MLP encoder, policy and value heads) with legal-move masking.

    Takes the Dict observation space of :class:`spit_env.SpitParallelEnv` or the Box of
    ``Spit-v0`` (the mask read from the observation, module docstring); the networks see a flat
    Box of D (+ 23 with ``obs_mask``) floats. ``model_config``: RLlib's ``DefaultModelConfig``
    keys as a dict (e.g. ``fcnet_hiddens``) plus :data:`SPIT_MODEL_OPTIONS`; the chosen options
    are kept as ``spit_options`` and stay in ``model_config`` (the constructor argument RLlib
    saves with the checkpoint), so a restored module is built as the saved one was.

    Raises:
        ValueError: a space that is not Spit's Dict observation / Discrete action space, or an
            unknown option value.
    """

    def __init__(self, *, observation_space=None, action_space=None, model_config=None, **kwargs):
        _check_spaces(observation_space, action_space, box_ok=True)
        config = dict(model_config or {})
        self.spit_options = {k: config.get(k, v) for k, v in SPIT_MODEL_OPTIONS.items()}
        for k, v in self.spit_options.items():
            if not isinstance(v, bool):
                raise ValueError(f"model_config[{k!r}] must be True or False, got {v!r}")
        config.update(self.spit_options)  # saved with the checkpoint: the defaults may change
        self._env_space = observation_space
        self.reads_mask = not _is_dict_space(observation_space)  # from the Box observation
        dim = (observation_space.shape if self.reads_mask else
               observation_space["observation"].shape)[0]
        if self.spit_options["obs_mask"]:
            dim += action_space.n
        flat = gym.spaces.Box(0.0, 1.0, (dim,), np.float32)
        super().__init__(observation_space=flat, action_space=action_space, model_config=config,
                         **kwargs)

    def setup(self):
        """Build RLlib's networks for the flat input, then take the env's space back."""
        super().setup()
        # The networks are built for the flat space; the module itself (what RLlib checks the
        # episodes against) takes the env's space, as in RLlib's action-masking example.
        self.observation_space = self._env_space

    def legal_mask(self, obs):
        """(B, 23) float 0/1 mask the module plays with: the env's mask, after ``mask_wait``.

        ``obs``: the Dict observation (its ``action_mask``), or the (B, D) Box observation
        (the mask it shows, ``spit_env.observation.observed_masks``).
        """
        import torch

        if self.reads_mask:
            masks = observed_masks(_numpy(obs).astype(np.float32, copy=False),
                                   **{k: self.spit_options[k] for k in RULE_OPTIONS})
            mask = torch.as_tensor(masks, dtype=torch.float32, device=obs.device)
        else:
            mask = obs["action_mask"].float()
        if self.spit_options["mask_wait"]:
            others = (mask[..., 1:].sum(-1, keepdim=True) > 0).float()
            mask = torch.cat([mask[..., :1] * (1.0 - others), mask[..., 1:]], dim=-1)
        return mask

    def _flat(self, batch: dict):
        """``(a copy of batch whose obs is the flat network input, the legal mask)``."""
        import torch

        obs = batch[Columns.OBS]
        if isinstance(obs, dict) == self.reads_mask:
            raise ValueError("MaskedPPOModule: observations must be " + (
                "(B, D) arrays, as its Box space" if self.reads_mask else
                "dicts {'observation', 'action_mask'}, as its Dict space"))
        mask = self.legal_mask(obs)
        x = (obs if self.reads_mask else obs["observation"]).float()
        if self.spit_options["obs_mask"]:
            x = torch.cat([x, mask], dim=-1)
        return {**batch, Columns.OBS: x}, mask

    @staticmethod
    def _masked(out: dict, mask) -> dict:
        import torch

        out[Columns.ACTION_DIST_INPUTS] = out[Columns.ACTION_DIST_INPUTS] + torch.clamp(
            torch.log(mask), min=FLOAT_MIN)
        return out

    def _forward_inference(self, batch, **kwargs):
        flat, mask = self._flat(batch)
        return self._masked(super()._forward_inference(flat, **kwargs), mask)

    def _forward_exploration(self, batch, **kwargs):
        flat, mask = self._flat(batch)
        return self._masked(super()._forward_exploration(flat, **kwargs), mask)

    def _forward_train(self, batch, **kwargs):
        flat, mask = self._flat(batch)
        return self._masked(super()._forward_train(flat, **kwargs), mask)

    def compute_values(self, batch, embeddings=None):
        """The value head's (B,) estimates, for a batch of Dict observations (or embeddings)."""
        if embeddings is None:
            batch, _ = self._flat(batch)
        return super().compute_values(batch, embeddings)


#: (D,) odd uint64 multipliers of :func:`observation_keys` (a fixed, seeded draw).
_OBS_HASH = streams.draw(0x5EA7, streams.POLICY, 0, np.arange(OBS_DIM)) | np.uint64(1)


def observation_keys(observations: np.ndarray, seed: int) -> np.ndarray:
    """(B,) uint64 stream keys, one per row: a hash of the row's observation and ``seed``.

    For a policy that sees observations only (an RLModule): a game's observation at a decision
    is a function of its seed, game id and course, so draws keyed by it depend on the game
    alone. Equal observations give equal keys.

    Args:
        observations: (B, D) float32, layout ``spit_env.rules.OBSERVATION``.
        seed: mixed into every key.
    """
    words = np.ascontiguousarray(observations, dtype=np.float32).view(np.uint32)
    with np.errstate(over="ignore"):
        h = (words.astype(np.uint64) * _OBS_HASH[: words.shape[1]]).sum(axis=1, dtype=np.uint64)
    return streams.draw(h, streams.POLICY, int(seed), 0)


def _numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor (RLlib's env-to-module pipeline makes them)
        x = x.detach().cpu().numpy()
    return np.asarray(x)


class BotModule(RLModule):
    """A registered bot as an RLModule that RLlib runs but never trains.

    ``model_config``: ``{"bot": a registered name (e.g. "greedy"), "latency": the bot's
    seat latency (a :class:`spit_env.Latency` or preset name; default the config's), "seed":
    int}``. The bot takes its seat through ``spit_env.policy.apply_profile``, so one that models
    its own latency (racer) believes that latency. An RLModule sees observations only, not the
    games they come from, so each row's draws (``spit_env.streams.RowStreams``) are keyed by
    ``seed`` and a hash of that row's observation (:func:`observation_keys`): a function of the
    game's course alone, the same in any env runner, batch or process history.

    Raises:
        ValueError: an unknown bot name or a bad space (at construction).
        NotImplementedError: a training pass (keep it out of ``policies_to_train``).
    """

    def __init__(self, *, observation_space=None, action_space=None, model_config=None, **kwargs):
        _check_spaces(observation_space, action_space)
        super().__init__(observation_space=observation_space, action_space=action_space,
                         model_config=model_config, **kwargs)

    def setup(self):
        """Seat the bot (``apply_profile``)."""
        from spit_env.config import SpitConfig
        from spit_env.policy import apply_profile

        config = dict(self.model_config or {})
        # the module plays whichever seat RLlib maps to it: both seats of the config carry the
        # bot's latency, so seat 0 stands for either (train_rllib plays both at --latency)
        game = SpitConfig() if config.get("latency") is None else \
            SpitConfig(latency=config["latency"])
        self.bot, _ = apply_profile(config.get("bot", "greedy"), game, 0)
        self._seed = int(config.get("seed", 0))

    def _forward_inference(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        observations = _numpy(obs["observation"]).astype(np.float32, copy=False)
        rng = streams.RowStreams(observation_keys(observations, self._seed))
        actions = self.bot(observations, _numpy(obs["action_mask"]).astype(bool), rng)
        return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

    def _forward_exploration(self, batch, **kwargs):
        return self._forward_inference(batch, **kwargs)

    def _forward_train(self, batch, **kwargs):
        raise NotImplementedError(
            f"BotModule ({self.model_config.get('bot')!r}) is not trainable: keep it out of "
            "policies_to_train"
        )


# --- the environment RLlib builds, and the policy mappings ---------------------------------------
def _spit_config(env_config):
    """The SpitConfig of an ``env_config``: its "config" (a SpitConfig) or its "latency"."""
    from spit_env.config import SpitConfig
    from spit_env.latency import Latency

    env_config = dict(env_config or {})
    config = env_config.get("config")
    if config is not None:
        return config
    latency = env_config.get("latency")
    return SpitConfig() if latency is None else SpitConfig(latency=Latency.parse(latency))


class SpitMultiAgentEnv(ParallelPettingZooEnv):
    """One game of the PettingZoo ``ParallelEnv`` in RLlib's adapter (``ParallelPettingZooEnv``).

    The environment class of the multi-agent runs (``config.environment(SpitMultiAgentEnv,
    env_config=...)``): RLlib constructs it with the ``env_config``, ``{"config": a SpitConfig}``
    or ``{"latency": a preset name or whole ms}`` (both seats), or none (the defaults). The agents
    are ``player_0`` and ``player_1``, the seats; with ``"roles": True`` they are :data:`LEARNER`
    and :data:`BOT` instead, the learner's seat drawn per game from the game's own stream
    (``spit_env.streams.seat_draws`` of (seed, game id), as ``Spit-v0``'s
    ``learner_seat="random"``), so who sits where depends on the game alone
    (:func:`map_learner_vs_bot` maps the roles to the modules of the same names).
    """

    def __init__(self, env_config=None):
        import spit_env

        env_config = dict(env_config or {})
        super().__init__(spit_env.parallel_env(_spit_config(env_config)))
        self.roles = bool(env_config.get("roles", False))
        self._names = {f"player_{p}": f"player_{p}" for p in (0, 1)}
        if self.roles:
            space, act = self.observation_space["player_0"], self.action_space["player_0"]
            self._agent_ids = {LEARNER, BOT}
            self.agents, self.possible_agents = [LEARNER, BOT], [LEARNER, BOT]
            self.observation_space = gym.spaces.Dict({LEARNER: space, BOT: space})
            self.action_space = gym.spaces.Dict({LEARNER: act, BOT: act})
            self._seat_roles()

    def _seat_roles(self) -> None:
        seed, game = self.par_env.seed_and_game
        learner = int(streams.seat_draws(streams.game_key(seed, game))[0])
        self._names = {f"player_{learner}": LEARNER, f"player_{1 - learner}": BOT}

    def _named(self, per_agent: dict) -> dict:
        return {self._names.get(k, k): v for k, v in per_agent.items()}

    def reset(self, *, seed=None, options=None):
        """As RLlib's adapter; with roles, the learner's seat of the new game is drawn."""
        obs, infos = super().reset(seed=seed, options=options)
        if not self.roles:
            return obs, infos
        self._seat_roles()
        return self._named(obs), self._named(infos)

    def step(self, action_dict):
        """As RLlib's adapter, the agents named by their roles when it has them."""
        if self.roles:
            seat_of = {v: k for k, v in self._names.items()}
            action_dict = {seat_of[a]: v for a, v in action_dict.items()}
        out = super().step(action_dict)
        return tuple(self._named(part) for part in out) if self.roles else out

    def learner_seat(self) -> int:
        """The learner's seat (0 or 1) in the current game (with roles)."""
        return int(next(k for k, v in self._names.items() if v == LEARNER)[-1])


def learner_seat(episode) -> int:
    """The learner's seat in an episode of seat-named agents: 0 or 1, a hash of the episode's id.

    Only for checkpoints of runs made before the agents were named by their roles
    (:class:`SpitMultiAgentEnv`), whose configs still name their seats; RLlib draws the
    episode's id at random, so those runs seat the learner per process, not per game.
    """
    return zlib.crc32(str(episode.id_).encode()) & 1


def map_learner_vs_bot(agent_id, episode, **kwargs) -> str:
    """Policy mapping of the bot mode: the role's module (:class:`SpitMultiAgentEnv` with roles).

    Agents named by seat (``player_0``, ``player_1``: a checkpoint of an older run) map through
    :func:`learner_seat`.
    """
    if agent_id in (LEARNER, BOT):
        return agent_id
    return LEARNER if agent_id == f"player_{learner_seat(episode)}" else BOT


def map_self_play(agent_id, episode, **kwargs) -> str:
    """Policy mapping of self-play: both seats play (and train) the one "learner"."""
    return LEARNER
