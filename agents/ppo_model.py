"""The model format of the package: a standard MaskablePPO model that reads the env's observation.

Every network the project trains or ships is a file of this format, whatever trained it
(``experiments.train_ppo``'s PPO, ``experiments.expert_iteration``'s fits): the file is
sb3-contrib's MaskablePPO one, hence this module's name. The player that plays such a file,
its loader and the shipped network live in :mod:`agents.network`.

A model made here takes what every view of the package gives: the (D,) observation, and the
(23,) legal mask where the library passes one (``model.predict(obs, action_masks=...)``,
sb3-contrib's ``evaluate_policy``, ``MaskablePPO.learn``). Its extra inputs are computed inside
the policy, so nothing stands between the environment and the model::

    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy
    from agents.network import shipped_model_path
    import spit_env

    model = MaskablePPO.load(shipped_model_path())                  # nothing else to import
    venv = spit_env.SpitVecEnv(num_envs=64, opponent="greedy", seed=0)
    evaluate_policy(model, venv, n_eval_episodes=64)                # a plain VecEnv
    actions, _ = model.predict(venv.reset(), action_masks=venv.action_masks(), deterministic=True)

* :class:`SpitPolicy` (``policy_class``): sb3-contrib's ``MaskableActorCriticPolicy`` whose
  options are plain keyword arguments, saved as JSON in the model file: the input options
  (``mask_wait``, ``obs_mask``, ``racer_features``: ``agents.network.INPUT_OPTIONS``) and the
  rules the legal mask is read under (``auto_flip``, ``wrap_ranks``:
  ``spit_env.observation.RULE_OPTIONS``, the fields of ``SpitConfig`` the mask depends on beyond
  the observation). With ``mask_wait`` it takes WAIT out of every mask it is given that has
  another legal move (training and play alike); given no mask, it plays the moves the
  observation shows legal (``spit_env.observation.observed_masks``).
* :class:`SpitFeatures` (its features extractor, no weights): the network's input from the
  observation alone, ``agents.network.model_input`` on the mask that the observation shows
  (``spit_env.observation.observed_masks``, exactly the env's mask under the declared rules), its
  observation part being the fields the model reads (``obs_fields``, names of
  ``rules.OBSERVATION``, saved with it: a model keeps reading the same fields when the
  observation gains new ones; a file saved before the option reads :data:`LEGACY_OBS_FIELDS`).
  Any ``net_arch`` sits on top of it.

The file (:func:`save_model`) is SB3's zip with nothing version-bound in it: the weights are torch
state dicts (read with ``torch.load(weights_only=True)``), the options and hyperparameters JSON,
and the few objects SB3 must store pickled (the policy class and the two spaces) are pickles of
names and plain values only: no NumPy object, no schedule function, no RNG state, so the file
loads on every NumPy, Gymnasium and SB3 version the package admits (CI loads the shipped model on
the lowest ones). :func:`pickled_names` lists what a file's pickles refer to.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from agents.network import INPUT_OPTIONS, input_size, model_input
from spit_env.checks import check_bool
from spit_env.observation import RULE_OPTIONS, observed_masks, rule_options
from spit_env.rules import N_ACTIONS, OBS, OBS_DIM, OBSERVATION, WAIT

__all__ = ["SpitFeatures", "SpitPolicy", "new_model", "save_model", "from_legacy",
           "pickled_names", "observation_fields", "PORTABLE_MODULES", "TRAINING_ONLY",
           "LEGACY_OBS_FIELDS", "TRACKED_OBS_FIELDS"]

#: The fields the observation gained after model files began to be saved, before they recorded
#: their fields (``obs_fields``).
TRACKED_OBS_FIELDS = ("unseen_rank", "self_idle", "opp_idle", "centre_rank_count")
#: The fields of the 241-float observation, the one before :data:`TRACKED_OBS_FIELDS`: what a
#: model file saved without ``obs_fields`` reads, in this order. Written out, so that it stays
#: that observation whatever fields the observation gains.
LEGACY_OBS_FIELDS = (
    "phase", "one_pile_round", "clock", "round", "stall_timer",
    "self_stock_top_rank", "self_stock_top_face_down", "self_stock_height", "self_spit_count",
    "self_cards_held", "self_score", "self_busy", "self_time_to_land", "self_move_in_flight",
    "opp_stock_top_rank", "opp_stock_top_face_down", "opp_stock_height", "opp_spit_count",
    "opp_cards_held", "opp_score", "opp_busy", "opp_time_to_land", "opp_move_in_flight",
    "centre_top_rank", "centre_size",
)
_LEGACY_DIM = sum(OBS[name].size for name in LEGACY_OBS_FIELDS)


def observation_fields(leave_out=()) -> tuple[str, ...]:
    """The names of ``rules.OBSERVATION``'s fields, in order, but those in ``leave_out``.

    Raises:
        ValueError: a name in ``leave_out`` that is not a field (the message lists them).
    """
    unknown = sorted(set(leave_out) - set(OBS))
    if unknown:
        raise ValueError(f"unknown observation fields {unknown}; the fields: {list(OBS)}")
    return tuple(f.name for f in OBSERVATION if f.name not in set(leave_out))


def _obs_fields(observation_space, obs_fields) -> tuple[str, ...]:
    """The fields a model reads: ``obs_fields`` checked, or those its observation space implies.

    A file saved before ``obs_fields`` existed (None) has the observation space of its time:
    (241,) reads :data:`LEGACY_OBS_FIELDS`, the current one every field.

    Raises:
        ValueError: an unknown or repeated name, no field, or no ``obs_fields`` with another
            observation space.
    """
    if obs_fields is None:
        shape = tuple(getattr(observation_space, "shape", ()) or ())
        if shape == (_LEGACY_DIM,):
            return LEGACY_OBS_FIELDS
        if shape == (OBS_DIM,):
            return observation_fields()
        raise ValueError(f"observation_space must be the views' Box of shape ({OBS_DIM},) (or "
                         f"({_LEGACY_DIM},), a model saved before obs_fields), got "
                         f"{observation_space}")
    if isinstance(obs_fields, str) or not all(isinstance(n, str) for n in obs_fields):
        raise ValueError(f"obs_fields must be a sequence of field names, got {obs_fields!r}")
    names = tuple(obs_fields)
    unknown = [n for n in names if n not in OBS]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"obs_fields must name distinct fields of rules.OBSERVATION, got "
                         f"{list(names)} (unknown: {unknown}); the fields: {list(OBS)}")
    return names


def _columns(obs_fields: tuple[str, ...], extra: int) -> np.ndarray:
    """(n,) intp: the columns of ``model_input``'s output the network reads, fields then extras."""
    cols = [np.arange(OBS[n].start, OBS[n].stop) for n in obs_fields]
    return np.concatenate(cols + [OBS_DIM + np.arange(extra)]).astype(np.intp)

