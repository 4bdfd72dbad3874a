"""Heuristic Spit bots, batched, with array operations only (no per-game Python loop).

Each bot is a policy: it maps ``(observations (B, D) float32, action_masks (B, A) bool, rng)`` to
``(B,) int64`` legal action ids. Every bot reads only the observation (layout
``spit_env.rules.OBSERVATION``, decoded by ``spit_env.read_observation``: :class:`TableView` holds
the fields the bots use, under the same names) and the mask, so it plays either seat of any
adapter. Pile indices are egocentric (0 = own centre pile, 1 = opponent's); the opponent's move in
flight is shown in the opponent's own egocentric ids, so its pile ``c`` is our pile ``1 - c``.

The bots, weakest first (measured by ``python -m experiments.tournament``):

* :class:`RandomBot` (``"random"``): uniformly random among all legal moves, WAIT included. In
  the play phase WAIT is always legal, so it idles often (the D17 stall timeout ends the
  idling); it is the floor, not a model of a person.
* :class:`GreedyBot` (``"greedy"``): never idles when it can act. Priority: a random legal PLAY;
  else a random FLIP (auto_flip off, D5); else a random FILL (D6); in the slap phase (D11) it slaps
  the smaller centre pile (own pile on a tie), since the pile taken joins the slapper's next pack.
* :class:`ChainBot` (``"chain"``): like greedy but scores its plays: a play that uncovers a
  face-down card is worth more (it opens a new card), and so is one whose card leaves its other
  face-up tops playable on the new pile tops (keeps a chain of plays going). Fills come from the
  tallest place (most hidden cards to dig out).
* :class:`RacerBot` (``"racer"``): the chain score, plus it reads the opponent. Two cards that
  fit the same centre top never fit each other, so two plays onto one pile are a race: the
  first to land stays, the other bounces (D7) and its player has lost a whole move. From the
  opponent's move in flight (``opp_move_in_flight``, ``opp_time_to_land``) it knows which card
  lands on which pile and when; with its own latency model it weighs the chance that its own
  card there bounces (it lands second) against the chance that it bounces the opponent's card
  (it lands first), and does the same, more softly, for the opponent's next decision. It also
  penalises plays that leave the opponent's face-up tops cards to follow (denial). When every
  play is a likely bounce and there is nothing else to do, it WAITs (``wait_ms``, 100 ms by
  default) and decides again once the opponent's card has landed, instead of wasting a move.
  It slaps the smaller pile at once: both players are freed when the slap phase starts, so
  there is no opponent slap in flight to time against, and waiting only hands the race over.

All bots are deterministic given the generator (ties among equally good moves are broken with
``rng``) and use no state between calls.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from spit_env import rules
from spit_env.checks import check_number
from spit_env.latency import Latency
from spit_env.observation import read_observation
from spit_env.policy import uniform_legal_actions
from spit_env.rules import (
    ACTION_KIND,
    ACTION_PILE,
    ACTION_STOCK,
    FILL_BASE,
    FLIP_BASE,
    KIND_PLAY,
    N_ACTIONS,
    N_STOCKS,
    OBS_DIM,
    PLAY_BASE,
    SLAP_BASE,
    WAIT,
)

__all__ = ["RandomBot", "GreedyBot", "ChainBot", "RacerBot", "TableView", "read_table"]

#: action ids of PLAY(s, c) as an (S, 2) table
_PLAY_IDS = PLAY_BASE + 2 * np.arange(N_STOCKS)[:, None] + np.arange(2)[None, :]
_FILL_IDS = FILL_BASE + np.arange(N_STOCKS)
_FLIP_IDS = FLIP_BASE + np.arange(N_STOCKS)
_PLAY_COLS = _PLAY_IDS.reshape(-1)  # PLAY ids in (s, c) order, s major
_PLACE_BIT = 1 << np.arange(N_STOCKS, dtype=np.int64)  # place s <-> bit s of a fit word
_NOT_SELF = (~_PLACE_BIT & ((1 << N_STOCKS) - 1))[None, :, None]  # (1, S, 1): clear bit s
_POPCOUNT = np.array([bin(x).count("1") for x in range(1 << N_STOCKS)], np.int64)
_PLACE_BIT_2 = np.concatenate([_PLACE_BIT, _PLACE_BIT << N_STOCKS])  # ours, then the opponent's
_HORIZON_MS = rules.TIME_SCALE_MS  # times to landing are observed up to 1 s
_QUANTILE_STEP = 64  # the opponent's latency model, by every 64th of its 65,536 quantiles


def _check_inputs(observations, action_masks) -> tuple[np.ndarray, np.ndarray]:
    obs = np.asarray(observations, dtype=np.float32)
    masks = np.asarray(action_masks)
    if obs.ndim != 2 or obs.shape[1] != OBS_DIM:
        raise ValueError(f"observations must have shape (B, {OBS_DIM}), got {obs.shape}")
    if masks.shape != (obs.shape[0], N_ACTIONS) or masks.dtype != bool:
        raise ValueError(
            f"action_masks must be a ({obs.shape[0]}, {N_ACTIONS}) bool array, got shape "
            f"{masks.shape} dtype {masks.dtype}"
        )
    return obs, masks


@dataclass
class TableView:
    """The fields of a batch of observations the bots use, decoded (all (B, ...) arrays).

    A subset of ``spit_env.observation.ObservationView`` under the same names (the fields of
    ``rules.OBSERVATION``; self = the deciding seat, opp = its opponent, centre pile 0 = own).

    Attributes:
        phase: (B,) int64 rules.PHASE_*.
        self_stock_top_rank / opp_stock_top_rank: (B, S) int64 rank 1-13 of each face-up stock
            top, 0 if none.
        self_stock_height / opp_stock_height: (B, S) int64 cards in each stock place.
        centre_top_rank: (B, 2) int64 rank of each egocentric centre pile's top, 0 if empty.
        centre_size: (B, 2) int64 cards in each egocentric centre pile.
        opp_busy: (B,) bool, the opponent has a move in flight.
        opp_time_to_land: (B,) float64 ms until that move lands (clipped at 1000 ms by the
            observation, 0 when free).
        opp_move_in_flight: (B,) int64 that move in the opponent's own egocentric ids, -1 if
            none or not shown (``config.observe_opponent_move``).
    """

    phase: np.ndarray
    self_stock_top_rank: np.ndarray
    opp_stock_top_rank: np.ndarray
    self_stock_height: np.ndarray
    opp_stock_height: np.ndarray
    centre_top_rank: np.ndarray
    centre_size: np.ndarray
    opp_busy: np.ndarray
    opp_time_to_land: np.ndarray
    opp_move_in_flight: np.ndarray


_VIEW_FIELDS = tuple(f.name for f in fields(TableView))


def read_table(observations: np.ndarray) -> TableView:
    """Decode a (B, D) float32 observation batch (layout rules.OBSERVATION) into a TableView.

    The fields the bots use, as the public decoder ``spit_env.read_observation`` gives them.
    """
    view = read_observation(observations)
    return TableView(**{name: getattr(view, name) for name in _VIEW_FIELDS})


def _neighbour_tables(adjacent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The neighbours of each pile top, as two (14,) int64 tables.

    Args:
        adjacent: (14, 14) bool, ``adjacent[r, q]``: a card of rank r fits a pile of top q (D1,
            ``rules.ADJACENT``; index 0 is "no card").

    Returns:
        ``(first, second)``: for each top q, the ranks r with ``adjacent[r, q]`` (at most two),
        padded with 14 (an always-empty column of the bots' rank tables).
    """
    nb = np.full((2, adjacent.shape[0]), 14, np.int64)
    for q in range(adjacent.shape[0]):
        rs = np.flatnonzero(adjacent[:, q])
        assert rs.size <= 2, "a rank has at most two neighbours"
        nb[: rs.size, q] = rs
    return nb[0], nb[1]


