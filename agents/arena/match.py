"""Players and the game loop: two seated policies playing a batch of games on the core.

:class:`Match` is the one loop of the package that plays policies against each other: the
tournament's games (:func:`run_games`), the replay's recorded game, the real-time game's bot and
every evaluation go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from spit_env import core, streams
from spit_env.checks import check_int
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.policy import Policy, apply_profile, call_policy, parse_profile

__all__ = ["Player", "player_error", "Match", "run_games", "Trace"]

#: ``trace(state, row_game_ids)``: called by :meth:`Match.run` after the start and after every
#: step, with ``row_game_ids`` (B,) int64 (-1 for an idle row).
Trace = Callable[[object, np.ndarray], None]


@dataclass(frozen=True)
class Player:
    """A seat's occupant: a registered policy name, its factory kwargs and an optional latency.

    Attributes:
        label: the name shown in tables ("greedy@expert").
        policy: the registered policy name ("greedy").
        latency: the seat latency this player brings (None: keep the config's).
        kwargs: keyword arguments for the policy factory.
    """

    label: str
    policy: str
    latency: Latency | None = None
    kwargs: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str | Player) -> Player:
        """A Player from a name or profile "name@latency".

        A path to a trained model ("runs/x/model.zip", optionally "@latency") is the "ppo"
        policy loaded from it; an RLlib checkpoint folder is the "rllib" policy.

        Raises:
            ValueError: a bad profile (see ``spit_env.policy.parse_profile``).
        """
        if isinstance(spec, Player):
            return spec
        name, latency = parse_profile(spec)
        if name.endswith(".zip"):
            return cls(spec, "ppo", latency, {"path": name})
        from agents.rllib import is_rllib_checkpoint

        if is_rllib_checkpoint(name):  # a checkpoint folder of experiments/train_rllib.py
            return cls(spec, "rllib", latency, {"path": name})
        return cls(spec, name, latency)

    def take_seat(self, config: SpitConfig, seat: int) -> tuple[Policy, SpitConfig]:
        """The player's policy in ``seat`` and the config with the player's latency there.

        Through ``spit_env.policy.apply_profile``, so a bot that models its own latency (the
        racer) believes the seat's latency.

        Raises:
            ValueError: an unknown policy or a bad seat; OSError: an unreadable model file.
        """
        if self.latency is not None:
            pair = list(config.latency)
            pair[seat] = self.latency
            config = config.replace(latency=tuple(pair))
        return apply_profile(self.policy, config, seat, **self.kwargs)


def player_error(spec: str | Player) -> str | None:
    """Why ``spec`` cannot play, or None: for the scripts' argument checks.

    The player's policy is built once (a model file is read): an unknown name, a bad profile, an
    unreadable model or a plug-in that does not import is reported as ``"'spec': why"``.
    """
    try:
        Player.parse(spec).take_seat(SpitConfig(), 0)
    except (ValueError, OSError, ImportError) as err:  # ImportError: a broken bot plug-in
        hint = ""
        if isinstance(spec, str) and spec.partition("@")[0] == "ppo":
            hint = ("; a trained model is given by the path of its file, e.g. "
                    "runs/ppo_greedy/model.zip")
        return f"{spec!r}: {err}{hint}"
    return None


def _check_game_ids(game_ids) -> np.ndarray:
    ids = np.asarray(game_ids, dtype=np.int64).reshape(-1)
    if ids.size and (ids.min() < 0 or np.unique(ids).size != ids.size):
        raise ValueError("game_ids must be distinct non-negative integers")
    return ids


class Match:
    """Two seats' players over a batch of games of the core: the one game loop.

    ``game_ids`` are played in order, up to ``batch_size`` at once; a finished row is re-started
    with the next game id (``core.reset``), so the batch stays full. Each seat's policy sees the
    observations and masks of its seat in the running rows and draws from each game's own
    stream (``spit_env.streams.RowStreams``), keyed by (game, seat, decision index, policy_seed,
    stream): a game's moves depend on its game id and the seeds alone, not on the batch size,
    the other rows or the games before it; and the same game ids with the players swapped replay
    the same deals with the same streams. A busy
    seat's mask allows only WAIT, so its policy submits WAIT.

    Drive it with :meth:`run` (to the end), or step by step: :meth:`moves` for the seated
    policies' moves, :meth:`step` to play an epoch (the caller may change the moves first, or
    play a seat with no player itself, as the real-time game does for its human).

    Args:
        seat0, seat1: Players or player strings; None for a seat whose moves the caller gives
            (it keeps the config's latency).
        game_ids: (N,) distinct non-negative game ids.
        config: the games' config (default SpitConfig()); a player's latency replaces its
            seat's.
        seed: the game seed (deals and all random streams).
        batch_size: games stepped at once, >= 1.
        policy_seed: keys the policies' draws with the game (default: ``seed``).
        policy_stream: >= 0, keys them too: the chunks of a pairing (``GameJob``) draw apart.
        deals: None, or one fixed deal per game id (None | (pack0, pack1), as ``core.init``).

    Attributes:
        config: the games' config, the players' latencies applied.
        policies: the two seated policies (None for a seat the caller plays).
        players: the two Players (or None).
        state: the core state of the B rows (B = min(batch_size, N)).
        results: dict of (N,) arrays in the order of ``game_ids``, filled as games end: see
            :func:`run_games`.
        finished: the number of games that have ended.

    Raises:
        ValueError: a bad batch size, game id list, deals or stream, an unknown policy or a
            bad profile.
    """

    def __init__(self, seat0: Player | str | None, seat1: Player | str | None, game_ids, *,
                 config: SpitConfig | None = None, seed: int = 0, batch_size: int = 256,
                 policy_seed: int | None = None, policy_stream: int = 0, deals=None):
        check_int("batch_size", batch_size, 1)
        check_int("policy_stream", policy_stream, 0)
        ids = _check_game_ids(game_ids)
        if deals is not None and len(deals) != ids.size:
            raise ValueError(f"deals must hold one deal per game id ({ids.size}), got {len(deals)}")
        self.players = [None if p is None else Player.parse(p) for p in (seat0, seat1)]
        config = config or SpitConfig()
        self.policies: list[Policy | None] = [None, None]
        for s, player in enumerate(self.players):
            if player is not None:
                self.policies[s], config = player.take_seat(config, s)
        self.config = config
        self._policy_salt = (int(seed if policy_seed is None else policy_seed), int(policy_stream))
        self.game_ids, self.deals = ids, deals
        n = ids.size
        self.results = {
            "game_id": ids, "winner": np.full(n, -1, np.int8), "truncated": np.zeros(n, bool),
            **{key: np.zeros(n, np.int64) for key in ("steps", "decisions", "rounds", "clock_ms")},
        }
        self.finished = 0
        b = max(1, min(int(batch_size), n))
        # row -> index into ids (-1 idle); game ids are handed out in order as rows free up
        self._slot = np.arange(b, dtype=np.int64) if n else np.full(1, -1, np.int64)
        self._next = min(b, n)
        self._row_steps = np.zeros(b, np.int64)
        first = ids[:b] if n else np.zeros(1, np.int64)
        start_deals = None if deals is None else list(deals[:b])
        if (np.diff(first) == 1).all():  # the usual case: a run of consecutive game ids
            self.state = core.init(config, b, seed, first_game=int(first[0]), deals=start_deals)
        else:
            self.state = core.reset(core.init(config, b, seed), np.ones(b, bool), first,
                                    start_deals)

    @property
    def active(self) -> np.ndarray:
        """(B,) bool: the rows playing one of the match's games."""
        return self._slot >= 0

    @property
    def over(self) -> bool:
        """Every game has ended."""
        return not self.active.any()

    def row_game_ids(self) -> np.ndarray:
        """(B,) int64: the game id each row plays, -1 for an idle row."""
        return np.where(self._slot >= 0, self.game_ids[np.maximum(self._slot, 0)], -1)

    def moves(self, seats: Sequence[int] = (0, 1)) -> np.ndarray:
        """(B, 2) int64: the seated policies' moves in the active rows for ``seats``.

        WAIT (0) elsewhere: idle rows, and seats not asked for or without a player. A planning
        policy also gets the public table of its seat (built only for it).

        Raises:
            ValueError: a policy's illegal or misshapen answer (``call_policy``).
        """
        state = self.state
        actions = np.zeros((state.batch_size, 2), np.int64)
        rows = np.flatnonzero(self.active)
        if rows.size == 0:
            return actions
        obs = core.observe(state)
        masks = core.legal_action_mask(state)
        for s in seats:
            policy = self.policies[s]
            if policy is None:
                continue
            keys = streams.draw(state.key[rows], streams.POLICY, s,
                                state.decisions[rows, s].astype(np.int64))
            rng = streams.RowStreams(streams.draw(keys, streams.POLICY, *self._policy_salt))
            actions[rows, s] = call_policy(
                policy, obs[rows, s], masks[rows, s], rng,
                table=lambda s=s: core.public_table(state, rows, s))
        return actions

    def step(self, actions: np.ndarray | None = None, *, events=False,
             latency_ms: np.ndarray | None = None) -> core.StepOutput:
        """Play one decision epoch of the active rows; score and refill the rows that finished.

        Args:
            actions: (B, 2) int64 moves (default: :meth:`moves` of both seats).
            events: as ``core.step``: True, or a collection of event type names, to get the
                epoch's EventLog.
            latency_ms: as ``core.step``: (B, 2) integer ms from decision to landing, -1 to
                keep the latency draw (D7).

        Returns:
            the core's StepOutput of the epoch. A finished row already holds its next game (if
            any is left) when this returns; the finished game's outcome is in :attr:`results`.
        """
        if actions is None:
            actions = self.moves()
        active = self.active
        self.state, out = core.step(self.state, actions, rows=active, events=events,
                                    latency_ms=latency_ms)
        self._row_steps += active
        done = active & (out.terminated | out.truncated)
        if done.any():
            self._finish(np.flatnonzero(done), out)
        return out

    def _finish(self, d: np.ndarray, out) -> None:
        """Record the games that ended in rows ``d`` and re-start those rows with the next ids."""
        state, res = self.state, self.results
        k = self._slot[d]
        r = out.rewards[d]
        res["winner"][k] = np.where(r[:, 0] > 0, 0, np.where(r[:, 1] > 0, 1, -1))
        res["truncated"][k] = out.truncated[d]
        res["steps"][k] = self._row_steps[d]
        res["decisions"][k] = state.decisions[d].sum(axis=1)
        res["rounds"][k] = state.rounds[d]
        res["clock_ms"][k] = state.clock[d]
        self._row_steps[d] = 0
        self.finished += int(d.size)
        # refill finished rows with the next game ids, in row order
        n = self.game_ids.size
        take = min(d.size, n - self._next)
        refill = d[:take]
        self._slot[d[take:]] = -1
        if take:
            self._slot[refill] = np.arange(self._next, self._next + take)
            self._next += take
            rows = np.zeros(state.batch_size, bool)
            rows[refill] = True
            deals = None
            if self.deals is not None:
                deals = [None] * state.batch_size
                for row in refill:
                    deals[row] = self.deals[self._slot[row]]
            gid = np.where(self._slot >= 0, self.game_ids[np.maximum(self._slot, 0)], 0)
            self.state = core.reset(state, rows, gid, deals)

    def run(self, *, trace: Trace | None = None,
            progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
        """Play every game to its end with the seated policies; returns :attr:`results`.

        Args:
            trace: called as ``trace(state, row_game_ids)`` after the start and after every
                step (after the refill); for tests and replays.
            progress: called with the number of games that just finished.

        Raises:
            ValueError: a seat without a player (its moves must come from the caller).
        """
        if None in self.policies:
            raise ValueError("run() needs a player in both seats; step() a seat the caller plays")
        if self.game_ids.size and trace is not None:
            trace(self.state, self.row_game_ids())
        while not self.over:
            before = self.finished
            self.step()
            if progress is not None and self.finished > before:
                progress(self.finished - before)
            if trace is not None:
                trace(self.state, self.row_game_ids())
        return self.results


def run_games(seat0: Player | str, seat1: Player | str, game_ids: Sequence[int] | np.ndarray, *,
              config: SpitConfig | None = None, seed: int = 0, batch_size: int = 256,
              policy_seed: int | None = None, policy_stream: int = 0, trace: Trace | None = None,
              progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """Play game ids ``game_ids`` of ``seed`` to the end, ``seat0`` in seat 0, ``seat1`` in seat 1.

    :class:`Match` (its arguments) run to the end (:meth:`Match.run`: ``trace``, ``progress``).

    Returns:
        dict of (N,) arrays in the order of ``game_ids``: "game_id" int64, "winner" int8 (seat
        0 / 1, -1 draw or truncation), "truncated" bool, "steps" int64 (core steps, i.e.
        decision epochs, the game took), "decisions" int64 (both players' decisions, D7),
        "rounds" int64 (completed rounds) and "clock_ms" int64 (the game's length in ms).

    Raises:
        ValueError: a bad batch size or game id list, an unknown policy or a bad profile.
    """
    match = Match(seat0, seat1, game_ids, config=config, seed=seed, batch_size=batch_size,
                  policy_seed=policy_seed, policy_stream=policy_stream)
    return match.run(trace=trace, progress=progress)
