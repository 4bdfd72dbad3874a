"""A learned value of a position, for the planner's rollouts that stop at their horizon.

:class:`ValueNetwork` is ``V(observation) -> value``: a small multilayer perceptron (ReLU) that
estimates, from one seat's observation, what a racer-versus-racer rollout stopped there would
have found had it played on (``experiments.value``: its data, its targets - some seconds
further on, the end of the round, the end of the game - and its training), in the planner's
units (the card difference over 52 plus ``win_weight`` for a game won, ``agents.planner``) and
from the observing seat. A *residual* network (the shipped one) adds its output to the card
difference the observation shows (``opp_cards_held - self_cards_held``): it learns the change
to come, which the planner's comparisons of near-equal moves need to be precise, not the
present, which the observation gives exactly. It runs in NumPy (float32, no torch),
so the planner calls it on thousands of rollout leaves at once at a few microseconds each::

    from agents.planner import PlannerBot
    from agents.value import load_value

    planner = PlannerBot(rollouts=16, horizon_ms=1000, leaf_value=load_value())  # the shipped one
    agents.make("planner", leaf_value="value")                # the same, by name
    agents.make("planner", leaf_value="runs/value/value.npz")  # a file of train_value

**The file** (:meth:`ValueNetwork.save`, :func:`load_value`): an ``.npz`` with the layers'
weights and biases, the input scaling, and a JSON ``meta`` entry: the format and version, the
observation layout it reads (every field's name and width, ``spit_env.rules.OBSERVATION``), the
target, the win weight, and how it was made (command, commit, held-out figures). A file whose
observation layout differs from this package's is refused in one line naming both widths.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from spit_env import rules

__all__ = ["ValueNetwork", "load_value", "shipped_value_path", "ValueFileError", "VALUE_NAME",
           "observation_layout", "card_difference"]

#: the ``leaf_value`` name of the shipped value network (``agents.make("planner", leaf_value=...)``)
VALUE_NAME = "value"
_FORMAT = "spit-env value network"
_VERSION = 1
_ENTRY_TIME = (1980, 1, 1, 0, 0, 0)  # every zip entry's time: equal contents, equal bytes


class ValueFileError(ValueError):
    """A file that is not a value network this package reads (the message says why)."""


def shipped_value_path() -> Path:
    """The value network shipped with the package (``agents/models/value.npz``)."""
    return Path(__file__).resolve().parent / "models" / "value.npz"


_SELF_HELD = rules.OBS["self_cards_held"].start
_OPP_HELD = rules.OBS["opp_cards_held"].start


def card_difference(obs: np.ndarray) -> np.ndarray:
    """(n,) float64 the card difference the observations show, in the planner's units.

    ``obs``: (n, D) float32; the difference is ``opp_cards_held - self_cards_held`` (stock and
    spit cards held, over 52), the planner's value of a rollout that stops there, less the score
    difference of the points variant (D15).
    """
    return obs[:, _OPP_HELD].astype(np.float64) - obs[:, _SELF_HELD]


def observation_layout() -> list[list]:
    """[[field name, width], ...] of this package's observation (``rules.OBSERVATION``)."""
    return [[f.name, int(f.stop - f.start)] for f in rules.OBSERVATION]


