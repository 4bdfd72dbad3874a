"""Fixed facts of Spit: every constant and lookup table of the rules.

Card ids, rank adjacency, the deal layout, the action table and the observation table, each a
constant or a lookup table built at import time.

Dimension letters used throughout the package (declared once, here):

    B  games in a batch          P  players (2)          S  stock places (5)
    H  stock height (5)          A  actions (23)         D  observation length (OBS_DIM)
    N  cards (52)

Card ids (D2): a card is an integer 0-51; ``rank = id % 13 + 1`` (Ace = 1 ... King = 13),
``suit = id // 13``. Suits never matter. ``-1`` marks "no card" in every array.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .checks import is_int

# --- sizes -------------------------------------------------------------------------------------
N_PLAYERS = 2
N_STOCKS = 5
MAX_STOCK_HEIGHT = 5  # D3: the fifth place is dealt five cards; a pile never grows after the deal
STOCK_CARDS = 15  # cards a full layout puts in the stocks (1 + 2 + 3 + 4 + 5)
N_CARDS = 52
N_RANKS = 13
N_ACTIONS = 23
NO_CARD = -1

# --- cards (D2) ----------------------------------------------------------------------------------
#: ``CARD_RANK[card + 1]`` is the rank 1-13 of a card id, and 0 for ``NO_CARD`` (-1).
CARD_RANK = np.concatenate([[0], np.arange(N_CARDS) % N_RANKS + 1]).astype(np.int8)


def rank(card: int) -> int:
    """Rank 1-13 of a card id 0-51 (D2). Raises ValueError outside 0-51."""
    if not 0 <= int(card) < N_CARDS:
        raise ValueError(f"card must be a card id 0-51, got {card!r}")
    return int(card) % N_RANKS + 1


# --- rank adjacency (D1) -------------------------------------------------------------------------
def _adjacency(wrap: bool) -> np.ndarray:
    table = np.zeros((N_RANKS + 1, N_RANKS + 1), dtype=bool)
    for r in range(1, N_RANKS + 1):
        for q in range(1, N_RANKS + 1):
            if wrap:  # the ranks form a ring: Ace takes a King or a 2
                table[r, q] = abs(r - q) in (1, N_RANKS - 1)
            else:  # "Ace is high; 2 is low": the Ace counts as 14 (A-K adjacent, A-2 not)
                table[r, q] = abs((r if r > 1 else 14) - (q if q > 1 else 14)) == 1
    return table


#: ``ADJACENT[wrap][r, q]``: may rank ``r`` be played on rank ``q`` (D1)? (14, 14) bool, index 0 is
#: "no card" and is adjacent to nothing. With ``wrap_ranks`` Ace-King and Ace-2 are adjacent;
#: without it the Ace is high: Ace-King adjacent, Ace-2 not.
ADJACENT = {True: _adjacency(True), False: _adjacency(False)}


def adjacent(card: int, onto: int, wrap_ranks: bool = True) -> bool:
    """Whether ``card`` may be played onto a centre pile whose top is ``onto`` (D1)."""
    return bool(ADJACENT[bool(wrap_ranks)][rank(card), rank(onto)])


# --- the deal layout (D3) ------------------------------------------------------------------------
#: Position i (0-14) of a pack goes to stock place ``DEAL_PLACE[i]`` at height ``DEAL_LEVEL[i]``.
#: Row r puts one card on each place p >= r, left to right; a later card lies on top.
DEAL_PLACE = np.array([p for r in range(N_STOCKS) for p in range(r, N_STOCKS)], dtype=np.int8)
DEAL_LEVEL = np.array([r for r in range(N_STOCKS) for p in range(r, N_STOCKS)], dtype=np.int8)


def layout(pack: list[int]) -> tuple[list[list[int]], list[int]]:
    """Lay a pack out by D3: five stock places (bottom -> top) and the spit cards (next first).

    With fewer than 15 cards the row deal stops where the cards run out.
    """
    stocks: list[list[int]] = [[] for _ in range(N_STOCKS)]
    for i, card in enumerate(pack[:STOCK_CARDS]):
        stocks[DEAL_PLACE[i]].append(int(card))
    return stocks, [int(c) for c in pack[STOCK_CARDS:]]


# --- phases and events ---------------------------------------------------------------------------
PHASE_PLAY, PHASE_SLAP, PHASE_OVER = 0, 1, 2
PHASE_NAMES = ("play", "slap", "over")

(EV_PLAY, EV_BOUNCE, EV_FILL, EV_FLIP, EV_SPIT, EV_SLAP, EV_ROUND_END, EV_GAME_END,
 EV_ILLEGAL) = range(9)
EVENT_NAMES = ("play", "bounce", "fill", "flip", "spit", "slap", "round_end", "game_end", "illegal")
#: Field order of one event record (see docs/RULES.md, "Events").
EVENT_FIELDS = ("type", "player", "clock_ms", "action", "card", "pile", "value")

ROUND_END_EMPTIED, ROUND_END_STALL_OUT = 0, 1  # value of a round_end event (D10 a / b)
#: value of a spit event - the round start (D4), a stall with no move left (D9), a stall because
#: no card moved for ``stall_timeout_ms`` (D17)
SPIT_ROUND_START, SPIT_STALL, SPIT_TIMEOUT = 0, 1, 2
GAME_END_TERMINATED, GAME_END_TRUNCATED = 0, 1  # value of a game_end event

# --- actions (DESIGN.md): Discrete(23), egocentric pile c = 0 own centre pile, 1 opponent's ------
WAIT = 0
PLAY_BASE = 1  # PLAY(s, c) = 1 + 2 s + c
FILL_BASE = 11  # FILL(s) = 11 + s
FLIP_BASE = 16  # FLIP(s) = 16 + s
SLAP_BASE = 21  # SLAP(c) = 21 + c

KIND_WAIT, KIND_PLAY, KIND_FILL, KIND_FLIP, KIND_SLAP = range(5)


def play_action(stock: int, pile: int) -> int:
    """Action id of PLAY(stock place 0-4, egocentric pile 0 own / 1 opponent's)."""
    return PLAY_BASE + 2 * stock + pile


def fill_action(stock: int) -> int:
    """Action id of FILL(stock place 0-4): move its top card to the leftmost empty place (D6)."""
    return FILL_BASE + stock


def flip_action(stock: int) -> int:
    """Action id of FLIP(stock place 0-4): turn its face-down top card up (D5, auto_flip off)."""
    return FLIP_BASE + stock


def slap_action(pile: int) -> int:
    """Action id of SLAP(egocentric pile 0 own / 1 opponent's) (D11)."""
    return SLAP_BASE + pile


def _action_tables():
    kind = np.zeros(N_ACTIONS, np.int8)
    stock = np.full(N_ACTIONS, -1, np.int8)
    pile = np.full(N_ACTIONS, -1, np.int8)
    names = ["WAIT"] + [""] * (N_ACTIONS - 1)
    for s in range(N_STOCKS):
        for c in range(2):
            a = play_action(s, c)
            kind[a], stock[a], pile[a] = KIND_PLAY, s, c
            names[a] = f"PLAY(stock={s}, pile={'own' if c == 0 else 'opp'})"
        kind[fill_action(s)], stock[fill_action(s)] = KIND_FILL, s
        names[fill_action(s)] = f"FILL(stock={s})"
        kind[flip_action(s)], stock[flip_action(s)] = KIND_FLIP, s
        names[flip_action(s)] = f"FLIP(stock={s})"
    for c in range(2):
        kind[slap_action(c)], pile[slap_action(c)] = KIND_SLAP, c
        names[slap_action(c)] = f"SLAP(pile={'own' if c == 0 else 'opp'})"
    return kind, stock, pile, tuple(names)


#: (A,) lookup tables: the kind (KIND_*), stock place (-1 if none) and egocentric pile (-1 if none)
#: of every action id, and a readable name.
ACTION_KIND, ACTION_STOCK, ACTION_PILE, ACTION_NAMES = _action_tables()


def check_action(action) -> int:
    """Return ``action`` as an int 0-22, or raise ValueError naming what was allowed.

    Accepts Python and NumPy integers and 0-d integer arrays (as Gymnasium and SuperSuit hand
    actions over), not bools, floats or strings.
    """
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action[()]
    if not is_int(action):
        raise ValueError(
            f"action must be an integer action id 0-{N_ACTIONS - 1}, got {action!r} "
            f"of type {type(action).__name__}"
        )
    if not 0 <= int(action) < N_ACTIONS:
        raise ValueError(f"action must be an action id 0-{N_ACTIONS - 1}, got {int(action)}")
    return int(action)


def check_actions(actions, num_envs: int) -> np.ndarray:
    """``actions`` as a new (num_envs,) int64 array of action ids 0-22 (the batched views' check).

    Args:
        actions: (num_envs,) or (num_envs, 1) integers.
        num_envs: the batch size.

    Raises:
        ValueError: another shape or dtype, or an id outside 0-22 (naming its index).
    """
    a = np.asarray(actions)
    if a.shape == (num_envs, 1):
        a = a[:, 0]
    if a.shape != (num_envs,) or a.dtype.kind not in "iu":
        raise ValueError(
            f"actions must be ({num_envs},) integer action ids 0-{N_ACTIONS - 1}, got shape "
            f"{a.shape} dtype {a.dtype}"
        )
    bad = np.flatnonzero((a < 0) | (a >= N_ACTIONS))
    if bad.size:
        raise ValueError(
            f"actions must be action ids 0-{N_ACTIONS - 1}, got actions[{bad[0]}] = {a[bad[0]]}"
        )
    return a.astype(np.int64)


def check_legal(name: str, action: int, mask) -> int:
    """``action`` (an id 0-22) if the seat's legal moves ``mask`` ((23,) bool or 0/1) allow it.

    The environments call this under ``illegal_action="raise"``, before anything is applied, so
    that an illegal move is refused at the call that submits it.

    Raises:
        ValueError: "<name> = 11 (FILL(stock=0)) is not legal now; legal action ids: [0, 4, 9]".
    """
    legal = np.flatnonzero(np.asarray(mask)).tolist()
    if action not in legal:
        raise ValueError(
            f"{name} = {action} ({ACTION_NAMES[action]}) is not legal now "
            f"(illegal_action='raise'); legal action ids: {legal}"
        )
    return action


# --- the observation table -----------------------------------------------------------------------
@dataclass(frozen=True)
class ObsField:
    """One named slice of the egocentric observation vector (float32, every entry in [0, 1])."""

    name: str
    size: int
    meaning: str
    start: int = 0

    @property
    def stop(self) -> int:
        """The index after the field's last entry."""
        return self.start + self.size

    @property
    def slice(self) -> slice:
        """The field's entries as a slice of the observation vector."""
        return slice(self.start, self.stop)


TIME_SCALE_MS = 1000  # time to landing is given in seconds, clipped to 1
IDLE_SCALE_MS = 3000  # a player's idle time is given in units of 3 s, clipped to 1
RANK_COPIES = 4  # cards of each rank in the deck: rank counts are given as a share of them

_PLAYER_FIELDS = (
    (
        "stock_top_rank",
        N_STOCKS * N_RANKS,
        "per stock place s (major) and rank r-1 (minor): 1 if the top card is face up with rank r",
    ),
    (
        "stock_top_face_down",
        N_STOCKS,
        "per stock place: 1 if it holds cards and its top is face down",
    ),
    ("stock_height", N_STOCKS, "per stock place: cards in it / 5"),
    ("spit_count", 1, "spit cards held / 52"),
    ("cards_held", 1, "stock + spit cards held / 52"),
    (
        "score",
        1,
        "points / target_points, clipped to 1 (points variant, D15; 0 in standard scoring)",
    ),
    ("busy", 1, "1 if the player has a move in flight (D7)"),
    ("time_to_land", 1, "ms until that move lands / 1000, clipped to 1; 0 when free"),
    (
        "move_in_flight",
        N_ACTIONS,
        "one-hot action id of the move in flight, in the player's own egocentric ids "
        "(all 0 when free; for the opponent also all 0 unless config.observe_opponent_move)",
    ),
    (
        "idle",
        1,
        "ms since the player last moved a card (a play, fill or flip landed) or since the last "
        "spit or round start, whichever is later, / 3000, clipped to 1",
    ),
)

_FIELDS = (
    ("phase", 3, "one-hot: play, slap, game over"),
    ("one_pile_round", 1, "1 if only one centre pile is used this round (D4, D12)"),
    ("clock", 1, "clock_ms / max_game_ms, clipped to 1"),
    ("round", 1, "completed rounds / max_rounds"),
    (
        "stall_timer",
        1,
        "ms since a card last moved / stall_timeout_ms, clipped to 1 (D17; 0 with the timeout off)",
    ),
    (
        "unseen_rank",
        N_RANKS,
        "per rank r-1: cards of rank r that no player can see (face-down stock cards and both "
        "players' spit cards) / 4",
    ),
    *(("self_" + n, s, m) for n, s, m in _PLAYER_FIELDS),
    *(("opp_" + n, s, m) for n, s, m in _PLAYER_FIELDS),
    (
        "centre_top_rank",
        2 * N_RANKS,
        "per egocentric centre pile c (major: 0 own, 1 opponent's) and rank r-1: "
        "1 if its top has rank r",
    ),
    ("centre_size", 2, "per egocentric centre pile: cards in it / 52"),
    (
        "centre_rank_count",
        2 * N_RANKS,
        "per egocentric centre pile c (major: 0 own, 1 opponent's) and rank r-1: cards of rank r "
        "in it, its top and the cards under it, / 4",
    ),
)


def _build_obs_table() -> tuple[ObsField, ...]:
    out, start = [], 0
    for name, size, meaning in _FIELDS:
        out.append(ObsField(name, size, meaning, start))
        start += size
    return tuple(out)


#: The observation layout: the single source for the observation space, the docs and the tests.
OBSERVATION = _build_obs_table()
OBS = {f.name: f for f in OBSERVATION}
OBS_DIM = OBSERVATION[-1].stop


def observation_table_markdown() -> str:
    """The observation table as Markdown (index range, name, meaning), for the docs."""
    rows = ["| index | name | meaning |", "|---|---|---|"]
    for f in OBSERVATION:
        idx = str(f.start) if f.size == 1 else f"{f.start}-{f.stop - 1}"
        rows.append(f"| {idx} | `{f.name}` | {f.meaning} |")
    return "\n".join(rows)


def reset_deal(options, name: str = "options") -> tuple[list[int], list[int]] | None:
    """The fixed deal asked for by the ``options`` of a ``reset``: ``options["deal"]``, or None.

    ``options`` is None or a dict (any mapping). Its "deal", when present and not None, is checked
    by :func:`check_deal`; other keys are ignored, as PettingZoo's and Gymnasium's checkers pass
    options of their own.

    Raises:
        ValueError: ``options`` that is not None or a dict, or a bad deal (naming ``name``).
    """
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise ValueError(
            f"{name} must be None or a dict such as {{'deal': [pack0, pack1]}}, got {options!r}"
        )
    deal = options.get("deal")
    return None if deal is None else check_deal(deal, f"{name}['deal']")


def check_deal(deal, name: str = "deal") -> tuple[list[int], list[int]]:
    """Validate a fixed deal ``(pack0, pack1)``.

    A deal is two sequences (lists, tuples or 1-D arrays) of integer card ids (index 0 dealt
    first, D3) that together hold each of the 52 cards exactly once; each pack holds at least one
    card (a player holding none would win at once, D10 a, D14).

    Returns:
        (pack0, pack1) as lists of Python ints.

    Raises:
        ValueError: naming ``name`` (e.g. ``deals[3][1]``) and what is wrong.
    """
    if isinstance(deal, (str, bytes, dict)) or not hasattr(deal, "__len__") or len(deal) != 2:
        raise ValueError(f"{name} must be a pair (pack0, pack1) of card-id lists, got {deal!r}")
    packs = []
    for p, pack in enumerate(deal):
        if isinstance(pack, np.ndarray):
            pack = pack.tolist() if pack.ndim == 1 else None
        if not isinstance(pack, (list, tuple)):
            raise ValueError(f"{name}[{p}] must be a list of card ids 0-51, got {deal[p]!r}")
        for c in pack:
            if not is_int(c) or not 0 <= c < N_CARDS:
                raise ValueError(f"{name}[{p}] must hold integer card ids 0-51, got {c!r}")
        if not pack:
            raise ValueError(f"{name}[{p}] is empty; each pack must hold at least one card "
                             "(a player without cards would win at once, D10 a, D14)")
        packs.append([int(c) for c in pack])
    together = packs[0] + packs[1]
    if sorted(together) != list(range(N_CARDS)):
        missing = sorted(set(range(N_CARDS)) - set(together))
        repeated = sorted({c for c in together if together.count(c) > 1})
        raise ValueError(
            f"{name} must hold each of the 52 cards exactly once; got "
            f"{len(together)} card{'' if len(together) == 1 else 's'}, "
            f"missing {missing}, duplicates {repeated}"
        )
    return packs[0], packs[1]
