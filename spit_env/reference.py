"""The scalar reference game: one game of Spit in plain Python, the test oracle.

Lists and ints, one game at a time, written to be read next to docs/RULES.md. It is the oracle of
the batched core (``spit_env.core``): both follow the decisions D1-D17 and "The time model,
exactly" of docs/RULES.md, and the differential test compares them snapshot for snapshot, event
for event.

Layout of the state (all plain Python, see :meth:`ReferenceGame.snapshot`):

* ``stocks[p][s]``: stock place s (0-4) of player p, bottom -> top, each entry ``[card, face_up]``.
* ``spit[p]``: player p's spit cards, the next to be turned first.
* ``centre[i]``: centre pile i (absolute index = the seat whose pile it is), bottom -> top.
* ``in_flight[p]``: player p's move in flight (:class:`Move`) or None (the player is free).

Actions are the player's egocentric ids (``rules.py``): pile c = 0 is the player's own centre
pile, c = 1 the opponent's; absolute pile = p if c == 0 else 1 - p.

:func:`observation` (and :meth:`ReferenceGame.observation`) builds a seat's observation vector
of ``rules.OBSERVATION`` from a snapshot in plain Python, the oracle of ``core.observe``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import rules, streams
from .checks import is_int
from .config import SpitConfig, check_config
from .latency import Latency

PLAYERS = (0, 1)
PLAY, SLAP, OVER = "play", "slap", "over"


@dataclass(frozen=True)
class StepResult:
    """What one :meth:`ReferenceGame.step` returns.

    Attributes:
        rewards: (r0, r1) floats: +1 winner / -1 loser on the step the game ends, else 0.
        terminated: True only on the step the game ends by D14 / D15.
        truncated: True only on the step the game is truncated (D16).
        events: event dicts in occurrence order (docs/RULES.md "Events").
        illegal: per player, whether its action was outside its legal mask.
    """

    rewards: tuple[float, float]
    terminated: bool
    truncated: bool
    events: list[dict]
    illegal: tuple[bool, bool]


@dataclass
class Move:
    """A move in flight (D7): egocentric action id, carried card (-1 unless PLAY/FILL), landing."""

    action: int
    card: int
    lands_ms: int


class RandomSource:
    """Every random draw of one game.

    Each draw is a pure hash of (seed, game id, purpose, a, b) (``spit_env.streams``), so the
    batched core can make exactly the same draws.
    """

    def __init__(self, seed: int, game_id: int):
        self.key = int(streams.game_key(seed, game_id))

    def deal(self) -> tuple[list[int], list[int]]:
        """Game start: the 52 cards sorted by the DEAL draw (0, card); first 26 -> player 0."""
        order = streams.shuffled(self.key, streams.DEAL, 0, range(rules.N_CARDS))
        return order[:26], order[26:]

    def latency(self, player: int, decision_index: int, model: Latency) -> int:
        """Latency in ms of a player's move (D7): LATENCY draw (player, decision index)."""
        h = streams.draw(self.key, streams.LATENCY, player, decision_index)
        return int(model.from_index(int(streams.top16(h))))

    def tie_coin(self, clock_ms: int) -> int:
        """D8 coin for moves landing together at ``clock_ms``: 1 means player 1 lands first."""
        return int(streams.draw(self.key, streams.TIE, clock_ms, 0)) & 1

    def shuffle(self, completed_rounds: int, cards: list[int]) -> list[int]:
        """D13 re-deal: a pack sorted by the REDEAL draw (completed rounds, card)."""
        return streams.shuffled(self.key, streams.REDEAL, completed_rounds, cards)


def _event(kind: str, player=-1, clock_ms=0, action=-1, card=-1, pile=-1, value=0) -> dict:
    return {"type": kind, "player": int(player), "clock_ms": int(clock_ms), "action": int(action),
            "card": int(card), "pile": int(pile), "value": int(value)}