#: Saved attributes of an SB3 model that only a running training needs (and that SB3 pickles):
#: the last rollout's observations and the episode buffers. Without them a resumed run resets
#: its environment, as it must (the games of the saved run are gone).
TRAINING_ONLY = ["_last_obs", "_last_original_obs", "_last_episode_starts", "ep_info_buffer",
                 "ep_success_buffer"]

#: The modules a pickle inside a model file may name (classes, by name): nothing of NumPy.
PORTABLE_MODULES = ("agents.", "gymnasium.spaces.", "sb3_contrib.", "stable_baselines3.",
                    "torch.nn.", "torch.optim.")


def _options(mask_wait, obs_mask, racer_features, rules: dict) -> dict:
    """The model's options: the input options, then the rule options (``RULE_OPTIONS``' keys).

    Raises:
        ValueError: a rule option that is not one of ``RULE_OPTIONS``, or a value not a bool.
    """
    unknown = sorted(set(rules) - set(RULE_OPTIONS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; the rule options: {sorted(RULE_OPTIONS)}")
    options = {"mask_wait": mask_wait, "obs_mask": obs_mask, "racer_features": racer_features,
               **RULE_OPTIONS, **rules}
    for name, value in options.items():
        check_bool(name, value)
    return options


def _rules(options: dict) -> dict:
    """The rule options among a model's ``options``: ``observed_masks``' keyword arguments."""
    return {name: options[name] for name in RULE_OPTIONS}


class SpitFeatures(BaseFeaturesExtractor):
    """The network's input, from the observation alone (``agents.network.model_input``).

    ``forward(observations (B, D) float32 tensor) -> (B, features_dim) float32``: the fields
    ``obs_fields`` of the observation, then (``obs_mask``) the playing mask as 0/1 floats, then
    (``racer_features``) the racer's reading of each legal play; the mask is the one the
    observation shows under the declared rules (``spit_env.observation.observed_masks``). No
    weights, no gradient: computed in NumPy.

    Args:
        observation_space: ``Box(0, 1, (D,), float32)``, the views' observation space (or the
            one a model file was saved with).
        mask_wait, obs_mask, racer_features: the model's input options (module docstring).
        obs_fields: the names of the observation fields the network reads, in this order; None:
            those ``observation_space`` implies (:func:`_obs_fields`).
        **rules: the rule options the mask is read under (``spit_env.observation.RULE_OPTIONS``:
            ``auto_flip``, ``wrap_ranks``; those not given at their defaults).

    Raises:
        ValueError: another observation space, a bad ``obs_fields``, an unknown option or one
            that is not a bool.
    """

    def __init__(self, observation_space, mask_wait: bool = True, obs_mask: bool = True,
                 racer_features: bool = True, obs_fields=None, **rules):
        if not isinstance(observation_space, spaces.Box):
            raise ValueError(f"observation_space must be the views' Box of shape ({OBS_DIM},), "
                             f"got {observation_space}")
        self.options = _options(mask_wait, obs_mask, racer_features, rules)
        self.obs_fields = _obs_fields(observation_space, obs_fields)
        self.columns = _columns(self.obs_fields, input_size(self.options) - OBS_DIM)
        super().__init__(_observation_box(), features_dim=int(self.columns.size))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        """(B, features_dim) float32 inputs of the network (class docstring)."""
        obs = observations.detach().cpu().numpy().astype(np.float32, copy=False)
        masks = observed_masks(obs, **_rules(self.options))
        inputs, _ = model_input(obs, masks, self.options)
        return torch.as_tensor(inputs.take(self.columns, axis=1), device=observations.device)


def _observation_box() -> spaces.Box:
    """The views' observation space, ``Box(0, 1, (D,), float32)``."""
    return spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32)


class SpitPolicy(MaskableActorCriticPolicy):
    """sb3-contrib's masked actor-critic on :class:`SpitFeatures`, with the ``mask_wait`` rule.

    Every argument of ``MaskableActorCriticPolicy`` (``net_arch``, ``activation_fn``, ...) but the
    features extractor, which is :class:`SpitFeatures` with this policy's options. The masks
    given to ``forward``, ``get_distribution`` (so ``predict``) and ``evaluate_actions`` are the
    env's legal moves; with ``mask_wait`` the policy takes WAIT out of every row that has another
    legal move, in play and in the loss alike. Given no mask, it uses the one the observation
    shows (``spit_env.observation.observed_masks``), so ``model.predict(obs)`` plays legal
    moves too.

    Args:
        observation_space, action_space, lr_schedule: as SB3 passes them.
        mask_wait, obs_mask, racer_features: the input options
            (``agents.network.INPUT_OPTIONS``); on by default, as ``experiments.train_ppo``
            trains.
        obs_fields: the observation fields the network reads (:class:`SpitFeatures`); None:
            every field, or :data:`LEGACY_OBS_FIELDS` for a file saved before the option. The
            policy takes the views' full observation either way.
        **kwargs: the rule options the mask is read under (``auto_flip``, ``wrap_ranks``: the
            keys of ``spit_env.observation.RULE_OPTIONS``, ``SpitConfig``'s fields; at their
            defaults when not given), and ``MaskableActorCriticPolicy``'s other arguments.

    Raises:
        ValueError: a ``features_extractor_class`` or ``features_extractor_kwargs`` given, an
            option that is not a bool, a bad ``obs_fields``, another observation space or not
            23 actions.
    """

    def __init__(self, observation_space, action_space, lr_schedule, *, mask_wait: bool = True,
                 obs_mask: bool = True, racer_features: bool = True, obs_fields=None,
                 **kwargs):
        for name in ("features_extractor_class", "features_extractor_kwargs"):
            if name in kwargs:
                raise ValueError(f"{name}: SpitPolicy's features extractor is SpitFeatures; "
                                 f"pass its options (mask_wait, obs_mask, ...) instead")
        if getattr(action_space, "n", None) != N_ACTIONS:
            raise ValueError(f"action_space must be Discrete({N_ACTIONS}), got {action_space}")
        rules = {name: kwargs.pop(name) for name in RULE_OPTIONS if name in kwargs}
        self.spit_options = _options(mask_wait, obs_mask, racer_features, rules)
        #: the observation fields the network reads, by name (saved with the model)
        self.obs_fields = _obs_fields(observation_space, obs_fields)
        super().__init__(_observation_box(), action_space, lr_schedule,
                         features_extractor_class=SpitFeatures,
                         features_extractor_kwargs={**self.spit_options,
                                                    "obs_fields": self.obs_fields}, **kwargs)

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        del data["features_extractor_class"], data["features_extractor_kwargs"]
        return {**data, **self.spit_options, "obs_fields": list(self.obs_fields)}

    def playing_masks(self, obs, action_masks) -> torch.Tensor:
        """(B, 23) bool tensor: the moves the policy chooses among (class docstring).

        Args:
            obs: (B, D) float32 tensor of observations.
            action_masks: (B, 23) (or (23,) for one observation) bool or 0/1 masks, numpy or
                torch; None: the mask the observation shows.
        """
        if action_masks is None:
            found = observed_masks(obs.detach().cpu().numpy(), **_rules(self.spit_options))
            masks = torch.as_tensor(found, device=obs.device)
        else:
            masks = torch.as_tensor(action_masks, device=obs.device).to(torch.bool)
            masks = masks.reshape(-1, N_ACTIONS).clone()
        if self.spit_options["mask_wait"]:
            masks[:, WAIT] &= ~masks[:, WAIT + 1:].any(dim=1)
        return masks

    def forward(self, obs, deterministic: bool = False, action_masks=None):
        """SB3's forward pass (actions, values, log-probabilities) over the playing masks."""
        return super().forward(obs, deterministic, self.playing_masks(obs, action_masks))

    def get_distribution(self, obs, action_masks=None):
        """The action distribution over the playing masks (``predict`` goes through here)."""
        return super().get_distribution(obs, self.playing_masks(obs, action_masks))

    def evaluate_actions(self, obs, actions, action_masks=None):
        """Values, log-probabilities and entropy of ``actions`` over the playing masks."""
        return super().evaluate_actions(obs, actions, self.playing_masks(obs, action_masks))


def new_model(env, *, net_arch=(256, 256), options: dict | None = None, obs_fields=None,
              **ppo_kwargs):
    """A fresh MaskablePPO model of the package's format (:class:`SpitPolicy`) on ``env``.

    Args:
        env: a VecEnv or Gymnasium env of the package (``SpitVecEnv``, ``Spit-v0``): the plain
            observation and the legal masks.
        net_arch: the hidden layer sizes of the policy and value networks (each its own).
        options: keys of ``agents.network.INPUT_OPTIONS`` and
            ``spit_env.observation.RULE_OPTIONS``; the rule options default to ``env``'s config
            (its ``config`` attribute, ``spit_env.observation.rule_options``) when it has one.
        obs_fields: the observation fields the network reads (names, in order); None: every
            field (:func:`observation_fields`; ``observation_fields(leave_out=...)`` drops some).
        **ppo_kwargs: MaskablePPO's other arguments (``n_steps``, ``seed``, ...).

    Raises:
        ValueError: an unknown option name (the message lists the known ones), a bad
            ``obs_fields``.
    """
    known = {**INPUT_OPTIONS, **RULE_OPTIONS}
    options = dict(options or {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"options: unknown {unknown}; known: {sorted(known)}")
    config = _env_config(env)
    if config is not None:
        options = {**rule_options(config), **options}
    fields = list(_obs_fields(None, observation_fields() if obs_fields is None else obs_fields))
    layers = [int(n) for n in net_arch]
    policy_kwargs = {"net_arch": {"pi": layers, "vf": list(layers)}, **options,
                     "obs_fields": fields}
    return MaskablePPO(SpitPolicy, env, policy_kwargs=policy_kwargs, **ppo_kwargs)


def _env_config(env):
    """The SpitConfig behind ``env`` (through VecEnv and Gymnasium wrappers), or None."""
    for _ in range(20):
        config = getattr(env, "config", None) or getattr(getattr(env, "unwrapped", None),
                                                         "config", None)
        if config is not None:
            return config
        env = getattr(env, "venv", None) or getattr(env, "env", None)
        if env is None:
            return None
    return None


# --- the file -------------------------------------------------------------------------------------
class _Call:
    """Pickles as ``fn(*args)``: a space rebuilt from plain values, not its NumPy arrays."""

    def __init__(self, fn, args: tuple):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def _space_call(space) -> _Call:
    """A :class:`_Call` that rebuilds ``space`` (a uniform Box or a Discrete) from plain values.

    Raises:
        ValueError: another space, or a Box whose bounds differ between entries.
    """
    if isinstance(space, spaces.Discrete):
        n, start = int(space.n), int(space.start)
        return _Call(spaces.Discrete, (n,) if start == 0 else (n, None, start))
    if isinstance(space, spaces.Box):
        low, high = np.unique(space.low), np.unique(space.high)
        if low.size == 1 and high.size == 1:
            return _Call(spaces.Box, (float(low[0]), float(high[0]), tuple(space.shape),
                                      space.dtype.name))
    raise ValueError(f"space {space}: only a Discrete or a Box with one bound for every entry "
                     "can be saved without NumPy objects")


def _constant(schedule, name: str) -> float:
    """The value of a constant SB3 schedule (or a float).

    Raises:
        ValueError: a schedule whose value changes over training (not portable as JSON).
    """
    if not callable(schedule):
        return float(schedule)
    start, end = float(schedule(1.0)), float(schedule(0.0))
    if start != end:
        raise ValueError(f"{name}: a schedule ({start} -> {end}) cannot be saved portably; "
                         "use a constant")
    return start


def _pickled(value) -> dict:
    return {":type:": str(type(value)),
            ":serialized:": base64.b64encode(pickle.dumps(value, protocol=4)).decode()}


def _portable_data(data: dict, model) -> dict:
    """SB3's ``data`` entry with every version-bound pickle replaced or left out.

    Raises:
        ValueError: an entry that cannot be stored without a version-bound pickle.
    """
    out = {}
    for key, value in data.items():
        if not (isinstance(value, dict) and ":serialized:" in value):
            out[key] = value
        elif key == "policy_class":
            out[key] = _pickled(model.policy_class)
        elif key in ("observation_space", "action_space"):
            out[key] = _pickled(_space_call(getattr(model, key)))
        elif key in ("clip_range", "clip_range_vf", "learning_rate"):
            out[key] = _constant(getattr(model, key), key)  # SB3 rebuilds the schedule
        elif key in ("lr_schedule", "rollout_buffer_class"):
            continue  # rebuilt on load: from learning_rate / the observation space
        elif key == "policy_kwargs":
            out[key] = _pickled(dict(model.policy_kwargs))  # classes by name (activation_fn)
        else:
            raise ValueError(f"the model's {key!r} is a pickled object ({value.get(':type:')}) "
                             "that a portable model file cannot hold")
    return out


def _torch_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def save_model(model, path, *, half: bool = False, training_state: bool = True) -> int:
    """Write ``model`` (MaskablePPO) as a portable SB3 zip (module docstring); returns its bytes.

    ``MaskablePPO.load(path)`` and ``agents.make("network", path=path)`` read it; the folders are
    made as needed.

    Args:
        model: the model to save (any policy class importable by name).
        path: the file to write (``.zip`` is not appended).
        half: store the weights as float16 (half the file; loaded back as float32).
        training_state: keep Adam's moment estimates (what ``--resume`` continues from); without
            them the optimizer keeps its settings and starts afresh.

    Raises:
        ValueError: the model holds something only a version-bound pickle can store (a
            changing schedule, a space with per-entry bounds, ...); nothing is written then.
    """
    check_bool("half", half)
    check_bool("training_state", training_state)
    buffer = io.BytesIO()
    model.save(buffer, exclude=TRAINING_ONLY)
    with zipfile.ZipFile(buffer) as src:
        entries = {name: src.read(name) for name in src.namelist()}
    data = _portable_data(json.loads(entries["data"]), model)
    entries["data"] = json.dumps(data, indent=4).encode()
    if half:
        entries["policy.pth"] = _torch_bytes(
            {k: v.half() if v.is_floating_point() else v
             for k, v in model.policy.state_dict().items()})
    if not training_state:
        groups = model.policy.optimizer.state_dict()["param_groups"]
        entries["policy.optimizer.pth"] = _torch_bytes({"state": {}, "param_groups": groups})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as dst:
        for name, blob in entries.items():  # a fixed date: the same model, the same bytes
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            dst.writestr(info, blob, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return path.stat().st_size


def pickled_names(path) -> dict[str, list[str]]:
    """What the pickles in a model file's ``data`` refer to: ``{entry: ["module.name", ...]}``.

    A portable file (:func:`save_model`) names only classes of :data:`PORTABLE_MODULES`; a file
    saved by SB3 itself also names NumPy's internals (``numpy._core.numeric`` and the like), which
    do not exist under other NumPy versions.
    """
    with zipfile.ZipFile(path) as z:
        data = json.loads(z.read("data"))
    found = {}
    for key, value in data.items():
        if isinstance(value, dict) and ":serialized:" in value:
            found[key] = _globals(base64.b64decode(value[":serialized:"]))
    return found


class _Stub:
    """Stands for any class a pickle names, so that reading it imports nothing."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


class _NameReader(pickle.Unpickler):
    def __init__(self, blob: bytes):
        super().__init__(io.BytesIO(blob))
        self.names: list[str] = []

    def find_class(self, module, name):
        self.names.append(f"{module}.{name}")
        return type(name, (_Stub,), {})


def _globals(blob: bytes) -> list[str]:
    reader = _NameReader(blob)
    try:
        reader.load()
    except Exception:  # noqa: BLE001 - a pickle the stubs cannot rebuild: the names read so far
        pass
    return reader.names


def from_legacy(model):
    """A model of the older file format as a model of this one, the same weights and moves.

    The older format (``train_ppo`` before :class:`SpitPolicy`): SB3's ``MlpPolicy`` on the
    network's input itself (D + 23 + 40 floats, D the observation of its time: the 241 floats of
    :data:`LEGACY_OBS_FIELDS` or today's), computed outside the model by a VecEnv wrapper, with
    the input options in a ``spit_options`` attribute. The layers are the same
    (``FlattenExtractor`` and :class:`SpitFeatures` hold no weights), so the state dicts carry
    over as they are, Adam's state too; the rules are the defaults the older training used.

    Raises:
        ValueError: ``model`` is not of the older format (no ``spit_options``, or a network
            input that does not match them).
    """
    from spit_env.envs.vec import SpitVecEnv

    old = {**INPUT_OPTIONS, **(getattr(model, "spit_options", None) or {})}
    if getattr(model, "spit_options", None) is None or isinstance(model.policy, SpitPolicy):
        raise ValueError("model: not a model of the older format (it has no spit_options "
                         "attribute, or is a SpitPolicy model already)")
    # its observation part: the observation of its time, the legacy fields or today's all
    extra = input_size(old) - OBS_DIM
    by_size = {_LEGACY_DIM + extra: LEGACY_OBS_FIELDS, OBS_DIM + extra: observation_fields()}
    fields = by_size.get(tuple(model.observation_space.shape)[0])
    if fields is None or len(model.observation_space.shape) != 1:
        raise ValueError(f"model: its input has shape {model.observation_space.shape}, not one "
                         f"of the {sorted((k,) for k in by_size)} its options {old} make")
    arch = model.policy.net_arch
    env = SpitVecEnv(num_envs=model.n_envs)
    new = MaskablePPO(
        SpitPolicy, env, learning_rate=_constant(model.learning_rate, "learning_rate"),
        n_steps=model.n_steps, batch_size=model.batch_size, n_epochs=model.n_epochs,
        gamma=model.gamma, gae_lambda=model.gae_lambda,
        clip_range=_constant(model.clip_range, "clip_range"), ent_coef=model.ent_coef,
        vf_coef=model.vf_coef, max_grad_norm=model.max_grad_norm, target_kl=model.target_kl,
        seed=model.seed, device="cpu",
        policy_kwargs={"net_arch": {"pi": list(arch["pi"]), "vf": list(arch["vf"])},
                       **{k: bool(old[k]) for k in INPUT_OPTIONS}, **RULE_OPTIONS,
                       "obs_fields": list(fields)})
    env.close()
    new.policy.load_state_dict(model.policy.state_dict())
    new.policy.optimizer.load_state_dict(model.policy.optimizer.state_dict())
    new.num_timesteps = model.num_timesteps
    new._total_timesteps = model._total_timesteps
    new._n_updates = model._n_updates
    return new
