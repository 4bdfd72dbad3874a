"""``SpitConfig``: every rules flag of docs/RULES.md and the time model, validated when built."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from .checks import check_bool, check_choice, check_int, is_int
from .latency import Latency

TIE_BREAKS = ("coin", "player_0", "player_1")
SCORINGS = ("standard", "points")
ILLEGAL_ACTIONS = ("wait", "raise")


def _default_latency() -> tuple[Latency, Latency]:
    club = Latency.preset("club")
    return (club, club)


@dataclass(frozen=True)
class SpitConfig:
    """The rules and the time model of a game. All times are integer milliseconds.

    Attributes:
        latency: one latency model per seat (D7); also accepts one model or preset name for
            both seats, or a pair of models / preset names / whole ms. Default ("club", "club").
        wait_ms: how long WAIT occupies the hand, 1-60,000 ms (default 100).
        spit_delay_ms: time from a stall to the spit (D9), 0-60,000 ms (default 500).
        tie_break: who lands first when two moves land at the same ms (D8): "coin" (a fair
            coin from the game's random stream, default), "player_0" or "player_1".
        max_rounds: rounds after which the game is truncated (D16), 1-10,000 (default 100).
        max_game_ms: simulated time after which the game is truncated (D16), 1 ms to 10^9 ms
            (default 1,800,000 = 30 min).
        scoring: "standard" (D14, default) or "points" (D15).
        target_points: the points variant's end total (D15), 1-10,000 (default 100).
        auto_flip: turn the next stock card up as soon as the card above leaves (D5, default on).
        wrap_ranks: Ace-King adjacent (D1, default on).
        illegal_action: what a move outside the legal mask does: "wait" (treated as WAIT and
            reported as an "illegal" event, default) or "raise" (ValueError, nothing applied).
        observe_opponent_move: whether a player's observation shows the opponent's move in
            flight (its busy flag and time to landing are always shown). Default on.
        stall_timeout_ms: in the play phase the table also counts as stalled (D9) once no card
            has moved for this long (D17), 1 ms to 10^9 ms, or None (off). Default 3,000.
        win_on_empty_hand: house rule (D14): a player that ends any round holding no card wins
            at once. Default off: as the rule texts have it, only the player without spit cards
            that empties its stocks first in a one-pile round wins (D12).

    Raises:
        ValueError: naming the field and the allowed values, for any bad value.
    """

    latency: tuple[Latency, Latency] = field(default_factory=_default_latency)
    wait_ms: int = 100
    spit_delay_ms: int = 500
    tie_break: str = "coin"
    max_rounds: int = 100
    max_game_ms: int = 1_800_000
    scoring: str = "standard"
    target_points: int = 100
    auto_flip: bool = True
    wrap_ranks: bool = True
    illegal_action: str = "wait"
    observe_opponent_move: bool = True
    stall_timeout_ms: int | None = 3_000
    win_on_empty_hand: bool = False

    def __post_init__(self):
        object.__setattr__(self, "latency", _parse_latency_pair(self.latency))
        check_int("wait_ms", self.wait_ms, 1, 60_000)
        check_int("spit_delay_ms", self.spit_delay_ms, 0, 60_000)
        check_choice("tie_break", self.tie_break, TIE_BREAKS)
        check_int("max_rounds", self.max_rounds, 1, 10_000)
        check_int("max_game_ms", self.max_game_ms, 1, 1_000_000_000)
        check_choice("scoring", self.scoring, SCORINGS)
        check_int("target_points", self.target_points, 1, 10_000)
        check_bool("auto_flip", self.auto_flip)
        check_bool("wrap_ranks", self.wrap_ranks)
        check_choice("illegal_action", self.illegal_action, ILLEGAL_ACTIONS)
        check_bool("observe_opponent_move", self.observe_opponent_move)
        check_int("stall_timeout_ms", self.stall_timeout_ms, 1, 1_000_000_000, none_ok=True)
        check_bool("win_on_empty_hand", self.win_on_empty_hand)

    def replace(self, **changes) -> SpitConfig:
        """A copy with some fields changed (validated again).

        Raises:
            ValueError: an unknown field name or a bad value.
        """
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown SpitConfig field(s) {unknown}; known: {sorted(known)}")
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """A JSON-serialisable description (latency models by label and parameters)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "latency"}
        out["latency"] = [m.to_dict() for m in self.latency]
        return out

    @classmethod
    def from_dict(cls, data) -> SpitConfig:
        """The inverse of :meth:`to_dict`: a SpitConfig from its JSON description.

        A field left out keeps its default.

        Raises:
            ValueError: not a dict, an unknown field, a bad latency description or a bad value,
                naming the field.
        """
        if not isinstance(data, dict):
            raise ValueError(
                f"config must be a dict of SpitConfig fields, got {type(data).__name__}"
            )
        changes = dict(data)
        if "latency" in changes:
            lat = changes["latency"]
            if not isinstance(lat, (list, tuple)) or len(lat) != 2:
                raise ValueError(f"latency must be a list of two latency descriptions, got {lat!r}")
            changes["latency"] = tuple(
                Latency.from_dict(m, f"latency[{i}]") for i, m in enumerate(lat)
            )
        return cls().replace(**changes)


def _parse_latency_pair(value) -> tuple[Latency, Latency]:
    if isinstance(value, (Latency, str)) or is_int(value):
        one = _parse_one(value, "latency")
        return (one, one)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return (_parse_one(value[0], "latency[0]"), _parse_one(value[1], "latency[1]"))
    raise ValueError(
        "latency must be a Latency, a preset name, whole ms, or a pair of those (one per seat), "
        f"got {value!r}"
    )


def _parse_one(value, name: str) -> Latency:
    try:
        return Latency.parse(value)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None


def check_config(config) -> SpitConfig:
    """``config`` as a SpitConfig: None means the defaults.

    Raises:
        ValueError: anything but a SpitConfig or None.
    """
    if config is None:
        return SpitConfig()
    if not isinstance(config, SpitConfig):
        raise ValueError(f"config must be a SpitConfig or None, got {type(config).__name__}")
    return config