class ReferenceGame:
    """One game of Spit, stepped by decision epochs (docs/RULES.md "The time model, exactly").

    Args:
        config: the rules and time model (default ``SpitConfig()``).
        seed, game_id: select the game's random streams (``streams.game_key``).
        deal: None (deal by the DEAL stream) or ``(pack0, pack1)``, card-id lists together
            exactly the 52 cards, each laid out by D3 (uneven and short packs allowed).

    Raises:
        ValueError: a bad config, seed, game id or deal (nothing is built).
    """

    def __init__(self, config: SpitConfig | None = None, seed: int = 0, game_id: int = 0,
                 deal=None):
        config = check_config(config)
        if not is_int(seed):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        if not is_int(game_id):
            raise ValueError(f"game_id must be an integer, got {game_id!r}")
        self.config = config
        self.rng = RandomSource(int(seed), int(game_id))
        packs = self.rng.deal() if deal is None else rules.check_deal(deal)

        self.clock_ms = 0
        self.last_move_ms = 0  # D17: when a card last moved (play, fill, flip, spit, round start)
        #: per player: when its last play, fill or flip landed, or the last spit / round start
        self.moved_ms = [0, 0]
        self.round = 0  # completed rounds
        self._phase = PLAY
        self.stocks: list[list[list[list]]] = [[[] for _ in range(rules.N_STOCKS)] for _ in PLAYERS]
        self.spit: list[list[int]] = [[], []]
        self.centre: list[list[int]] = [[], []]
        self.scores = [0, 0]
        self.in_flight: list[Move | None] = [None, None]
        self.decisions = [0, 0]
        self.winner = -1
        self.terminated = False
        self.truncated = False

        # Game start: the round start at clock 0 (spit, then the stall check).
        events: list[dict] = []
        self._start_round(packs, events)
        self._settle(events)
        #: events of the game start (the opening spits, and any stall spits that followed).
        self.start_events = events

    # --- public views ---------------------------------------------------------------------------
    @property
    def phase(self) -> str:
        """"play", "slap" or "over"."""
        return self._phase

    @property
    def done(self) -> bool:
        """Whether the game is over."""
        return self._phase == OVER

    def free(self, player: int) -> bool:
        """Whether ``player`` has no move in flight (D7)."""
        return self.in_flight[self._check_player(player)] is None

    def cards_held(self, player: int) -> int:
        """Stock + spit cards of ``player`` (D14 / D15)."""
        return sum(len(place) for place in self.stocks[player]) + len(self.spit[player])

    def legal_action_mask(self, player: int) -> list[bool]:
        """(A,) = 23 bools: the legal moves of ``player`` (docs/RULES.md, the action-mask table).

        A busy player (move in flight, D7) and a finished game allow only WAIT; a free player
        in the slap phase may only slap (D11).
        """
        player = self._check_player(player)
        if self.in_flight[player] is not None or self._phase == OVER:
            mask = [False] * rules.N_ACTIONS
            mask[rules.WAIT] = True
            return mask
        return self._table_mask(player)

    def observation(self, seat: int) -> list[float]:
        """Seat ``seat``'s observation, layout ``rules.OBSERVATION`` (:func:`observation`)."""
        return observation(self.snapshot(), self._check_player(seat), self.config)

    def snapshot(self) -> dict:
        """The whole public table as plain JSON-serialisable Python (as ``core.snapshot``)."""
        return {
            "clock_ms": self.clock_ms,
            "last_move_ms": self.last_move_ms,
            "moved_ms": list(self.moved_ms),
            "round": self.round,
            "phase": self._phase,
            "stocks": [[[[c, up] for c, up in place] for place in self.stocks[p]] for p in PLAYERS],
            "spit": [list(self.spit[p]) for p in PLAYERS],
            "centre": [list(self.centre[i]) for i in PLAYERS],
            "scores": list(self.scores),
            "in_flight": [None if m is None else
                          {"action": m.action, "card": m.card, "lands_ms": m.lands_ms}
                          for m in self.in_flight],
            "decisions": list(self.decisions),
            "winner": self.winner,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }

    # --- the step -------------------------------------------------------------------------------
    def step(self, action0, action1, latency_ms=(-1, -1)) -> StepResult:
        """Advance one decision epoch with one egocentric action id (0-22) per player.

        ``latency_ms``: per player, -1 (its latency draw, or ``wait_ms`` for WAIT, D7) or whole
        ms 1..10^9 from decision to landing of the move it decides this step (``core.step``).

        Raises:
            ValueError: an action that is not an integer id 0-22 or a bad latency (always), or an
                illegal action with ``illegal_action="raise"``; the game is then unchanged.
        """
        actions = (rules.check_action(action0), rules.check_action(action1))
        if len(latency_ms) != 2 or any(not is_int(v) or not (v == -1 or 1 <= v <= 10**9)
                                       for v in latency_ms):
            raise ValueError(
                f"latency_ms must be two values, -1 or whole ms 1..10^9, got {latency_ms!r}")
        if self._phase == OVER:
            return StepResult((0.0, 0.0), False, False, [], (False, False))
        masks = [self.legal_action_mask(p) for p in PLAYERS]
        illegal = (not masks[0][actions[0]], not masks[1][actions[1]])
        if self.config.illegal_action == "raise" and any(illegal):
            p = 0 if illegal[0] else 1
            allowed = [a for a in range(rules.N_ACTIONS) if masks[p][a]]
            raise ValueError(
                f"action{p}={actions[p]} ({rules.ACTION_NAMES[actions[p]]}) is not legal for "
                f"player {p} now; legal action ids: {allowed}"
            )

        events: list[dict] = []
        for p in PLAYERS:
            if illegal[p]:
                events.append(_event("illegal", p, self.clock_ms, action=actions[p]))
        # Decisions of the free players, in seat order; a busy player's action is ignored.
        for p in PLAYERS:
            if self.in_flight[p] is None:
                self._decide(
                    p, self._substitute(p) if illegal[p] else actions[p], int(latency_ms[p])
                )
        self._resolve(events)

        # D16: truncation by time, checked after the step.
        if self._phase != OVER and self.clock_ms >= self.config.max_game_ms:
            self._end_game(-1, truncated=True, events=events)

        ended = any(e["type"] == "game_end" for e in events)
        rewards = (0.0, 0.0)
        if ended and self.winner >= 0:
            rewards = (1.0, -1.0) if self.winner == 0 else (-1.0, 1.0)
        return StepResult(rewards, ended and self.terminated, ended and self.truncated,
                          events, illegal)

    def _substitute(self, p: int) -> int:
        """The move an illegal action of a free player becomes (``illegal_action="wait"``).

        WAIT, or in the slap phase, where the slap is compulsory (D11), a slap of the smaller
        centre pile (the player's own when both are equal).
        """
        if self._phase != SLAP:
            return rules.WAIT
        smaller_is_opp = len(self.centre[1 - p]) < len(self.centre[p])
        return rules.slap_action(1 if smaller_is_opp else 0)

    def _decide(self, p: int, action: int, given_ms: int = -1) -> None:
        """Time-model step 2-3: the move takes the hand until it lands (D7).

        ``given_ms`` >= 1 replaces the latency (or ``wait_ms``).
        """
        if given_ms > 0:
            lands = self.clock_ms + given_ms
        elif action == rules.WAIT:
            lands = self.clock_ms + self.config.wait_ms
        else:
            model = self.config.latency[p]
            lands = self.clock_ms + self.rng.latency(p, self.decisions[p], model)
        card = -1
        if rules.ACTION_KIND[action] in (rules.KIND_PLAY, rules.KIND_FILL):
            # The carried card is the place's top now; only p itself touches its stocks.
            card = self.stocks[p][int(rules.ACTION_STOCK[action])][-1][0]
        self.in_flight[p] = Move(action, card, lands)
        self.decisions[p] += 1

    def _resolve(self, events: list[dict]) -> None:
        """Resolution: jump to the earliest landing, land those moves (D8 order), then D9."""
        lands = min(m.lands_ms for m in self.in_flight if m is not None)
        self.clock_ms = lands
        order = [p for p in PLAYERS
                 if self.in_flight[p] is not None and self.in_flight[p].lands_ms == lands]
        if len(order) == 2:
            order = self._tie_order()
        for p in order:
            move = self.in_flight[p]
            if move is None:  # cancelled by the landing before it (D10 a round end, D11 slap)
                continue
            self.in_flight[p] = None
            self._land(p, move, events)
        self._settle(events)

    def _tie_order(self) -> tuple[int, int]:
        """D8: two moves landing at the same ms."""
        tie = self.config.tie_break
        if tie == "player_0":
            return (0, 1)
        if tie == "player_1":
            return (1, 0)
        return (1, 0) if self.rng.tie_coin(self.clock_ms) == 1 else (0, 1)

    def _land(self, p: int, move: Move, events: list[dict]) -> None:
        a = move.action
        kind = rules.ACTION_KIND[a]
        s = int(rules.ACTION_STOCK[a])
        clock = self.clock_ms
        if kind == rules.KIND_PLAY:
            pile = self._abs_pile(p, int(rules.ACTION_PILE[a]))
            place = self.stocks[p][s]
            top = self.centre[pile]
            # D7: legality re-checked at landing; pile must exist (D4) and fit (D1).
            if top and rules.adjacent(move.card, top[-1], self.config.wrap_ranks):
                place.pop()
                top.append(move.card)
                if place and self.config.auto_flip:  # D5
                    place[-1][1] = True
                self.last_move_ms = self.moved_ms[p] = clock  # D17
                events.append(_event("play", p, clock, a, move.card, pile))
                if all(not pl for pl in self.stocks[p]):  # D10 a
                    self._end_round(p, rules.ROUND_END_EMPTIED, events)
            else:
                events.append(_event("bounce", p, clock, a, move.card, pile))
        elif kind == rules.KIND_FILL:
            # D6: cannot fail at landing (only p changes its stocks); leftmost empty place.
            dest = next(i for i, pl in enumerate(self.stocks[p]) if not pl)
            place = self.stocks[p][s]
            card, _ = place.pop()
            self.stocks[p][dest].append([card, True])
            if place and self.config.auto_flip:  # D5
                place[-1][1] = True
            self.last_move_ms = self.moved_ms[p] = clock  # D17
            events.append(_event("fill", p, clock, a, card, -1, dest))
        elif kind == rules.KIND_FLIP:
            top = self.stocks[p][s][-1]
            top[1] = True
            self.last_move_ms = self.moved_ms[p] = clock  # D17
            events.append(_event("flip", p, clock, a, top[0], -1, s))
        elif kind == rules.KIND_SLAP:
            # D11: the first slap to land takes the slapped pile; the other player's move is
            # cancelled and it takes the other pile.
            pile = self._abs_pile(p, int(rules.ACTION_PILE[a]))
            events.append(_event("slap", p, clock, a, -1, pile))
            self.in_flight[1 - p] = None
            taken = [[], []]
            taken[p] = self.centre[pile]
            taken[1 - p] = self.centre[1 - pile]
            self._redeal(taken, events)
        # WAIT: nothing.

    # --- stall, round end, re-deal --------------------------------------------------------------
    def _settle(self, events: list[dict]) -> None:
        """The D9 stall check (with the D17 timeout).

        Repeated until the table is not stalled (or the round ends, D10 b).
        """
        while self._phase == PLAY:
            no_moves = self._stalled()
            if not (no_moves or self._timed_out()):
                return
            self.in_flight = [None, None]
            if self.spit[0] or self.spit[1]:
                self.clock_ms += self.config.spit_delay_ms
                why = rules.SPIT_STALL if no_moves else rules.SPIT_TIMEOUT
                for p in PLAYERS:
                    if self.spit[p]:
                        self._spit(p, events, why)
            else:
                # D10 b stall-out; with one pile D12 names who counts as first.
                first = -1
                if not self._two_piles():
                    n = [sum(len(pl) for pl in self.stocks[p]) for p in PLAYERS]
                    if n[0] != n[1]:
                        first = 0 if n[0] < n[1] else 1
                    else:
                        first = self._pileless_player()
                self._end_round(first, rules.ROUND_END_STALL_OUT, events)

    def _timed_out(self) -> bool:
        """D17: no card has moved for ``stall_timeout_ms``.

        Never true right after a card moved, as the timeout is at least 1 ms.
        """
        timeout = self.config.stall_timeout_ms
        return timeout is not None and self.clock_ms >= self.last_move_ms + timeout

    def _stalled(self) -> bool:
        """D9: no player has a table move.

        That is no legal play, no legal fill (D6) and no pending flip (D5) for either player,
        whatever moves are in flight.
        """
        for p in PLAYERS:
            mask = self._table_mask(p)
            if any(mask[rules.PLAY_BASE:rules.SLAP_BASE]):
                return False
        return True

    def _spit(self, p: int, events: list[dict], why: int) -> None:
        """D4: the next spit card onto the player's own centre pile; ``why``: rules.SPIT_*."""
        card = self.spit[p].pop(0)
        self.centre[p].append(card)
        self.last_move_ms = self.clock_ms  # D17
        self.moved_ms = [self.clock_ms, self.clock_ms]
        events.append(_event("spit", p, self.clock_ms, -1, card, p, why))

    def _end_round(self, first: int, cause: int, events: list[dict]) -> None:
        """Round end pipeline (docs/RULES.md).

        ``first``: the player that emptied its stocks / counts as first (D12), -1 for a two-pile
        stall-out.
        """
        self.in_flight = [None, None]
        self.round += 1
        events.append(_event("round_end", first, self.clock_ms, value=cause))
        held = [self.cards_held(p) for p in PLAYERS]
        cfg = self.config
        if cfg.scoring == "points":
            # D15: one point per card held (stocks + spit), before the slap.
            for p in PLAYERS:
                self.scores[p] += held[p]
            if 0 in held or max(self.scores) >= cfg.target_points:
                s0, s1 = self.scores
                self._end_game(-1 if s0 == s1 else (0 if s0 < s1 else 1), False, events)
                return
        elif cfg.win_on_empty_hand:
            if 0 in held:  # D14 house rule: a player holding no card wins
                self._end_game(held.index(0) if held.count(0) == 1 else -1, False, events)
                return
        elif not self._two_piles() and first >= 0 and held[first] == 0 \
                and not self.centre[first]:
            # D12, D14: in a one-pile round the player without spit cards (no centre pile)
            # emptied its stocks first and wins.
            self._end_game(first, False, events)
            return
        if self.round >= cfg.max_rounds:  # D16
            self._end_game(-1, truncated=True, events=events)
        elif self._two_piles():
            self._phase = SLAP  # D11
        else:
            # D12: the first player takes nothing, the other takes the centre pile.
            taken = [[], []]
            taken[1 - first] = self.centre[0] + self.centre[1]
            self._redeal(taken, events)

    def _redeal(self, taken: list[list[int]], events: list[dict]) -> None:
        """D13: new pack = pile taken + leftover spit + leftover stock, shuffled, laid out."""
        packs = []
        for p in PLAYERS:
            pack = list(taken[p]) + self.spit[p] + [c for pl in self.stocks[p] for c, _ in pl]
            packs.append(self.rng.shuffle(self.round, pack))
        self._start_round(packs, events)

    def _start_round(self, packs, events: list[dict]) -> None:
        """Lay out by D3 and spit (D4). The caller runs the stall check.

        A player that took nothing in a one-pile round with no spit cards left lays out no card:
        its five places are empty from the start, so the round ends at once (D10 a) and, as the
        player without spit cards, it wins (D12, D14).
        """
        for p in PLAYERS:
            places, spit = rules.layout(packs[p])
            self.stocks[p] = [[[c, i == len(pl) - 1] for i, c in enumerate(pl)] for pl in places]
            self.spit[p] = spit
        self.centre = [[], []]
        self.in_flight = [None, None]
        self._phase = PLAY
        self.last_move_ms = self.clock_ms  # D17
        self.moved_ms = [self.clock_ms, self.clock_ms]
        for p in PLAYERS:
            if self.spit[p]:
                self._spit(p, events, rules.SPIT_ROUND_START)
        for p in PLAYERS:
            if not packs[p]:
                self._end_round(p, rules.ROUND_END_EMPTIED, events)
                return

    def _end_game(self, winner: int, truncated: bool, events: list[dict]) -> None:
        self._phase = OVER
        self.winner = winner
        self.terminated = not truncated
        self.truncated = truncated
        value = rules.GAME_END_TRUNCATED if truncated else rules.GAME_END_TERMINATED
        events.append(_event("game_end", winner, self.clock_ms, value=value))

    # --- helpers --------------------------------------------------------------------------------
    def _table_mask(self, p: int) -> list[bool]:
        """The action-mask table of docs/RULES.md for a free player."""
        mask = [False] * rules.N_ACTIONS
        if self._phase == SLAP:  # D11: the slap is compulsory
            mask[rules.slap_action(0)] = mask[rules.slap_action(1)] = True
            return mask
        mask[rules.WAIT] = True
        if self._phase != PLAY:
            return mask
        places = self.stocks[p]
        some_empty = any(not pl for pl in places)
        for s, place in enumerate(places):
            if not place:
                continue
            card, face_up = place[-1]
            if not face_up:
                if not self.config.auto_flip:  # D5
                    mask[rules.flip_action(s)] = True
                continue
            for c in (0, 1):
                pile = self.centre[self._abs_pile(p, c)]
                if pile and rules.adjacent(card, pile[-1], self.config.wrap_ranks):  # D1
                    mask[rules.play_action(s, c)] = True
            if some_empty and len(place) >= 2:  # D6: covers a face-down card
                mask[rules.fill_action(s)] = True
        return mask

    @staticmethod
    def _abs_pile(p: int, c: int) -> int:
        return p if c == 0 else 1 - p

    def _two_piles(self) -> bool:
        # Both piles are non-empty from the round start on iff both players had spit cards (D4).
        return bool(self.centre[0]) and bool(self.centre[1])

    def _pileless_player(self) -> int:
        """In a one-pile round, the player that had no spit cards at the round start (D12)."""
        return 0 if not self.centre[0] else 1

    @staticmethod
    def _check_player(player) -> int:
        if not is_int(player) or int(player) not in PLAYERS:
            raise ValueError(f"player must be 0 or 1, got {player!r}")
        return int(player)


