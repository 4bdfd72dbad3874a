"""A game of Spit on the core against a bot, run against a wall clock.

The engine of the terminal game (``experiments/play.py``), without any user interface, so that
tests can drive it.

**Time.** Game time runs with the wall clock: ``game_ms = wall_ms - offset``. The core's state of a
game is shown once the wall clock has reached its ``clock_ms``, so everything lands when it should.

**The human's seat.** Its latency is ``Latency.fixed(motor_ms)``: a move lands ``motor_ms`` after
the human *decides*, and the human decides by pressing a key, so the real reaction time is the
time before the key press. While the human has not pressed anything it WAITs, with
``wait_ms = tick_ms``: it gets a new decision every ``tick_ms``, and a key pressed at game time k
is played at the first decision at or after k (``tick_ms`` late at most). A key for a move that is
not legal when pressed is refused, and one that is no longer legal when its decision comes is
dropped (with a message either way). A key pressed while the hand is busy (a move in flight) is
refused: one hand, one card at a time (D7).

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
move. ``reaction + motor_ms`` is comparable to the latency presets (decision to landing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agents.arena import Match
from spit_env import core, replay, rules
from spit_env.config import SpitConfig
from spit_env.latency import PRESETS, Latency
from spit_env.replay.html import card_label

__all__ = ["RealtimeGame", "Reaction", "reaction_summary", "HUMAN"]

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
        start_ms: the wall time (ms) at which game time 0 is.

    Raises:
        ValueError: a bad opponent, seat or time, naming it.
    """

    def __init__(self, opponent: str = "racer@club", *, human_seat: int = 0, motor_ms: int = 50,
                 tick_ms: int = 25, seed: int = 0, game_id: int = 0, slap_timeout_ms: int = 5000,
                 config: SpitConfig | None = None, deal=None, start_ms: float = 0.0):
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
        config = config or SpitConfig()
        latency = list(config.latency)
        latency[self.human] = Latency.fixed(self.motor_ms)
        config = config.replace(latency=tuple(latency), wait_ms=self.tick_ms)
        # the match library's loop, the human's seat played here (no player in it)
        seats = [None, None]
        seats[self.bot] = opponent
        self.match = Match(*seats, [game_id], config=config, seed=seed, batch_size=1,
                           deals=None if deal is None else [deal])
        self.config = self.match.config
        self.policy = self.match.policies[self.bot]
        self.opponent = self.match.players[self.bot].label
        self.state = self.match.state.copy()  # the table shown: the match steps ahead of it
        names = [None, None]
        names[self.human] = {"name": HUMAN, "latency": f"{self.motor_ms} ms motor + reaction"}
        names[self.bot] = {"name": self.opponent}
        self.recorder = replay.Recorder(self.state, names, deal=deal)
        self.offset = float(start_ms)
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

    def game_ms(self, wall_ms: float) -> float:
        """Game time at wall time ``wall_ms`` (negative before the start)."""
        return wall_ms - self.offset

    def human_mask(self) -> np.ndarray:
        """(23,) bool: the human's legal moves now (egocentric ids)."""
        return core.legal_action_mask(self.state)[0, self.human]

    def describe(self, action: int) -> str:
        """A human's move in words, on the table now ("7♥ onto your pile")."""
        kind, s = int(rules.ACTION_KIND[action]), int(rules.ACTION_STOCK[action])
        pile = "your pile" if rules.ACTION_PILE[action] == 0 else f"{self.opponent}'s pile"
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

    def stop(self) -> None:
        """End the game early (the human quits); the record says it was stopped."""
        self.stopped = True

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
                return key.action, key, -1
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
        while not self.over:
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