def _pick(scores: np.ndarray, allowed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per row, the column of the highest score among the allowed ones.

    Args:
        scores: (B, K) float, the score of each column.
        allowed: (B, K) bool, the columns that may be picked.
        rng: breaks ties uniformly at random: one ``rng.random((B, K))`` draw (its rows with
            two or more allowed columns only, ``rng.random_where``, where the rng offers it).

    Returns:
        (B,) int64 column index, -1 for a row with nothing allowed.
    """
    # A jitter far below any meaningful score gap breaks exact ties uniformly. Only rows with
    # two or more allowed columns need it; a per-row stream (spit_env.streams.RowStreams) draws
    # it for those rows alone, the same values as the whole draw.
    draw_where = getattr(rng, "random_where", None)
    if draw_where is None:
        s = np.where(allowed, scores + rng.random(allowed.shape) * 1e-6, -np.inf)
    else:
        several = np.count_nonzero(allowed, axis=1) >= 2
        jitter = draw_where(several, allowed.shape)  # (the draw counts even for no row)
        s = np.where(allowed, scores, -np.inf)
        if jitter.size:
            s[several] += jitter * 1e-6
    out = s.argmax(axis=1)
    return np.where(allowed.any(axis=1), out, -1)


def _slap_smaller(view: TableView) -> np.ndarray:
    """(B,) SLAP action id aiming at the smaller centre pile (own pile on equal sizes), D11."""
    return SLAP_BASE + (view.centre_size[:, 1] < view.centre_size[:, 0]).astype(np.int64)


class RandomBot:
    """``"random"``: a uniformly random legal move per row, WAIT included where legal.

    WAIT is legal in every phase but the slap phase (D11). Deterministic given ``rng``:
    ``spit_env.policy.uniform_legal_actions``, one ``rng.random((B, A))`` draw per call.
    """

    def __call__(self, observations, action_masks, rng: np.random.Generator) -> np.ndarray:
        """The policy call: (B,) int64 legal action ids for a batch.

        Args:
            observations: (B, D) float32, layout ``rules.OBSERVATION`` (not read by this bot).
            action_masks: (B, A) bool legal moves.
            rng: the only randomness used.

        Raises:
            ValueError: ``observations`` not (B, D) or ``action_masks`` not a (B, A) bool array.
        """
        _, masks = _check_inputs(observations, action_masks)
        return self.act(None, masks, rng)

    def act(self, view: TableView | None, masks: np.ndarray,
            rng: np.random.Generator) -> np.ndarray:
        """The moves for an already decoded table (the view is not needed here)."""
        return uniform_legal_actions(masks, rng)

    def __repr__(self) -> str:
        return "RandomBot()"


class GreedyBot:
    """``"greedy"``: act at once whenever anything but WAIT is legal.

    Priority per row: a uniformly random legal PLAY; else a random FLIP (D5, auto_flip off); else
    a random FILL (D6); in the slap phase (D11) SLAP the smaller centre pile (own on a tie); else
    WAIT.
    """

    def __call__(self, observations, action_masks, rng: np.random.Generator) -> np.ndarray:
        """The policy call: (B,) int64 legal action ids for a batch.

        Args:
            observations: (B, D) float32, layout ``rules.OBSERVATION``.
            action_masks: (B, A) bool legal moves.
            rng: the only randomness used.

        Raises:
            ValueError: ``observations`` not (B, D) or ``action_masks`` not a (B, A) bool array.
        """
        obs, masks = _check_inputs(observations, action_masks)
        return self.act(read_table(obs), masks, rng)

    def act(self, view: TableView, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The moves for an already decoded table (``read_table``) and its (B, A) bool masks."""
        b = masks.shape[0]
        u = rng.random((b, N_ACTIONS))
        # class priority as a big offset, a uniform draw inside the class
        prio = np.zeros(N_ACTIONS)
        prio[_PLAY_COLS] = 3.0
        prio[_FLIP_IDS] = 2.0
        prio[_FILL_IDS] = 1.0
        scores = np.where(masks, prio[None, :] + u * 0.5, -1.0)
        scores[:, WAIT] = np.where(masks[:, WAIT], 0.0, -1.0)
        out = scores.argmax(axis=1)
        slap = view.phase == rules.PHASE_SLAP
        slap_ok = masks[np.arange(b), _slap_smaller(view)]
        out = np.where(slap & slap_ok, _slap_smaller(view), out)
        return out.astype(np.int64)

    def __repr__(self) -> str:
        return "GreedyBot()"


class ChainBot:
    """``"chain"``: greedy's priorities, with plays and fills scored.

    A PLAY(s, c) of rank r scores ``reveal_weight`` if it uncovers a face-down card (place s
    holds 2+ cards) plus ``chain_weight`` per other face-up top of ours that is adjacent (D1) to a
    centre top after the play (the new top r on pile c, the unchanged other pile). A FILL scores
    the number of cards under the moved card (dig into the tallest place first).

    Args:
        reveal_weight, chain_weight: the score weights (>= 0).
        wrap_ranks: the adjacency rule the bot assumes for its look-ahead (D1; the mask itself
            always follows the game's config).

    Raises:
        ValueError: a negative weight.
    """

    def __init__(self, reveal_weight: float = 4.0, chain_weight: float = 1.0,
                 wrap_ranks: bool = True):
        self.reveal_weight = check_number("reveal_weight", reveal_weight, 0)
        self.chain_weight = check_number("chain_weight", chain_weight, 0)
        self.wrap_ranks = bool(wrap_ranks)
        self.adjacent = rules.ADJACENT[self.wrap_ranks]
        self._neighbours = _neighbour_tables(self.adjacent)

    # --- shared pieces --------------------------------------------------------------------------
    def _fitting_after_play(self, ranks: np.ndarray, place_bits: np.ndarray,
                            view: TableView) -> tuple[np.ndarray, np.ndarray]:
        """Which places' face-up tops fit a centre pile now and after each PLAY(s, c), as bits.

        Args:
            ranks: (B, K) int64 face-up ranks 1-13 of K places, 0 for none (fits nothing).
            place_bits: (K,) int64, the bit that stands for place k.
            view: the table (our face-up tops are the cards played, the centre tops the piles).

        Returns:
            ``(after, now)``: (B, S, 2) int64, bit ``place_bits[k]`` of ``after[b, s, c]`` set
            when ``ranks[b, k]`` fits pile 0 or pile 1 once PLAY(s, c) has put our top of place
            s on pile c; (B, 2) int64, bit k of ``now[b, c]`` set when it fits pile c as it is.
        """
        # by_rank[b, r]: the bits of the places holding a face-up rank r (column 14 stays 0); a
        # card fits a pile of top q iff its rank is one of q's (at most two) neighbours. After
        # PLAY(s, c) pile c is topped by the card of place s and pile 1 - c is unchanged, so the
        # places fitting either are those fitting that card or fitting pile 1 - c now.
        b = ranks.shape[0]
        row0 = (np.arange(b) * 15)[:, None]
        by_rank = np.bincount((row0 + ranks).reshape(-1), np.tile(place_bits, b),
                              minlength=b * 15).astype(np.int64)
        nb1, nb2 = self._neighbours

        def fitting(tops: np.ndarray) -> np.ndarray:  # (B, k) ranks -> (B, k) place bits
            return by_rank.take(row0 + nb1.take(tops)) | by_rank.take(row0 + nb2.take(tops))

        card = fitting(view.self_stock_top_rank)  # (B, S): a pile topped by our card of s
        now = fitting(view.centre_top_rank)  # (B, 2)
        return card[:, :, None] | now[:, None, ::-1], now

    def play_scores(self, view: TableView) -> np.ndarray:
        """(B, S, 2) float64 score of each PLAY(s, c) (meaningful only where it is legal)."""
        after, _ = self._fitting_after_play(view.self_stock_top_rank, _PLACE_BIT, view)
        follow = _POPCOUNT.take(after & _NOT_SELF)
        reveal = (view.self_stock_height >= 2)[:, :, None]
        return self.reveal_weight * reveal + self.chain_weight * follow

    def fill_scores(self, view: TableView) -> np.ndarray:
        """(B, S) float64: cards left under the moved card (dig into the tallest place)."""
        return (view.self_stock_height - 1).astype(np.float64)

    def _decide(self, view: TableView, masks: np.ndarray, play_scores: np.ndarray,
                doomed: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
        b = masks.shape[0]
        every = np.arange(b)
        play_ok = masks[:, _PLAY_COLS]
        play_best = _pick(play_scores.reshape(b, -1), play_ok, rng)
        fill_best = _pick(self.fill_scores(view), masks[:, _FILL_IDS], rng)
        flip_best = _pick(np.zeros((b, N_STOCKS)), masks[:, _FLIP_IDS], rng)
        out = np.full(b, WAIT, dtype=np.int64)
        # lowest priority first, later writes win
        out = np.where(fill_best >= 0, _FILL_IDS[np.maximum(fill_best, 0)], out)
        out = np.where(flip_best >= 0, _FLIP_IDS[np.maximum(flip_best, 0)], out)
        idle = (fill_best < 0) & (flip_best < 0)
        # a play is taken unless there is nothing else to do and every legal play is doomed
        # (racer): then WAIT, and decide again once the opponent's card has landed
        take_play = play_best >= 0
        if doomed is not None:
            all_doomed = (~play_ok | doomed.reshape(b, -1)).all(axis=1)
            take_play &= ~(idle & all_doomed)
        out = np.where(take_play, _PLAY_COLS[np.maximum(play_best, 0)], out)
        slap_id = _slap_smaller(view)
        slap = (view.phase == rules.PHASE_SLAP) & masks[every, slap_id]
        return np.where(slap, slap_id, out).astype(np.int64)

    def __call__(self, observations, action_masks, rng: np.random.Generator) -> np.ndarray:
        """The policy call: (B,) int64 legal action ids for a batch (as :class:`GreedyBot`)."""
        obs, masks = _check_inputs(observations, action_masks)
        return self.act(read_table(obs), masks, rng)

    def act(self, view: TableView, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The moves for an already decoded table (``read_table``) and its (B, A) bool masks."""
        return self._decide(view, masks, self.play_scores(view), None, rng)

    def __repr__(self) -> str:
        return f"ChainBot(reveal_weight={self.reveal_weight}, chain_weight={self.chain_weight})"


class RacerBot(ChainBot):
    """``"racer"``: the chain score, plus reading the opponent (see the module docstring).

    Two cards that fit the same centre top never fit each other, so two plays onto one pile are
    a race: the first to land stays, the other bounces (D7) and its player lost a whole move. The
    racer scores each PLAY(s, c) as :class:`ChainBot` does, plus:

    * ``- deny_weight`` per opponent face-up top that fits a centre top after the play;
    * the opponent's PLAY in flight, if it fits pile c now and lands in t ms: with our latency L
      (our latency model, D7), we bounce with P(L > t) and it bounces with P(L < t):
      ``- bounce_weight * P(L > t) + snipe_weight * P(L < t)``;
    * the opponent's next decision, at t = its time to land (0 when it is free): with ``share``
      the fraction of its current plays that go onto pile c, and L' its latency (the
      ``opponent_latency`` model), we bounce with P(L > t + L') and it bounces with
      P(t < L < t + L') (had our card landed before t, it would have seen it):
      ``contest_weight * share * (- bounce_weight * P(bounce) + snipe_weight * P(snipe))``.

    A play onto the pile of the opponent's PLAY in flight is *doomed* when P(L > t) >=
    ``doom_p``; with no FILL or FLIP to do and every legal play doomed, the racer WAITs
    (``wait_ms``) and decides again after the opponent's card has landed.

    Args:
        latency: the bot's belief about its own latency (a Latency, preset name or whole ms;
            default "club", D7). Seated through ``spit_env.policy.apply_profile`` (an
            environment's opponent, an ``agents.arena`` player, a planner's rollout seat), it
            is set to the seat's latency (:meth:`with_latency`).
        opponent_latency: its belief about the opponent's latency (default "club").
        deny_weight, bounce_weight, snipe_weight, contest_weight: score weights (>= 0).
        doom_p: the bounce probability above which a play is not worth making, in (0, 1].
        reveal_weight, chain_weight, wrap_ranks: as :class:`ChainBot`.

    Raises:
        ValueError: a negative or non-finite weight or a bad latency.
    """

    def __init__(self, latency="club", opponent_latency="club", deny_weight: float = 0.5,
                 bounce_weight: float = 4.0, snipe_weight: float = 4.0,
                 contest_weight: float = 1.0, doom_p: float = 0.8,
                 reveal_weight: float = 4.0, chain_weight: float = 1.0, wrap_ranks: bool = True):
        super().__init__(reveal_weight, chain_weight, wrap_ranks)
        for name, value in (("deny_weight", deny_weight), ("bounce_weight", bounce_weight),
                            ("snipe_weight", snipe_weight), ("contest_weight", contest_weight)):
            check_number(name, value, 0)
        if not 0 < doom_p <= 1:
            raise ValueError(f"doom_p must be in (0, 1], got {doom_p!r}")
        self.latency = Latency.parse(latency)
        self.opponent_latency = Latency.parse(opponent_latency)
        self.deny_weight = float(deny_weight)
        self.bounce_weight = float(bounce_weight)
        self.snipe_weight = float(snipe_weight)
        self.contest_weight = float(contest_weight)
        self.doom_p = float(doom_p)
        # P(L > t) and P(L > t + L') for whole ms t = 0 .. 1000 (the observation clips there)
        mine = np.sort(self.latency.table)
        t = np.arange(_HORIZON_MS + 1)
        self._late = 1.0 - np.searchsorted(mine, t, side="right") / mine.size
        theirs = np.sort(self.opponent_latency.table)[_QUANTILE_STEP // 2::_QUANTILE_STEP]
        after = t[:, None] + theirs[None, :]
        late_after = 1.0 - np.searchsorted(mine, after, side="right") / mine.size
        self._late_after_opp = late_after.mean(axis=1)

    def _params(self) -> dict:
        return dict(deny_weight=self.deny_weight, bounce_weight=self.bounce_weight,
                    snipe_weight=self.snipe_weight, contest_weight=self.contest_weight,
                    doom_p=self.doom_p, reveal_weight=self.reveal_weight,
                    chain_weight=self.chain_weight, wrap_ranks=self.wrap_ranks)

    def with_latency(self, latency, opponent_latency=None) -> RacerBot:
        """A copy of this bot with new beliefs about the latencies (D7).

        The latency hook of ``spit_env.policy.Policy``: ``apply_profile`` calls it with the
        latency of the seat the bot takes.

        Args:
            latency: its own latency (a Latency, preset name or whole ms).
            opponent_latency: the opponent's, in the same forms; None keeps this bot's belief.

        Returns:
            A new RacerBot with the same weights; this one is left as it was.

        Raises:
            ValueError: a bad latency.
        """
        theirs = self.opponent_latency if opponent_latency is None else opponent_latency
        return RacerBot(latency, theirs, **self._params())

    def p_late(self, time_ms: np.ndarray) -> np.ndarray:
        """(B,) probability that our next move lands after ``time_ms`` (B,) ms from now."""
        return self._late[np.clip(np.rint(time_ms), 0, _HORIZON_MS).astype(np.int64)]

    def p_late_after_opponent(self, time_ms: np.ndarray) -> np.ndarray:
        """(B,) float64 probability that our next move lands after the opponent's next one.

        Args:
            time_ms: (B,) ms until the opponent decides (its move in flight lands; 0 when it is
                free), clipped to 0-1000 ms; its move then takes its latency L'.
        """
        return self._late_after_opp[np.clip(np.rint(time_ms), 0, _HORIZON_MS).astype(np.int64)]

    def play_scores(self, view: TableView) -> np.ndarray:
        """(B, S, 2) float64 score of each PLAY(s, c): the chain score plus the races."""
        return self.scores_and_doomed(view)[0]

    def scores_and_doomed(self, view: TableView) -> tuple[np.ndarray, np.ndarray]:
        """(B, S, 2) float64 score of each PLAY(s, c) and (B, S, 2) bool whether it is doomed."""
        scores, doomed, _, _ = self.analysis(view)
        return scores, doomed

    def analysis(self, view: TableView) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The racer's whole reading of each PLAY(s, c), meaningful where the play is legal.

        Returns:
            ``(scores, doomed, follow, deny)``, all (B, S, 2): the score (float64), whether the
            play is doomed (bool), and the two counts the score is built from (int64):
            ``follow``, our other face-up tops that fit a centre top after the play, and
            ``deny``, the opponent's face-up tops that do.
        """
        b = view.self_stock_top_rank.shape[0]
        every = np.arange(b)
        # our places in bits 0-4 of the words, the opponent's in bits 5-9
        after, now = self._fitting_after_play(
            np.concatenate([view.self_stock_top_rank, view.opp_stock_top_rank], axis=1),
            _PLACE_BIT_2, view)
        follow, deny = _POPCOUNT.take(after & _NOT_SELF), _POPCOUNT.take(after >> N_STOCKS)
        reveal = (view.self_stock_height >= 2)[:, :, None]
        # as ChainBot.play_scores
        scores = self.reveal_weight * reveal + self.chain_weight * follow
        scores = scores - self.deny_weight * deny

        # the opponent's PLAY in flight: which of our piles, which card, does it fit now
        a = np.maximum(view.opp_move_in_flight, 0)
        in_play = (view.opp_move_in_flight >= 0) & (ACTION_KIND[a] == KIND_PLAY)
        opp_place = np.maximum(ACTION_STOCK[a], 0).astype(np.int64)
        target = 1 - np.maximum(ACTION_PILE[a], 0).astype(np.int64)
        opp_card = view.opp_stock_top_rank[every, opp_place]
        threat = in_play & self.adjacent[opp_card, view.centre_top_rank[every, target]]
        t = np.where(view.opp_busy, view.opp_time_to_land, 0.0)
        late = self.p_late(t)
        race = np.where(threat, -self.bounce_weight * late + self.snipe_weight * (1 - late), 0.0)
        on_target = np.arange(2)[None, :] == target[:, None]  # (B, 2)
        pile_term = race[:, None] * on_target
        doomed = ((threat & (late >= self.doom_p))[:, None] & on_target)[:, None, :]

        # the opponent's next decision (now if free, when its move lands if busy)
        n_plays = _POPCOUNT.take(now >> N_STOCKS)  # (B, 2) opponent places fitting pile c
        share = n_plays / np.maximum(n_plays.sum(axis=1, keepdims=True), 1)
        lose = self.p_late_after_opponent(t)
        win = np.maximum(late - lose, 0.0)
        contest = -self.bounce_weight * lose + self.snipe_weight * win
        pile_term = pile_term + self.contest_weight * share * contest[:, None]
        return (scores + pile_term[:, None, :], np.broadcast_to(doomed, (b, N_STOCKS, 2)),
                follow, deny)

    def __call__(self, observations, action_masks, rng: np.random.Generator) -> np.ndarray:
        """The policy call: (B,) int64 legal action ids for a batch (as :class:`GreedyBot`)."""
        obs, masks = _check_inputs(observations, action_masks)
        return self.act(read_table(obs), masks, rng)

    def act(self, view: TableView, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The moves for an already decoded table (``read_table``) and its (B, A) bool masks."""
        scores, doomed = self.scores_and_doomed(view)
        return self._decide(view, masks, scores, doomed, rng)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self._params().items())
        return (f"RacerBot(latency={self.latency.label!r}, "
                f"opponent_latency={self.opponent_latency.label!r}, {params})")