def observation(snapshot: dict, seat: int, config: SpitConfig) -> list[float]:
    """The observation of ``seat`` (0 or 1) at the table of ``snapshot``, in plain Python.

    The egocentric vector of ``rules.OBSERVATION`` (docs/ENVIRONMENTS.md has the table), every
    field computed from the public table alone: it never reads a hidden card (a face-down stock
    card or a spit card), only how many there are and, per rank, how many are not seen (the
    cards not face up on a stock nor in a centre pile). ``core.observe`` gives the float32 of
    these values.

    Args:
        snapshot: a snapshot (``ReferenceGame.snapshot`` or ``core.snapshot``).
        seat: the observing seat.
        config: the game's config (its limits, scoring, stall timeout and whether the opponent's
            move in flight is shown).
    """
    f: dict[str, list[float]] = {}
    clock = snapshot["clock_ms"]
    centre = snapshot["centre"]
    f["phase"] = [float(snapshot["phase"] == name) for name in rules.PHASE_NAMES]
    f["one_pile_round"] = [float(not centre[0] or not centre[1])]  # D4
    f["clock"] = [min(clock / config.max_game_ms, 1.0)]
    f["round"] = [snapshot["round"] / config.max_rounds]
    timeout = config.stall_timeout_ms
    f["stall_timer"] = [0.0 if timeout is None else
                        min((clock - snapshot["last_move_ms"]) / timeout, 1.0)]  # D17
    seen = [0] * rules.N_RANKS
    for pile in centre:
        for card in pile:
            seen[rules.rank(card) - 1] += 1
    for places in snapshot["stocks"]:
        for place in places:
            for card, face_up in place:
                if face_up:
                    seen[rules.rank(card) - 1] += 1
    f["unseen_rank"] = [(rules.RANK_COPIES - k) / rules.RANK_COPIES for k in seen]
    for prefix, q in (("self_", seat), ("opp_", 1 - seat)):
        places = snapshot["stocks"][q]
        top_rank = [0.0] * (rules.N_STOCKS * rules.N_RANKS)
        for s, place in enumerate(places):
            if place and place[-1][1]:
                top_rank[s * rules.N_RANKS + rules.rank(place[-1][0]) - 1] = 1.0
        f[prefix + "stock_top_rank"] = top_rank
        f[prefix + "stock_top_face_down"] = [float(bool(pl) and not pl[-1][1]) for pl in places]
        f[prefix + "stock_height"] = [len(pl) / rules.MAX_STOCK_HEIGHT for pl in places]
        spit = len(snapshot["spit"][q])
        f[prefix + "spit_count"] = [spit / rules.N_CARDS]
        f[prefix + "cards_held"] = [(sum(map(len, places)) + spit) / rules.N_CARDS]
        points = snapshot["scores"][q] / config.target_points
        f[prefix + "score"] = [min(points, 1.0) if config.scoring == "points" else 0.0]
        move = snapshot["in_flight"][q]
        f[prefix + "busy"] = [float(move is not None)]
        f[prefix + "time_to_land"] = [
            0.0 if move is None else min((move["lands_ms"] - clock) / rules.TIME_SCALE_MS, 1.0)]
        one_hot = [0.0] * rules.N_ACTIONS
        if move is not None and (prefix == "self_" or config.observe_opponent_move):
            one_hot[move["action"]] = 1.0
        f[prefix + "move_in_flight"] = one_hot
        f[prefix + "idle"] = [min((clock - snapshot["moved_ms"][q]) / rules.IDLE_SCALE_MS, 1.0)]
    piles = (centre[seat], centre[1 - seat])  # egocentric: own, opponent's
    top_rank = [0.0] * (2 * rules.N_RANKS)
    counts = [0.0] * (2 * rules.N_RANKS)
    for c, pile in enumerate(piles):
        if pile:
            top_rank[c * rules.N_RANKS + rules.rank(pile[-1]) - 1] = 1.0
        for card in pile:
            counts[c * rules.N_RANKS + rules.rank(card) - 1] += 1 / rules.RANK_COPIES
    f["centre_top_rank"] = top_rank
    f["centre_size"] = [len(pile) / rules.N_CARDS for pile in piles]
    f["centre_rank_count"] = counts
    return [x for field in rules.OBSERVATION for x in f[field.name]]
