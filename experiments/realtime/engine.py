"""A game of Spit on the core against a bot, run against a wall clock.

The engine of the real-time game (``experiments/play.py``), without any user interface: the
terminal game (``tui``) and the browser game (``web``) are two front ends over it, and tests drive
it with a clock of their own (every method takes the wall time as an argument).

**Time.** Game time runs with the wall clock: ``game_ms = wall_ms - offset``, from
:meth:`RealtimeGame.start` on (before it, nothing runs); a pause stops game time and a resume
moves the offset by the time paused. The core's state of a game is shown once game time has
reached its ``clock_ms``, so everything lands when it should.

**The human's seat.** Its latency is ``Latency.fixed(motor_ms)``: a move lands ``motor_ms`` after
the human *decides*, and the human decides by pressing a key, so the real reaction time is the
time before the key press. While the human has not pressed anything it WAITs, with
``wait_ms = tick_ms``: it gets a new decision every ``tick_ms``, and a key pressed at game time k
is played at the first decision at or after k (``tick_ms`` late at most) with the latency that
makes it land at k + ``motor_ms`` (k rounded up to whole ms; ``core.step(latency_ms=...)``): the
hand moved from the key press on. (With ``tick_ms`` >= ``motor_ms`` a move decided late lands 1 ms
after its decision at the earliest.) A key for a move that is not legal when pressed is refused,
and one that is no longer legal when its decision comes is dropped (with a message either way).
A key pressed while the hand is busy (a move in flight) is refused: one hand, one card at a time
(D7).

**A compulsory move.** When the core offers the free human no WAIT (the compulsory slap, D11), the
human's move is decided at that very clock, but the human cannot have pressed its key yet. The
game keeps running while it waits for the key (at most ``slap_timeout_ms`` of wall time; after
that the human's move is sent as WAIT, which the core turns into a slap of the smaller pile), then
steps the core at the slap's clock with the human's real time as its latency
(``core.step(latency_ms=...)``: the time to the key press + ``motor_ms``). So the bot's slap,
decided at the same clock with its own latency, wins the race exactly when it lands before the
human's key press + motor time, as at a real table.

**The bot** decides the moment it is free, from the core's observation, and its moves land after
its own latency (its profile's, or ``config.latency`` of its seat), as in every other game: the
game is a ``agents.arena.Match`` with the bot seated in it (a racer believes its seat's latency)
and the human's seat left to this engine, which steps the match one epoch ahead of the table
it shows.

**Reaction times.** For each move the human keyed, the reaction is the game time from the last
thing that happened on the table before the key press (any event: a card played, a bounce, a
spit, its own previous move landing...) to the key press, or the wall time held for a compulsory
move. A resume after a pause counts as such an event (the table was hidden while paused).
``reaction + motor_ms`` is the human's latency, comparable to the latency presets (decision to
landing): :func:`person_profile` fits it into the presets' family (``spit_env.Latency.fit``) for
the end screens, and :class:`Sitting` pools the games of one sitting (a rematch) into one profile.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.arena import Match
from spit_env import core, replay, rules
from spit_env.config import SpitConfig
from spit_env.latency import PRESETS, Latency
from spit_env.latency_fit import MIN_SAMPLES
from spit_env.policy import seat_profile
from spit_env.progress import counted
from spit_env.replay.html import card_label

__all__ = ["RealtimeGame", "Reaction", "Sitting", "reaction_summary", "person_profile",
           "owner_name", "reuse_lines", "HUMAN"]

HUMAN = "human"


@dataclass(frozen=True)
class Reaction:
    """One move the human keyed, and the human's reaction time for it (module docstring).

    Attributes:
        action: the move, an egocentric action id 0-22.
        key_ms: game time of the key press, ms.
        stimulus_ms: game time of the last event on the table before it, ms.
        reaction_ms: ``key_ms - stimulus_ms``, or the wall ms the clock was held.
        held: the clock was held for it (a compulsory move, D11).
    """

    action: int
    key_ms: int
    stimulus_ms: int
    reaction_ms: int
    held: bool = False


@dataclass
class _Key:
    action: int
    at_ms: float  # game time of the key press
    stimulus_ms: int
    held_ms: float | None = None  # wall ms the clock was held for it (compulsory move)


class RealtimeGame:
    """One game: a human in ``human_seat`` against ``opponent``, stepped by :meth:`advance`.

    Args:
        opponent: a player string (bot name, profile "racer@club", or a trained model path).
        human_seat: 0 or 1.
        motor_ms: the human's fixed time from decision (key press) to landing, >= 1.
        tick_ms: how often an idle human gets a decision (the game's ``wait_ms``), 1-1000.
        seed, game_id: which game of the core (deal and random streams).
        slap_timeout_ms: the longest wall time the clock is held for a compulsory move, >= 0.
        config: the other rules (default SpitConfig()); latency and ``wait_ms`` are set here.
        deal: an optional fixed deal (pack0, pack1), as ``core.init`` takes.
        start_ms: the wall time (ms) at which game time 0 is, or None: not started until
            :meth:`start`.

    Raises:
        ValueError: a bad opponent, seat or time, naming it.
    """

    def __init__(self, opponent: str = "racer@club", *, human_seat: int = 0, motor_ms: int = 50,
                 tick_ms: int = 25, seed: int = 0, game_id: int = 0, slap_timeout_ms: int = 5000,
                 config: SpitConfig | None = None, deal=None, start_ms: float | None = 0.0):
        if human_seat not in (0, 1) or isinstance(human_seat, bool):
            raise ValueError(f"human_seat must be 0 or 1, got {human_seat!r}")
        for name, value, lo, hi in (("motor_ms", motor_ms, 1, 10_000),
                                    ("tick_ms", tick_ms, 1, 1000),
                                    ("slap_timeout_ms", slap_timeout_ms, 0, 600_000)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or not lo <= value <= hi:
                raise ValueError(
                    f"{name} must be a whole number of ms in {lo}..{hi}, got {value!r}")
        self.human, self.bot = human_seat, 1 - human_seat
        self.motor_ms, self.tick_ms = int(motor_ms), int(tick_ms)
        self.slap_timeout_ms = int(slap_timeout_ms)
        # the human is a player without a policy, its latency kept apart from its name
        _, config = seat_profile(HUMAN, config or SpitConfig(), self.human,
                                 latency=Latency.fixed(self.motor_ms))
        config = config.replace(wait_ms=self.tick_ms)
        # the match library's loop, the human's seat played here (no player in it)
        seats = [None, None]
        seats[self.bot] = opponent
        self.match = Match(*seats, [game_id], config=config, seed=seed, batch_size=1,
                           deals=None if deal is None else [deal])
        self.config = self.match.config
        self.policy = self.match.policies[self.bot]
        self.opponent = self.match.players[self.bot].label
        self.opponent_name = owner_name(self.opponent)  # "racer" of "racer@club": its piles
        self.state = self.match.state.copy()  # the table shown: the match steps ahead of it
        names = [None, None]
        names[self.human] = {"name": HUMAN, "latency": f"{self.motor_ms} ms motor + reaction"}
        names[self.bot] = {"name": self.opponent}
        self.recorder = replay.Recorder(self.state, names, deal=deal)
        self.offset = math.inf if start_ms is None else float(start_ms)
        self._paused_at: float | None = None
        self.keys: list[_Key] = []
        self.reactions: list[Reaction] = []
        self.messages: list[str] = []  # for the interface: refused / dropped keys
        self.last_event_ms = 0
        self.stopped = False
        # (actions, next state, output, keyed move, given latencies) computed at the current clock
        self._pending = None
        self._hold_since: float | None = None

    # --- what the interface reads -----------------------------------------------------------------
    @property
    def snapshot(self) -> dict:
        """The table now (``core.snapshot``)."""
        return self.recorder.last

    @property
    def over(self) -> bool:
        """The game ended (or was stopped)."""
        return self.stopped or self.snapshot["phase"] == "over"

    @property
    def holding(self) -> bool:
        """The game waits for the key of a compulsory move of the human (a slap, D11)."""
        return self._hold_since is not None

    @property
    def started(self) -> bool:
        """:meth:`start` was called (or the game was made with a ``start_ms``)."""
        return self.offset != math.inf

    @property
    def paused(self) -> bool:
        """The game is paused (:meth:`pause`): game time stands still."""
        return self._paused_at is not None

    def game_ms(self, wall_ms: float) -> float:
        """Game time at wall time ``wall_ms``.

        Negative before the start, -inf if not started; while paused, the time of the pause.
        """
        return (wall_ms if self._paused_at is None else self._paused_at) - self.offset

    def human_mask(self) -> np.ndarray:
        """(23,) bool: the human's legal moves now (egocentric ids)."""
        return core.legal_action_mask(self.state)[0, self.human]

    def describe(self, action: int) -> str:
        """A human's move in words, on the table now ("7♥ onto your pile")."""
        kind, s = int(rules.ACTION_KIND[action]), int(rules.ACTION_STOCK[action])
        pile = "your pile" if rules.ACTION_PILE[action] == 0 else f"{self.opponent_name}'s pile"
        place = self.snapshot["stocks"][self.human][s] if s >= 0 else []
        top = card_label(place[-1][0]) if place and place[-1][1] else f"stock {s + 1}"
        if kind == rules.KIND_PLAY:
            return f"{top} onto {pile}"
        if kind == rules.KIND_FILL:
            return f"{top} to an empty place"
        if kind == rules.KIND_FLIP:
            return f"turning up stock {s + 1}"
        if kind == rules.KIND_SLAP:
            return f"slapping {pile}"
        return "waiting"

    def in_flight(self, seat: int) -> dict | None:
        """The move of ``seat`` in flight now, as in a snapshot, or None.

        Includes a move decided at the current clock (the table shown is the state before the
        decisions of its clock; those are in the step computed ahead).

        Returns:
            ``{"action", "card", "lands_ms"}``, or None if the seat's hand is free.
        """
        fl = self.snapshot["in_flight"][seat]
        if fl is not None or self._pending is None:
            return fl
        actions, nxt, out, _, _ = self._pending
        action = int(actions[0, seat])
        after = core.snapshot(nxt, 0)["in_flight"][seat]
        if after is not None:
            return after
        landed = [e for e in out.events.for_row(0) if e["player"] == seat
                  and e["type"] in ("play", "bounce", "fill", "flip", "slap")]
        lands = landed[0]["clock_ms"] if landed else int(nxt.clock[0])
        card = -1
        if rules.ACTION_KIND[action] in (rules.KIND_PLAY, rules.KIND_FILL):
            place = self.snapshot["stocks"][seat][int(rules.ACTION_STOCK[action])]
            card = int(place[-1][0]) if place else -1
        return {"action": action, "card": card, "lands_ms": int(lands)}

    def busy(self) -> bool:
        """The human has a move other than WAIT in flight (decided, not landed)."""
        fl = self.in_flight(self.human)
        return fl is not None and fl["action"] != rules.WAIT

    # --- input ------------------------------------------------------------------------------------
    def press(self, action: int, wall_ms: float) -> str | None:
        """The human chose ``action`` (an egocentric action id) at wall time ``wall_ms``.

        Returns:
            None if it is queued for the human's next decision, else why it was refused.
        """
        action = rules.check_action(action)
        if self.over:
            return "the game is over"
        if self.paused:
            return "the game is paused"
        at = self.game_ms(wall_ms)
        if at < 0:
            return "wait for the start"
        if self.busy():
            return "your hand is busy: one card at a time"
        if not self.human_mask()[action]:
            return f"not possible now: {self.describe(action)}"
        held = None
        if self.holding:  # the decision the human owes since the hold began
            held = wall_ms - self._hold_since
        self.keys.append(_Key(action, at, self.last_event_ms, held))
        return None

    def start(self, wall_ms: float, countdown_ms: float = 0.0) -> None:
        """Start the clock: game time 0 is ``countdown_ms`` after wall time ``wall_ms``.

        Raises:
            ValueError: the game was started already.
        """
        if self.started:
            raise ValueError("the game has started already")
        self.offset = float(wall_ms) + float(countdown_ms)

    def pause(self, wall_ms: float) -> None:
        """Stop game time at wall time ``wall_ms`` (keys are refused until :meth:`resume`).

        Raises:
            ValueError: the game has not started, is over or is paused already.
        """
        if not self.started or self.over or self.paused:
            raise ValueError("only a running game can be paused")
        self._paused_at = float(wall_ms)

    def resume(self, wall_ms: float) -> None:
        """Let game time run again from where it stopped.

        The table coming back counts as an event for the reaction times.

        Raises:
            ValueError: the game is not paused.
        """
        if not self.paused:
            raise ValueError("the game is not paused")
        gap = float(wall_ms) - self._paused_at
        now = self.game_ms(self._paused_at)
        self._paused_at = None
        self.offset += gap
        if self._hold_since is not None:
            self._hold_since += gap
        self.last_event_ms = max(self.last_event_ms, math.ceil(max(now, 0.0)))

    def stop(self) -> None:
        """End the game early (the human quits); the record says it was stopped."""
        self.stopped = True
        self._paused_at = None

    def latencies_ms(self) -> list[int]:
        """The human's latency of each keyed move so far: reaction + ``motor_ms``, ms."""
        return [r.reaction_ms + self.motor_ms for r in self.reactions]

    # --- running ----------------------------------------------------------------------------------
    def _human_action(self, wall_ms: float, clock: int, mask: np.ndarray):
        """The human's move at decision clock ``clock`` (ms), from the keys pressed so far.

        Returns:
            ``(action, key or None, given latency in ms or -1 to draw it)``; None while a
            compulsory move waits for its key.
        """
        while self.keys and self.keys[0].at_ms <= clock:
            key = self.keys.pop(0)
            if mask[key.action]:
                # a later key pressed before this decision is dropped: one hand, one move
                while self.keys and self.keys[0].at_ms <= clock:
                    self.keys.pop(0)
                    self.messages.append("one card at a time: a second key was dropped")
                # the hand moved from the key press on: it lands motor_ms after it
                return key.action, key, max(1, math.ceil(key.at_ms) + self.motor_ms - clock)
            self.messages.append(f"too late: {self.describe(key.action)} is no longer possible")
        if mask[rules.WAIT]:
            return rules.WAIT, None, -1
        # a compulsory move (the slap, D11), decided at ``clock``: it lands after the human's real
        # time to its key + the motor time, while the game runs on
        if self._hold_since is None:
            self._hold_since = wall_ms
        if self.keys:
            key = self.keys.pop(0)
            self.keys.clear()  # one hand, one move
            return key.action, key, max(0, int(round(key.at_ms - clock))) + self.motor_ms
        if wall_ms - self._hold_since < self.slap_timeout_ms:
            return None
        self.messages.append("time is up: the rules slap for you")
        return rules.WAIT, None, max(0, int(round(self.game_ms(wall_ms) - clock))) + self.motor_ms

    def advance(self, wall_ms: float) -> list[dict]:
        """Run the game up to wall time ``wall_ms``.

        Returns:
            the events that happened (dicts, as ``EventLog.for_row``), in order.
        """
        happened: list[dict] = []
        while not self.over and not self.paused and self.started:
            if self._pending is None:
                clock = int(self.snapshot["clock_ms"])
                if self.game_ms(wall_ms) < clock:
                    break
                masks = core.legal_action_mask(self.state)
                actions = np.zeros((1, 2), np.int64)
                given = np.full((1, 2), -1, np.int64)
                keyed = None
                if self.snapshot["in_flight"][self.human] is None:
                    chosen = self._human_action(wall_ms, clock, masks[0, self.human])
                    if chosen is None:
                        break
                    actions[0, self.human], keyed, given[0, self.human] = chosen
                if self.snapshot["in_flight"][self.bot] is None:
                    actions[0, self.bot] = self.match.moves(seats=(self.bot,))[0, self.bot]
                out = self.match.step(actions, events=True, latency_ms=given)
                self._pending = (actions, self.match.state, out, keyed, given)
                if self._hold_since is not None:
                    self._hold_since = None
            actions, nxt, out, keyed, given = self._pending
            if nxt.clock[0] > self.game_ms(wall_ms):
                break
            self._pending = None
            self.state = nxt.copy()
            entry = self.recorder.add(actions[0], nxt, out, latency_ms=given[0])
            if keyed is not None:
                if keyed.held_ms is not None:
                    reaction, held = int(round(keyed.held_ms)), True
                else:
                    reaction, held = int(round(keyed.at_ms - keyed.stimulus_ms)), False
                self.reactions.append(Reaction(keyed.action, int(keyed.at_ms), keyed.stimulus_ms,
                                               max(0, reaction), held))
            if entry["events"]:
                self.last_event_ms = max(self.last_event_ms,
                                         max(e["clock_ms"] for e in entry["events"]))
            happened += entry["events"]
        return happened

    def record(self) -> dict:
        """The replay record of the game so far (``spit_env.replay``)."""
        rec = self.recorder.record()
        rec["players"][self.human]["motor_ms"] = self.motor_ms
        rec["players"][self.human]["reactions_ms"] = [r.reaction_ms for r in self.reactions]
        return rec


def reaction_summary(reactions: Sequence[Reaction], motor_ms: int) -> dict:
    """The human's latency (reaction + motor time, ms) beside the presets.

    Returns:
        dict: ``moves`` (count), ``median_ms``, ``mean_ms``, ``p10_ms``, ``p90_ms`` (None without
        moves), ``presets`` {name: {"median_ms", "mean_ms"}}, ``closest_median`` (the preset
        whose median is nearest the human's median) and ``closest_mean`` (the preset whose mean
        is nearest the human's mean), None without moves. A few slow moves pull the mean up
        far more than the median, so the two can name different presets.
    """
    presets = {}
    for name in PRESETS:
        table = Latency.preset(name).table
        presets[name] = {"median_ms": float(np.median(table)), "mean_ms": float(table.mean())}
    lat = np.array([r.reaction_ms + motor_ms for r in reactions], dtype=float)
    if lat.size == 0:
        return {"moves": 0, "median_ms": None, "mean_ms": None, "p10_ms": None, "p90_ms": None,
                "presets": presets, "closest_median": None, "closest_mean": None}
    median, mean = float(np.median(lat)), float(lat.mean())
    return {"moves": int(lat.size), "median_ms": median, "mean_ms": mean,
            "p10_ms": float(np.percentile(lat, 10)), "p90_ms": float(np.percentile(lat, 90)),
            "presets": presets,
            "closest_median": min(presets, key=lambda n: abs(presets[n]["median_ms"] - median)),
            "closest_mean": min(presets, key=lambda n: abs(presets[n]["mean_ms"] - mean))}


def owner_name(player: str) -> str:
    """The name a player's piles go by: its policy, without the latency.

    "racer" of "racer@club"; the file name of a model path.
    """
    name = player.partition("@")[0]
    return Path(name).name if "/" in name or "\\" in name else name


def _closeness(a: Latency, b: Latency) -> float:
    """The largest gap between two models' distribution functions (as the core draws them)."""
    grid = np.union1d(a.table, b.table)
    fa = np.searchsorted(a.table, grid, side="right") / a.table.size
    fb = np.searchsorted(b.table, grid, side="right") / b.table.size
    return float(np.abs(fa - fb).max())


def person_profile(latencies_ms: Sequence[float], points: int = 240) -> dict:
    """A person's latencies fitted into the presets' family and set beside the presets.

    For the end screens: the fit (``spit_env.Latency.fit``), each preset's distance from it and
    the densities to draw.

    Args:
        latencies_ms: the person's latencies (reaction + motor time), ms.
        points: the number of times the densities are given at.

    Returns:
        dict: ``moves`` (count); ``fit`` (a ``LatencyFit``, or None with fewer than
        ``latency_fit.MIN_SAMPLES`` moves or no spread) and ``why_not`` (why not, else "");
        ``distance`` {preset: the largest gap between its distribution function and the fit's,
        0-1} and ``closest`` (the preset of the smallest), both empty / None without a fit;
        ``density``: ``ms`` (points,) times and one (points,) list per model, ``you`` (None
        without a fit) and each preset, densities per ms.
    """
    lat = np.asarray(latencies_ms, dtype=float)
    fit, why_not = None, ""
    if lat.size < MIN_SAMPLES:
        why_not = f"{counted(lat.size, 'timed move')}: a profile needs at least {MIN_SAMPLES:,}"
    else:
        try:
            fit = Latency.fit(lat)
        except ValueError as err:
            why_not = str(err)
    presets = {name: Latency.preset(name) for name in PRESETS}
    models = dict(presets, **({"you": fit.latency} if fit else {}))
    # the axis spans the presets and the bulk of the fit: a person's long tail (a few pauses of
    # seconds) would squeeze every curve into the axis' first tenth
    top = max(float(np.quantile(m.table, 0.95 if name == "you" else 0.995))
              for name, m in models.items())
    grid = np.linspace(0.0, top * 1.05, points)
    density = {"ms": grid.round(1).tolist(), "you": None}
    density.update({name: m.pdf(grid).tolist() for name, m in models.items()})
    distance = {name: _closeness(fit.latency, m) for name, m in presets.items()} if fit else {}
    return {"moves": int(lat.size), "fit": fit, "why_not": why_not, "distance": distance,
            "closest": min(distance, key=distance.get) if distance else None, "density": density}


class Sitting:
    """The games a person plays in one sitting (a game and its rematches) and their profile.

    Each game is a :class:`RealtimeGame` against the same opponent, game ids ``game_id``,
    ``game_id + 1``, ... of ``seed``, not started until its front end starts it; the latencies of
    all of them are pooled into one profile (:meth:`profile`, saved by :meth:`save_profile`).

    Args:
        opponent: the player string, as :class:`RealtimeGame` takes.
        seed, game_id: the first game.
        profile_path: where :meth:`save_profile` writes the profile file (None: nowhere).
        **options: the other arguments of :class:`RealtimeGame` (human_seat, motor_ms, ...).

    Raises:
        ValueError: as :class:`RealtimeGame`.
    """

    def __init__(self, opponent: str, *, seed: int = 0, game_id: int = 0,
                 profile_path: Path | None = None, **options):
        self.opponent, self.seed, self.first_game_id = opponent, seed, game_id
        self.profile_path = Path(profile_path) if profile_path is not None else None
        self.options = options
        self.games: list[RealtimeGame] = []
        self.new_game()

    @property
    def game(self) -> RealtimeGame:
        """The game being played (the last one)."""
        return self.games[-1]

    def new_game(self) -> RealtimeGame:
        """A rematch: the next game id, not started. Stops the game before if it still runs."""
        if self.games and not self.game.over:
            self.game.stop()
        self.games.append(RealtimeGame(self.opponent, seed=self.seed,
                                       game_id=self.first_game_id + len(self.games),
                                       start_ms=None, **self.options))
        return self.game

    def latencies_ms(self) -> list[int]:
        """The human's latencies over every game of the sitting, in order."""
        return [ms for g in self.games for ms in g.latencies_ms()]

    def profile(self) -> dict:
        """:func:`person_profile` of the sitting's latencies."""
        return person_profile(self.latencies_ms())

    def save_profile(self, profile: dict | None = None) -> Path | None:
        """Write the sitting's fitted profile to ``profile_path``.

        Args:
            profile: :meth:`profile`'s result, if the caller has it already.

        Returns:
            the absolute path written (the end screens' commands name it from any folder), or
            None (no ``profile_path``, or no fit).
        """
        profile = profile if profile is not None else self.profile()
        if self.profile_path is None or profile["fit"] is None:
            return None
        games = len(self.games)
        source = (f"experiments.play: {counted(profile['moves'], 'move')} in "
                  f"{counted(games, 'game')} against {self.opponent}, "
                  f"motor time {self.game.motor_ms} ms, tick {self.game.tick_ms} ms")
        return profile["fit"].save(self.profile_path, source=source).resolve()


def reuse_lines(path: Path, opponent: str = "racer") -> list[str]:
    """How to use a saved profile: the commands, for an end screen.

    The profile is named by its absolute path, so that the commands work from any folder.
    """
    path = Path(path).resolve()
    where = shlex.quote(str(path))
    return [f"python -m experiments.tournament --players {opponent}@{where},{opponent}@club",
            f"python -m experiments.play --opponent {opponent}@{where}",
            f"spit_env.Latency.load({str(path)!r})"]
