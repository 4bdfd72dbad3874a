"""Players and the game loop: seated policies playing a batch of games on the core.

:class:`Match` is the one loop of the package that plays policies against each other: the
tournament's games (:func:`run_games`, one batch for all its pairings), the replay's recorded
game, the real-time game's bot and every evaluation go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from spit_env import core, streams
from spit_env.checks import check_int
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.policy import (
    Policy,
    apply_profile,
    call_policy,
    make_policy,
    parse_profile,
    seat_profile,
)

__all__ = ["Player", "player_error", "Match", "run_games", "Trace"]

#: ``trace(state, row_game_ids)``: called by :meth:`Match.run` after the start and after every
#: step, with ``row_game_ids`` (B,) int64 (-1 for an idle row).
Trace = Callable[[object, np.ndarray], None]


@dataclass(frozen=True)
class Player:
    """A seat's occupant: a registered policy name, its factory kwargs and an optional latency.

    Attributes:
        label: the name shown in tables ("greedy@pro").
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

        The latency is seated by ``spit_env.policy.seat_profile`` and the policy through
        ``spit_env.policy.apply_profile``, so a bot that models its own latency (the racer)
        believes the seat's latency.

        Raises:
            ValueError: an unknown policy or a bad seat; OSError: an unreadable model file.
        """
        _, config = seat_profile(self.policy, config, seat, self.latency)
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
    """Players over a batch of games of the core: the one game loop.

    The games are played in order, up to ``batch_size`` at once; a finished row is re-started
    with the next game (``core.reset``), so the batch stays full. Usually one pairing, two seats'
    players over ``game_ids``; :meth:`of_pairings` puts several pairings (other players, other
    latencies, both seat orders of a duplicate deal) into the one batch, so they share its
    steps, and the longest game of the lot, not of each pairing, sets the run's length.

    Each seated policy is asked once per decision epoch for all the (row, seat) places it holds,
    with the observations and masks of those seats, and draws from each game's own stream
    (``spit_env.streams.RowStreams``), keyed by (game, seat, decision index, policy_seed): a
    game's moves depend on its game id and the seeds alone, not on the batch size, the other
    rows or the games before it; and the same game ids with the players swapped replay the same
    deals with the same streams. A seat whose only legal move is WAIT (a busy seat, D7) WAITs
    without its policy being asked, as in the environments.

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
        deals: None, or one fixed deal per game id (None | (pack0, pack1), as ``core.init``).

    Attributes:
        config: the games' config, the players' latencies applied (of the first pairing).
        policies: the two seated policies (None for a seat the caller plays), of the first
            pairing.
        players: the two Players (or None), of the first pairing.
        state: the core state of the B rows (B = min(batch_size, games); :meth:`run` shrinks
            it to the rows still playing once no game is left to start).
        results: dict of (N,) arrays in the order of ``game_ids``, filled as games end: see
            :func:`run_games` (the first pairing's; ``all_results`` holds every pairing's).
        all_results: one such dict per pairing.
        finished: the number of games that have ended.

    Raises:
        ValueError: a bad batch size, game id list or deals, an unknown policy or a bad
            profile.
    """

    def __init__(self, seat0: Player | str | None, seat1: Player | str | None, game_ids, *,
                 config: SpitConfig | None = None, seed: int = 0, batch_size: int = 256,
                 policy_seed: int | None = None, deals=None):
        ids = _check_game_ids(game_ids)
        if deals is not None and len(deals) != ids.size:
            raise ValueError(f"deals must hold one deal per game id ({ids.size}), got {len(deals)}")
        self._setup([(seat0, seat1, ids)], config, seed, batch_size, policy_seed, deals)

    @classmethod
    def of_pairings(cls, pairings: Sequence[tuple], *, config: SpitConfig | None = None,
                    seed: int = 0, batch_size: int = 256,
                    policy_seed: int | None = None) -> Match:
        """One batch for several pairings: their games in order, pairing after pairing.

        Every game plays exactly as it does in a match of its pairing alone (the module's
        streams), so a pairing's results do not depend on the others in the batch.

        Args:
            pairings: ``(seat0, seat1, game_ids)`` triples, as the constructor's arguments (a
                Player or player string in each seat); the same game ids may recur in other
                pairings (both seat orders of a duplicate deal).
            config: the games' config (default SpitConfig()); a player's latency replaces its
                seat's in its pairing's games.
            seed: the game seed.
            batch_size: games stepped at once, >= 1.
            policy_seed: keys the policies' draws with the game (default: ``seed``).

        Raises:
            ValueError: as the constructor, or no pairing.
        """
        if not pairings:
            raise ValueError("pairings must hold at least one (seat0, seat1, game_ids) triple")
        match = cls.__new__(cls)
        match._setup([(a, b, _check_game_ids(ids)) for a, b, ids in pairings], config, seed,
                     batch_size, policy_seed, None)
        return match

    def _setup(self, pairings, config, seed, batch_size, policy_seed, deals) -> None:
        check_int("batch_size", batch_size, 1)
        base = config or SpitConfig()
        self._policy_seed = int(seed if policy_seed is None else policy_seed)
        self._policy_list: list[Policy] = []
        seated: dict = {}  # (player, seat latency) -> index in _policy_list
        built: dict = {}  # player -> its policy before seating (one model load per player)
        pair_policy = np.full((len(pairings), 2), -1, np.int64)
        configs, players = [], []
        for k, (a, b, _) in enumerate(pairings):
            seats = [None if p is None else Player.parse(p) for p in (a, b)]
            players.append(seats)
            cfg = base
            for s, player in enumerate(seats):
                if player is not None:
                    _, cfg = seat_profile(player.policy, cfg, s, player.latency)
            configs.append(cfg)
            for s, player in enumerate(seats):
                if player is not None:
                    pair_policy[k, s] = self._seat(player, cfg, s, built, seated)
        self._pair_policy = pair_policy
        self.players = players[0]
        self.policies = [None if i < 0 else self._policy_list[i] for i in pair_policy[0]]
        self.config = configs[0]
        # one config for every game (one pairing, the usual case), else per-row latencies
        self._row_latency = None if all(c == configs[0] for c in configs) else \
            [tuple(c.latency) for c in configs]
        state_config = configs[0] if self._row_latency is None else base
        self.deals = deals
        self.all_results = [_blank_results(ids) for _, _, ids in pairings]
        self.results = self.all_results[0]
        self.game_ids = pairings[0][2]
        # the queue of games: pairing after pairing, each pairing's game ids in order
        self._q_pair = np.concatenate([np.full(ids.size, k, np.int64)
                                       for k, (_, _, ids) in enumerate(pairings)])
        self._q_pos = np.concatenate([np.arange(ids.size) for _, _, ids in pairings])
        self._q_game = np.concatenate([ids for _, _, ids in pairings]).astype(np.int64)
        self.finished = 0
        self._ended = np.zeros(0, np.int64)  # the pairings of the games the last step ended
        n = self._q_game.size
        b = max(1, min(int(batch_size), n))
        # row -> index into the queue (-1 idle); games are handed out in order as rows free up
        self._slot = np.arange(b, dtype=np.int64) if n else np.full(1, -1, np.int64)
        self._next = min(b, n)
        self._row_steps = np.zeros(b, np.int64)
        self._row_policy = np.full((b, 2), -1, np.int64)
        first = self._q_game[:b] if n else np.zeros(1, np.int64)
        start_deals = None if deals is None else list(deals[:b])
        latency = None
        if n:
            self._row_policy[:] = pair_policy[self._q_pair[:b]]
            latency = self._latencies(np.arange(b), b)
        if (np.diff(first) == 1).all():  # the usual case: a run of consecutive game ids
            self.state = core.init(state_config, b, seed, first_game=int(first[0]),
                                   deals=start_deals, latency=latency)
        else:
            self.state = core.reset(core.init(state_config, b, seed), np.ones(b, bool), first,
                                    start_deals, latency)

    def _seat(self, player: Player, config: SpitConfig, seat: int, built: dict,
              seated: dict) -> int:
        """The index of ``player``'s policy in ``seat`` of games of ``config`` (shared).

        The policy is built once per player (one model load), and seated through
        ``spit_env.policy.apply_profile``, once per seat latency.
        """
        key = (id(player), config.latency[seat])
        if key not in seated:
            if id(player) not in built:
                built[id(player)] = (player, make_policy(player.policy, **player.kwargs))
            policy, _ = apply_profile(built[id(player)][1], config, seat)
            same = [i for i, p in enumerate(self._policy_list) if p is policy]
            seated[key] = same[0] if same else len(self._policy_list)
            if not same:
                self._policy_list.append(policy)
        return seated[key]

    def _latencies(self, idx: np.ndarray, batch: int):
        """The (batch, 2) latency models of the games starting in rows ``idx`` ((n,) ints).

        None when every game has the one config (one pairing, the usual case).
        """
        if self._row_latency is None:
            return None
        models = np.full((batch, 2), None, dtype=object)
        for row in idx:
            models[row] = self._row_latency[self._q_pair[self._slot[row]]]
        return models

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
        return np.where(self._slot >= 0, self._q_game[np.maximum(self._slot, 0)], -1)

    def moves(self, seats: Sequence[int] = (0, 1)) -> np.ndarray:
        """(B, 2) int64: the seated policies' moves in the active rows for ``seats``.

        WAIT (0) elsewhere: idle rows, seats not asked for or without a player, and seats whose
        only legal move is WAIT (their policy is not asked). A planning policy also gets the
        public table of its seats (built only for it).

        Raises:
            ValueError: a policy's illegal or misshapen answer (``call_policy``).
        """
        state = self.state
        actions = np.zeros((state.batch_size, 2), np.int64)
        playing = np.flatnonzero(self.active)
        pol = self._row_policy[playing]
        parts = [(playing[pol[:, s] >= 0], s) for s in seats]
        idx = np.concatenate([r for r, _ in parts])
        if idx.size == 0:
            return actions
        seat = np.concatenate([np.full(r.size, s, np.int64) for r, s in parts])
        masks = core.legal_action_mask(state, idx, seat)
        # WAIT the only legal move (a busy seat, D7): it waits, no policy is asked (as in the
        # environments); a policy's draws are keyed by the decision index, so skipping changes
        # none of its later choices
        choice = masks[:, 1:].any(axis=1)
        if not choice.all():
            idx, seat, masks = idx[choice], seat[choice], masks[choice]
            if idx.size == 0:
                return actions
        obs = core.observe(state, idx, seat)
        keys = streams.draw(streams.draw(state.key[idx], streams.POLICY, seat,
                                         state.decisions[idx, seat].astype(np.int64)),
                            streams.POLICY, self._policy_seed, 0)
        which = self._row_policy[idx, seat]
        for k in np.unique(which):
            sel = which == k
            j = slice(None) if sel.all() else np.flatnonzero(sel)  # all of them: no copies
            actions[idx[j], seat[j]] = call_policy(
                self._policy_list[k], obs[j], masks[j], streams.RowStreams(keys[j]),
                table=lambda j=j: core.public_table(state, idx[j], seat[j]))
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
        self._ended = np.zeros(0, np.int64)
        if done.any():
            self._finish(np.flatnonzero(done), out)
        return out

    def _finish(self, d: np.ndarray, out) -> None:
        """Record the games that ended in rows ``d`` and re-start those rows with the next ones."""
        state = self.state
        k = self._slot[d]
        r = out.rewards[d]
        winner = np.where(r[:, 0] > 0, 0, np.where(r[:, 1] > 0, 1, -1))
        decisions = state.decisions[d].sum(axis=1)
        pair, pos = self._q_pair[k], self._q_pos[k]
        for p in np.unique(pair):
            sel = pair == p
            res, at = self.all_results[p], pos[sel]
            res["winner"][at] = winner[sel]
            res["truncated"][at] = out.truncated[d[sel]]
            res["steps"][at] = self._row_steps[d[sel]]
            res["decisions"][at] = decisions[sel]
            res["rounds"][at] = state.rounds[d[sel]]
            res["clock_ms"][at] = state.clock[d[sel]]
        self._ended = pair
        self._row_steps[d] = 0
        self.finished += int(d.size)
        # refill finished rows with the next games, in row order
        n = self._q_game.size
        take = min(d.size, n - self._next)
        refill = d[:take]
        self._slot[d[take:]] = -1
        self._row_policy[d[take:]] = -1
        if take:
            self._slot[refill] = np.arange(self._next, self._next + take)
            self._next += take
            self._row_policy[refill] = self._pair_policy[self._q_pair[self._slot[refill]]]
            rows = np.zeros(state.batch_size, bool)
            rows[refill] = True
            deals = None
            if self.deals is not None:
                deals = [None] * state.batch_size
                for row in refill:
                    deals[row] = self.deals[self._q_pos[self._slot[row]]]
            gid = np.where(self._slot >= 0, self._q_game[np.maximum(self._slot, 0)], 0)
            self.state = core.reset(state, rows, gid, deals,
                                    self._latencies(refill, state.batch_size))

    def _shrink(self) -> None:
        """Keep only the rows still playing (no game is left to start): later steps cost less."""
        keep = np.flatnonzero(self.active)
        self.state = core.copy_rows(self.state, keep)
        self._slot = self._slot[keep]
        self._row_steps = self._row_steps[keep]
        self._row_policy = self._row_policy[keep]

    def run(self, *, trace: Trace | None = None, progress: Callable[[int], None] | None = None,
            report: Callable[[int, int], None] | None = None) -> dict[str, np.ndarray]:
        """Play every game to its end with the seated policies; returns :attr:`results`.

        Once every game has started, the batch shrinks to the rows still playing whenever
        they are half of it or fewer, so the last long games do not drag the finished rows
        along (the games play the same: each row is stepped on its own).

        Args:
            trace: called as ``trace(state, row_game_ids)`` after the start and after every
                step (after the refill and any shrinking); for tests and replays.
            progress: called with the number of games that just finished.
            report: called as ``report(pairing, n)``: n more games of that pairing (its index
                in :meth:`of_pairings`' list; 0 for the one pairing) just finished.

        Raises:
            ValueError: a seat without a player (its moves must come from the caller).
        """
        if (self._pair_policy < 0).any():
            raise ValueError("run() needs a player in both seats; step() a seat the caller plays")
        if self._q_game.size and trace is not None:
            trace(self.state, self.row_game_ids())
        while not self.over:
            before = self.finished
            self.step()
            if self.finished > before:
                if progress is not None:
                    progress(self.finished - before)
                if report is not None:
                    for p, count in zip(*np.unique(self._ended, return_counts=True), strict=True):
                        report(int(p), int(count))
                active = self.active
                b = active.size
                if self._next >= self._q_game.size and b > 1 and 0 < 2 * active.sum() <= b:
                    self._shrink()
            if trace is not None:
                trace(self.state, self.row_game_ids())
        return self.results


def _blank_results(ids: np.ndarray) -> dict[str, np.ndarray]:
    n = ids.size
    return {"game_id": ids, "winner": np.full(n, -1, np.int8), "truncated": np.zeros(n, bool),
            **{key: np.zeros(n, np.int64) for key in ("steps", "decisions", "rounds", "clock_ms")}}


def run_games(seat0: Player | str, seat1: Player | str, game_ids: Sequence[int] | np.ndarray, *,
              config: SpitConfig | None = None, seed: int = 0, batch_size: int = 256,
              policy_seed: int | None = None, trace: Trace | None = None,
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
                  policy_seed=policy_seed)
    return match.run(trace=trace, progress=progress)