class ValueNetwork:
    """``V(obs (n, D) float32) -> (n,) float64``: a ReLU perceptron in NumPy (module docstring).

    Args:
        weights: the layers' weight matrices, float32, shapes (D, h1), (h1, h2), ..., (hk, 1).
        biases: the layers' biases, float32, shapes (h1,), ..., (1,).
        mean, scale: (D,) float32: the input is ``(obs - mean) * scale`` before the first layer.
        meta: the file's description (``target``, ``win_weight``, ``command``, ...);
            ``meta["residual"]`` true: the value is the card difference the observation shows
            plus the network's output.

    Raises:
        ValueError: shapes that do not chain, or an input width other than ``rules.OBS_DIM``.
    """

    def __init__(self, weights, biases, mean, scale, meta: dict | None = None):
        self.weights = [np.ascontiguousarray(w, np.float32) for w in weights]
        self.biases = [np.ascontiguousarray(b, np.float32).reshape(-1) for b in biases]
        self.mean = np.asarray(mean, np.float32).reshape(-1)
        self.scale = np.asarray(scale, np.float32).reshape(-1)
        self.meta = dict(meta or {})
        self.residual = bool(self.meta.get("residual", False))
        if not self.weights or len(self.weights) != len(self.biases):
            raise ValueError("a value network needs one bias per weight matrix, at least one")
        width = rules.OBS_DIM
        if self.weights[0].shape[0] != width or self.mean.shape != (width,) \
                or self.scale.shape != (width,):
            raise ValueError(f"a value network reads observations of width {width} "
                             f"(rules.OBS_DIM), got an input layer of "
                             f"{self.weights[0].shape[0]}")
        for w, b in zip(self.weights, self.biases, strict=True):
            if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
                raise ValueError(f"layer shapes do not chain: {w.shape} after width {width}, "
                                 f"bias {b.shape}")
            width = w.shape[1]
        if width != 1:
            raise ValueError(f"the last layer must have one output, got {width}")
        # the input scaling folded into the first layer: one matrix product less per call
        w0 = self.weights[0] * self.scale[:, None]
        self._w0 = np.ascontiguousarray(w0, np.float32)
        self._b0 = (self.biases[0] - self.mean @ w0).astype(np.float32)

    @property
    def hidden(self) -> tuple[int, ...]:
        """The hidden layers' widths."""
        return tuple(int(w.shape[1]) for w in self.weights[:-1])

    def __call__(self, obs) -> np.ndarray:
        """(n,) float64 values of observations ``obs`` from the observing seat.

        ``obs``: (n, D) float32, layout ``rules.OBSERVATION``; the values are in the planner's
        units.

        Raises:
            ValueError: observations of another shape.
        """
        x = np.asarray(obs, np.float32)
        if x.ndim != 2 or x.shape[1] != rules.OBS_DIM:
            raise ValueError(f"observations must have shape (n, {rules.OBS_DIM}), got {x.shape}")
        h = x @ self._w0
        h += self._b0
        for w, b in zip(self.weights[1:], self.biases[1:], strict=True):
            np.maximum(h, 0.0, out=h)
            h = h @ w
            h += b
        value = h[:, 0].astype(np.float64)
        if self.residual:
            value += card_difference(x)
        return value

    def __repr__(self) -> str:
        where = self.meta.get("path")
        return (f"ValueNetwork(hidden={list(self.hidden)}, target={self.meta.get('target')!r}, "
                f"residual={self.residual}" + (f", path={where!r})" if where else ")"))

    def save(self, path) -> Path:
        """Write the network to ``path`` (.npz; equal networks give equal bytes)."""
        path = Path(path)
        meta = {k: v for k, v in self.meta.items() if k != "path"}
        meta.update(format=_FORMAT, version=_VERSION, observation=observation_layout(),
                    hidden=list(self.hidden))
        arrays = {"mean": self.mean, "scale": self.scale,
                  **{f"w{i}": w for i, w in enumerate(self.weights)},
                  **{f"b{i}": b for i, b in enumerate(self.biases)}}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, arr in arrays.items():
                buf = io.BytesIO()
                np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
                zf.writestr(zipfile.ZipInfo(f"{name}.npy", _ENTRY_TIME), buf.getvalue())
            zf.writestr(zipfile.ZipInfo("meta.npy", _ENTRY_TIME), _npy_text(json.dumps(meta)))
        tmp.replace(path)
        return path


def _npy_text(text: str) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array(text), allow_pickle=False)
    return buf.getvalue()


def load_value(path=None) -> ValueNetwork:
    """The value network in ``path`` (None or ``"value"``: the shipped one).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueFileError: not a value network file, another format version, or an observation
            layout other than this package's (the message names the first difference).
    """
    if path is None or (isinstance(path, str) and path == VALUE_NAME):
        path = shipped_value_path()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no value network file at {str(path)!r}")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise ValueFileError(f"{path}: not a value network file ({err})") from None
    if "meta" not in arrays:
        raise ValueFileError(f"{path}: not a value network file (no meta entry)")
    meta = json.loads(str(arrays["meta"]))
    if meta.get("format") != _FORMAT:
        raise ValueFileError(f"{path}: not a value network file (format "
                             f"{meta.get('format')!r})")
    if meta.get("version") != _VERSION:
        raise ValueFileError(f"{path}: value network format version {meta.get('version')}, "
                             f"this package reads version {_VERSION}")
    _check_layout(path, meta.get("observation") or [])
    n = len([k for k in arrays if k.startswith("w")])
    net = ValueNetwork([arrays[f"w{i}"] for i in range(n)], [arrays[f"b{i}"] for i in range(n)],
                       arrays["mean"], arrays["scale"], meta)
    net.meta["path"] = str(path)
    return net


def _check_layout(path: Path, layout: list) -> None:
    """ValueFileError unless ``layout`` is this package's observation layout."""
    ours = observation_layout()
    if [list(x) for x in layout] == ours:
        return
    width = sum(int(w) for _, w in layout)
    theirs = {name: int(w) for name, w in layout}
    diff = next(([n, w] for n, w in ours if theirs.get(n) != w),
                next(([n, w] for n, w in layout if [n, int(w)] not in ours), None))
    raise ValueFileError(f"{path}: a value network of observations of width {width}, this "
                         f"package's are {rules.OBS_DIM} (first difference: field "
                         f"{diff[0] if diff else '?'!r}): train it again with "
                         "python -m experiments.train_value")
