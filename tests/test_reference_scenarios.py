"""Scenario tests of the reference game: fixed deals and fixed latencies, so every outcome follows
from docs/RULES.md by hand. Each test names the decisions (D1-D17) it checks; the expected events,
clocks and tables are worked out from the rules in the comments, never copied from a run.

Conventions: ``card(rank, suit)`` picks ids (D2); :class:`Deck` hands out unused cards so a deal
can be written as the D3 table (stocks per place, bottom -> top, plus the spit list);
:func:`pack_from_layout` turns that table back into a pack. Player 0 moves take 100 ms, player 1
moves 150 ms, WAIT 5,000 ms, no stall timeout (D17), and an illegal action raises unless a test
says otherwise.
"""

from __future__ import annotations

import pytest

from spit_env import rules, streams
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.reference import ReferenceGame

W = rules.WAIT
P = rules.play_action
FILL = rules.fill_action
FLIP = rules.flip_action
SLAP = rules.slap_action
OWN, OPP = 0, 1


def card(rank: int, suit: int = 0) -> int:
    """Card id of a rank 1-13 and suit 0-3 (D2)."""
    return suit * 13 + rank - 1


def cfg(**changes) -> SpitConfig:
    base = dict(latency=(Latency.fixed(100), Latency.fixed(150)), wait_ms=5000,
                tie_break="player_0", illegal_action="raise", stall_timeout_ms=None)
    base.update(changes)
    return SpitConfig(**base)


def ev(kind, player=-1, clock=0, action=-1, card=-1, pile=-1, value=0) -> dict:
    return {"type": kind, "player": player, "clock_ms": clock, "action": action, "card": card,
            "pile": pile, "value": value}


class Deck:
    """Hands out each of the 52 cards at most once."""

    def __init__(self):
        self.used: set[int] = set()

    def take(self, *ranks: int) -> list[int]:
        out = []
        for r in ranks:
            c = next(card(r, s) for s in range(4) if card(r, s) not in self.used)
            self.used.add(c)
            out.append(c)
        return out

    def one(self, r: int) -> int:
        return self.take(r)[0]

    def rest(self, n: int | None = None, ranks=None) -> list[int]:
        free = [c for c in range(52)
                if c not in self.used and (ranks is None or rules.rank(c) in ranks)]
        free = free if n is None else free[:n]
        assert n is None or len(free) == n, "not enough cards left"
        self.used.update(free)
        return free

    def under(self, tops: list[int], heights=(1, 2, 3, 4, 5), ranks=None) -> list[list[int]]:
        """Five places with the given tops over face-down cards from the unused ones."""
        return [self.rest(h - 1, ranks) + [t] for h, t in zip(heights, tops, strict=True)]


def pack_from_layout(stocks, spit=()) -> list[int]:
    """The pack whose D3 layout is ``stocks`` (five places, bottom -> top) plus ``spit``."""
    stocks = [list(p) for p in stocks]
    pack = []
    for i in range(rules.STOCK_CARDS):
        place, level = int(rules.DEAL_PLACE[i]), int(rules.DEAL_LEVEL[i])
        if level >= len(stocks[place]):
            break
        pack.append(stocks[place][level])
    assert len(pack) == sum(map(len, stocks)), "stocks are not a D3 layout"
    assert not spit or len(pack) == rules.STOCK_CARDS, "spit cards need full stocks"
    return pack + list(spit)


def table(stocks) -> list[list[list]]:
    """Expected snapshot stocks of one player: tops face up, the rest face down."""
    return [[[c, i == len(pl) - 1] for i, c in enumerate(pl)] for pl in stocks]


def mask_ids(game, player) -> set[int]:
    return {a for a, ok in enumerate(game.legal_action_mask(player)) if ok}


def run(game, *pairs):
    return [game.step(a0, a1) for a0, a1 in pairs]


# --- chains: stocks a player can empty one card at a time onto one pile --------------------------
#: 15 stock cards played place by place, top first: ranks 2, 3, ..., K, A, 2, 3 onto an Ace.
CHAIN15 = [[2], [4, 3], [7, 6, 5], [11, 10, 9, 8], [3, 2, 1, 13, 12]]
CHAIN15_PLACES = [0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4]
#: 7 cards (D3 short layout: place0 [c0], place1 [c1, c5], place2 [c2, c6], place3 [c3],
#: place4 [c4]) played 2, 3, ..., 8 onto an Ace.
CHAIN7 = [[2], [6, 5], [8, 7], [3], [4]]
CHAIN7_PLACES = [0, 3, 4, 1, 1, 2, 2]


def chain_stocks(deck, ranks):
    return [deck.take(*place) for place in ranks]


def chain_order(pack, places=CHAIN15_PLACES) -> list[int]:
    """The cards a chain puts on the pile, in order: each time the top of the next place."""
    stocks, _ = rules.layout(pack)
    return [stocks[s].pop() for s in places]


# --- D1, D2 ---------------------------------------------------------------------------------------
def _ace_deal():
    d = Deck()
    # Player 0: tops K, 2, 9, 9, 9 and spits an Ace; player 1: tops 5, 5, 5, A, J and spits a 3.
    spit0, spit1 = d.one(1), d.one(3)
    tops0, tops1 = d.take(13, 2, 9, 9, 9), d.take(5, 5, 5, 1, 11)
    s0, s1 = d.under(tops0), d.under(tops1)
    pack0 = pack_from_layout(s0, [spit0] + d.rest(5))
    pack1 = pack_from_layout(s1, [spit1] + d.rest())
    return (pack0, pack1), tops0, tops1


def test_card_ids_rank_and_suit_D2():
    assert [rules.rank(card(r, s)) for s in range(4) for r in range(1, 14)] == list(range(1, 14)) * 4
    assert card(1, 0) == 0 and card(13, 3) == 51


def test_ace_takes_king_and_two_D1():
    deal, tops0, tops1 = _ace_deal()
    game = ReferenceGame(cfg(), deal=deal)
    assert game.snapshot()["centre"] == [[card(1, 0)], [card(3, 0)]]
    # K on A (own pile, wrap), 2 on A (own) and 2 on 3 (opponent's); 9s fit nothing.
    assert mask_ids(game, 0) == {W, P(0, OWN), P(1, OWN), P(1, OPP)}
    # Player 1: 5s and J fit neither A nor 3, its A equals the Ace on pile 0 (equal ranks never play).
    assert mask_ids(game, 1) == {W}

    out = run(game, (P(0, OWN), W))
    assert out[0].events == [ev("play", 0, 100, P(0, OWN), tops0[0], 0)]
    # Now pile 0 shows a King and player 1's Ace (place 3) fits it; player 1 is busy until 5,000.
    out = run(game, (W, W))  # player 0 waits (lands 5,100); player 1's WAIT lands at 5,000
    assert out[0].events == [] and game.clock_ms == 5000
    assert mask_ids(game, 1) == {W, P(3, OPP)}
    out = run(game, (W, P(3, OPP)))  # 0 is busy; 1's Ace lands at 5,150 after 0's WAIT at 5,100
    assert out[0].events == [] and game.clock_ms == 5100
    out = run(game, (W, W))
    assert out[0].events == [ev("play", 1, 5150, P(3, OPP), tops1[3], 0)]
    assert game.snapshot()["centre"][0] == [card(1, 0), tops0[0], tops1[3]]


def test_no_wrap_ace_is_high_D1():
    deal, tops0, _ = _ace_deal()
    game = ReferenceGame(cfg(wrap_ranks=False), deal=deal)
    # "Ace is high; 2 is low": the K still takes the Ace on pile 0, the 2 no longer does (it still
    # takes the 3 on pile 1).
    assert mask_ids(game, 0) == {W, P(0, OWN), P(1, OPP)}
    with pytest.raises(ValueError, match="not legal"):
        game.step(P(1, OWN), W)
    out = game.step(P(0, OWN), W)
    assert out.events == [ev("play", 0, 100, P(0, OWN), tops0[0], 0)]
    assert rules.adjacent(card(1), card(13), wrap_ranks=False)
    assert not rules.adjacent(card(1), card(2), wrap_ranks=False)
    assert rules.adjacent(card(2), card(3), wrap_ranks=False)
    assert rules.adjacent(card(13), card(12, 1), wrap_ranks=False)


# --- D3, D4 ---------------------------------------------------------------------------------------
def test_layout_of_a_26_card_pack_D3():
    c = list(range(0, 52, 2))
    game = ReferenceGame(cfg(), deal=(c, list(range(1, 52, 2))))
    snap = game.snapshot()
    up, down = True, False
    assert snap["stocks"][0] == [
        [[c[0], up]],
        [[c[1], down], [c[5], up]],
        [[c[2], down], [c[6], down], [c[9], up]],
        [[c[3], down], [c[7], down], [c[10], down], [c[12], up]],
        [[c[4], down], [c[8], down], [c[11], down], [c[13], down], [c[14], up]],
    ]
    # c15 is turned first (the opening spit), then c16, ... (any stall spits came from the front).
    assert game.start_events[0] == ev("spit", 0, 0, card=c[15], pile=0)
    assert snap["centre"][0] + snap["spit"][0] == c[15:]


def test_layout_of_a_7_card_pack_and_no_pile_D3_D4():
    d = Deck()
    c = d.take(1, 2, 3, 4, 5, 6, 7)
    game = ReferenceGame(cfg(), deal=(c, d.rest()))
    snap = game.snapshot()
    # Row 0 gives places 0-4 one card each; row 1 stops after places 1 and 2.
    assert snap["stocks"][0] == [
        [[c[0], True]], [[c[1], False], [c[5], True]], [[c[2], False], [c[6], True]],
        [[c[3], True]], [[c[4], True]],
    ]
    assert snap["spit"][0] == [] and snap["centre"][0] == []  # D4: no spit cards, no pile
    spits = [e for e in game.start_events if e["type"] == "spit"]
    assert spits and all(e["player"] == 1 and e["pile"] == 1 for e in spits)


# --- D7, D8: races, bounces, latency draws, ties -------------------------------------------------
def _race_deal():
    d = Deck()
    # Pile 0 starts with a 5, pile 1 with a 10. Player 0's place 0 holds a 4, player 1's a 6: both
    # fit pile 0. Every other top (7, 8, Q, K) fits neither 5, 10 nor 4.
    spit0, spit1 = d.one(5), d.one(10)
    four, six = d.one(4), d.one(6)
    tops0, tops1 = [four] + d.take(7, 8, 12, 13), [six] + d.take(7, 8, 12, 13)
    s0, s1 = d.under(tops0), d.under(tops1)
    return (pack_from_layout(s0, [spit0] + d.rest(4)), pack_from_layout(s1, [spit1] + d.rest())), four, six


def test_race_faster_lands_slower_bounces_D7():
    deal, four, six = _race_deal()
    game = ReferenceGame(cfg(), deal=deal)
    out = run(game, (P(0, OWN), P(0, OPP)))
    assert out[0].events == [ev("play", 0, 100, P(0, OWN), four, 0)]
    assert game.snapshot()["in_flight"] == [None, {"action": P(0, OPP), "card": six, "lands_ms": 150}]
    out = run(game, (W, W))  # 1's six lands at 150 on the 4: no longer adjacent, it stays home
    assert out[0].events == [ev("bounce", 1, 150, P(0, OPP), six, 0)]
    snap = game.snapshot()
    assert snap["stocks"][1][0] == [[six, True]]
    assert snap["centre"][0][-1] == four
    assert snap["decisions"] == [2, 1]


@pytest.mark.parametrize("tie_break, first", [("player_0", 0), ("player_1", 1)])
def test_race_with_equal_latency_tie_break_D8(tie_break, first):
    deal, four, six = _race_deal()
    game = ReferenceGame(cfg(latency=100, tie_break=tie_break), deal=deal)
    out = game.step(P(0, OWN), P(0, OPP))
    moves = {0: (P(0, OWN), four), 1: (P(0, OPP), six)}
    second = 1 - first
    assert out.events == [ev("play", first, 100, moves[first][0], moves[first][1], 0),
                          ev("bounce", second, 100, moves[second][0], moves[second][1], 0)]


def test_tie_coin_comes_from_the_tie_stream_D8():
    deal, four, six = _race_deal()
    winners = []
    for game_id in range(16):
        game = ReferenceGame(cfg(latency=100, tie_break="coin"), seed=7, game_id=game_id, deal=deal)
        coin = int(streams.draw(streams.game_key(7, game_id), streams.TIE, 100, 0)) & 1
        out = game.step(P(0, OWN), P(0, OPP))
        assert out.events[0]["type"] == "play" and out.events[0]["player"] == coin
        winners.append(coin)
    assert set(winners) == {0, 1}


def test_latency_is_drawn_per_decision_from_the_stream_D7():
    deal, four, _ = _race_deal()
    club = Latency.preset("club")
    game = ReferenceGame(cfg(latency=club, wait_ms=60_000), seed=3, game_id=5, deal=deal)
    key = streams.game_key(3, 5)

    def lat(player, index):
        return int(club.table[int(streams.top16(streams.draw(key, streams.LATENCY, player, index)))])

    game.step(P(0, OWN), W)
    assert game.clock_ms == lat(0, 0)
    assert game.snapshot()["in_flight"][1] == {"action": W, "card": -1, "lands_ms": 60_000}
    game.step(FILL(4), W)  # place 0 is empty now; decision index 1 of player 0
    assert game.clock_ms == lat(0, 0) + lat(0, 1)
    assert game.snapshot()["decisions"] == [2, 1]


# --- D5: explicit flips ---------------------------------------------------------------------------
def _chain_deal(spit_extra=1):
    d = Deck()
    ace = d.one(1)
    s0 = chain_stocks(d, CHAIN15)
    pack0 = pack_from_layout(s0, [ace] + d.rest(spit_extra))
    rest = d.rest()
    return (pack0, rest), s0


def test_flip_is_a_move_without_auto_flip_D5():
    deal, s0 = _chain_deal()
    game = ReferenceGame(cfg(auto_flip=False), deal=deal)
    run(game, (P(0, OWN), W), (P(1, OWN), W))  # the 2 (place 0), then the 3 (place 1)
    snap = game.snapshot()
    four = s0[1][0]
    assert snap["stocks"][0][1] == [[four, False]]
    mask = mask_ids(game, 0)
    # The 4 under would fit the 3 on pile 0, but it is face down: FLIP(1), no PLAY from place 1.
    assert FLIP(1) in mask and P(1, OWN) not in mask and P(1, OPP) not in mask
    assert not {FLIP(s) for s in (0, 2, 3, 4)} & mask  # other tops are face up
    out = game.step(FLIP(1), W)
    assert out.events == [ev("flip", 0, 300, FLIP(1), four, -1, 1)]
    assert game.snapshot()["stocks"][0][1] == [[four, True]]
    assert P(1, OWN) in mask_ids(game, 0)


def test_auto_flip_turns_the_next_card_D5():
    deal, s0 = _chain_deal()
    game = ReferenceGame(cfg(), deal=deal)
    run(game, (P(0, OWN), W), (P(1, OWN), W))
    assert game.snapshot()["stocks"][0][1] == [[s0[1][0], True]]
    mask = mask_ids(game, 0)
    assert P(1, OWN) in mask and not {FLIP(s) for s in range(5)} & mask


# --- D6: fills ------------------------------------------------------------------------------------
def test_fill_goes_to_the_leftmost_empty_place_only_over_face_down_cards_D6():
    d = Deck()
    five = d.one(5)
    # Player 0 (7 cards, no pile): place0 [4], place1 [K, 9], place2 [Q, 10], place3 [3], place4 [J].
    c = [d.one(4), d.one(13), d.one(12), d.one(3), d.one(11), d.one(9), d.one(10)]
    # Player 1's tops (8, 8, 8, 7, 7) fit none of 5, 4, 3.
    s1 = d.under(d.take(8, 8, 8, 7, 7))
    game = ReferenceGame(cfg(), deal=(c, pack_from_layout(s1, [five] + d.rest())))
    assert game.snapshot()["centre"] == [[], [five]]
    assert not {FILL(s) for s in range(5)} & mask_ids(game, 0)  # no empty place yet
    run(game, (P(0, OPP), W), (P(3, OPP), W))  # 4 then 3 onto player 1's pile
    assert game.snapshot()["centre"][1] == [five, c[0], c[3]]
    # Places 0 and 3 are empty; places 1 and 2 hold 2 cards; place 4's J is a lone card.
    assert {a for a in mask_ids(game, 0) if rules.ACTION_KIND[a] == rules.KIND_FILL} == {
        FILL(1), FILL(2)}
    out = game.step(FILL(2), W)
    assert out.events == [ev("fill", 0, 300, FILL(2), c[6], -1, 0)]
    snap = game.snapshot()
    assert snap["stocks"][0] == [[[c[6], True]], [[c[1], False], [c[5], True]], [[c[2], True]],
                                 [], [[c[4], True]]]
    assert {a for a in mask_ids(game, 0) if rules.ACTION_KIND[a] == rules.KIND_FILL} == {FILL(1)}


# --- D9: stalls ----------------------------------------------------------------------------------
def test_stall_both_players_spit_D9():
    d = Deck()
    five0, five1, eight, two = d.one(5), d.one(5), d.one(8), d.one(2)
    # Tops fit neither 5; player 0's 9s fit the 8 it spits after the stall.
    s0, s1 = d.under(d.take(9, 9, 9, 9, 10)), d.under(d.take(10, 10, 10, 12, 12))
    deal = (pack_from_layout(s0, [five0, eight] + d.rest(3)),
            pack_from_layout(s1, [five1, two] + d.rest()))
    game = ReferenceGame(cfg(), deal=deal)
    stall = rules.SPIT_STALL
    assert game.start_events == [ev("spit", 0, 0, card=five0, pile=0), ev("spit", 1, 0, card=five1, pile=1),
                                 ev("spit", 0, 500, card=eight, pile=0, value=stall),
                                 ev("spit", 1, 500, card=two, pile=1, value=stall)]
    assert game.clock_ms == 500
    assert mask_ids(game, 0) == {W} | {P(s, OWN) for s in range(4)}


def test_stall_only_one_player_spits_and_moves_are_cancelled_D9():
    d = Deck()
    five0, five1, eight, three = d.one(5), d.one(5), d.one(8), d.one(3)
    king = d.one(13)
    # Player 0 (16 cards, one spit card): tops Q, Q, 9, 9, 9 with a K under the 9 of place 4.
    # Player 1: tops K, K, A, A, 2. Nothing fits 5 / 5; after 1 spits an 8, the 9s fit it.
    tops0, tops1 = d.take(12, 12, 9, 9, 9), d.take(13, 13, 1, 1, 2)
    s0 = d.under(tops0, heights=(1, 2, 3, 4, 4))
    s0[4] = s0[4][:3] + [king, tops0[4]]
    s1 = d.under(tops1)
    deal = (pack_from_layout(s0, [five0]), pack_from_layout(s1, [five1, eight, three] + d.rest()))
    assert len(deal[0]) == 16
    game = ReferenceGame(cfg(), deal=deal)
    assert game.start_events[2:] == [ev("spit", 1, 500, card=eight, pile=1, value=rules.SPIT_STALL)]
    assert mask_ids(game, 0) == {W, P(2, OPP), P(3, OPP), P(4, OPP)}
    # 0 plays the 9 of place 4 (lands 600, uncovering the K); nothing fits 5 / 9 any more and no
    # place is empty: a stall. 1's WAIT (until 5,500) is cancelled; 500 ms later only 1 spits.
    out = game.step(P(4, OPP), W)
    assert out.events == [ev("play", 0, 600, P(4, OPP), tops0[4], 1),
                          ev("spit", 1, 1100, card=three, pile=1, value=rules.SPIT_STALL)]
    snap = game.snapshot()
    assert snap["in_flight"] == [None, None] and snap["clock_ms"] == 1100
    assert snap["stocks"][0][4][-1] == [king, True]
    assert snap["centre"] == [[five0], [five1, eight, tops0[4], three]]
    assert mask_ids(game, 1) == {W, P(4, OWN)}  # the 2 fits the 3


# --- D10 a, D11, D13: emptied stocks, the slap, the re-deal ---------------------------------------
def _empty_first_round(config):
    """Player 0 plays its 15-card chain onto its Ace (pile 0): the round ends at 1,500 ms."""
    deal, s0 = _chain_deal(spit_extra=1)
    game = ReferenceGame(config, seed=11, game_id=2, deal=deal)
    results = run(game, *[(P(s, OWN), W) for s in CHAIN15_PLACES])
    return game, deal, results


def _expected_round(game_seed, game_id, completed, cards):
    """The D13 re-deal of a pack: sorted by the REDEAL draw, then laid out by D3."""
    pack = streams.shuffled(int(streams.game_key(game_seed, game_id)), streams.REDEAL, completed,
                            cards)
    return rules.layout(pack)


def _check_new_round(game, player, cards, seed=11, game_id=2, completed=1):
    stocks, spit = _expected_round(seed, game_id, completed, cards)
    snap = game.snapshot()
    assert snap["stocks"][player] == table(stocks)
    assert snap["centre"][player] + snap["spit"][player] == spit  # spits are turned from the front


def test_round_ends_when_stocks_are_empty_then_slap_phase_D10_D11():
    game, deal, results = _empty_first_round(cfg())
    last = results[-1]
    assert [e["type"] for e in last.events] == ["play", "round_end"]
    assert last.events[1] == ev("round_end", 0, 1500, value=rules.ROUND_END_EMPTIED)
    assert last.rewards == (0.0, 0.0) and not last.terminated and not last.truncated
    snap = game.snapshot()
    assert snap["phase"] == "slap" and snap["round"] == 1
    assert snap["in_flight"] == [None, None]  # 1's WAIT (until 5,000) is cancelled
    assert snap["centre"][0] == [deal[0][15]] + chain_order(deal[0])
    assert mask_ids(game, 0) == {SLAP(0), SLAP(1)} == mask_ids(game, 1)  # D11: no WAIT


@pytest.mark.parametrize("a0, a1, slapper, pile", [
    (SLAP(OWN), SLAP(OPP), 0, 0),  # both go for pile 0: 0 lands first (100 < 150 ms)
    (SLAP(OPP), SLAP(OPP), 0, 1),  # different piles: 0 takes pile 1, 1 takes pile 0
    (SLAP(OPP), SLAP(OWN), 0, 1),  # both go for pile 1: 0 takes it, 1 takes pile 0
])
def test_slap_race_and_redeal_D11_D13(a0, a1, slapper, pile):
    game, deal, _ = _empty_first_round(cfg())
    before = game.snapshot()
    out = game.step(a0, a1)
    action = a0 if slapper == 0 else a1
    clock = 1500 + (100 if slapper == 0 else 150)
    assert out.events[0] == ev("slap", slapper, clock, action, -1, pile)
    assert out.events[1]["type"] == "spit"  # the new round's start
    assert sum(e["type"] == "slap" for e in out.events) == 1
    taken = {slapper: before["centre"][pile], 1 - slapper: before["centre"][1 - pile]}
    for p in (0, 1):
        leftovers = before["spit"][p] + [c for pl in before["stocks"][p] for c, _ in pl]
        _check_new_round(game, p, taken[p] + leftovers)
    snap = game.snapshot()
    assert snap["phase"] == "play" and snap["round"] == 1
    assert sum(len(c) for c in snap["centre"]) + sum(len(s) for s in snap["spit"]) + sum(
        len(pl) for st in snap["stocks"] for pl in st) == 52


# --- D10 b: stall-out -----------------------------------------------------------------------------
INERT = (1, 7, 13)          # tops: A, 7, K fit none of the spit ranks below (A-K never on a pile)
SPITS = (3, 4, 5, 9, 10, 11)
DANGER = (2, 6, 8, 12)      # kept face down: they would fit a top


def test_two_pile_stall_out_at_the_start_D9_D10():
    d = Deck()
    tops0, tops1 = d.take(1, 1, 13, 13, 7), d.take(1, 1, 13, 13, 7)
    spit0, spit1 = d.rest(11, SPITS), d.rest(11, SPITS)
    s0 = d.under(tops0, ranks=DANGER)  # 10 of the 16 danger cards
    s1 = d.under(tops1)                # the other 6 and the 4 cards left
    game = ReferenceGame(cfg(), deal=(pack_from_layout(s0, spit0), pack_from_layout(s1, spit1)))
    expected = []
    for k in range(11):  # the opening spit, then 10 stalls, 500 ms apart
        why = rules.SPIT_STALL if k else rules.SPIT_ROUND_START
        expected += [ev("spit", 0, 500 * k, card=spit0[k], pile=0, value=why),
                     ev("spit", 1, 500 * k, card=spit1[k], pile=1, value=why)]
    expected.append(ev("round_end", -1, 5000, value=rules.ROUND_END_STALL_OUT))
    assert game.start_events == expected
    assert game.phase == "slap" and game.round == 1 and game.clock_ms == 5000
    assert game.snapshot()["centre"] == [spit0, spit1]


# --- D12: one-pile rounds -------------------------------------------------------------------------
def test_one_pile_stall_out_equal_stocks_pileless_player_counts_first_D12():
    d = Deck()
    tops0, tops1 = d.take(1, 1, 13, 13, 7), d.take(1, 1, 13, 13, 7)
    spit0 = d.rest(22, SPITS)
    s0 = d.under(tops0, ranks=DANGER)
    s1 = d.under(tops1)
    game = ReferenceGame(cfg(), seed=11, game_id=2,
                         deal=(pack_from_layout(s0, spit0), pack_from_layout(s1)))
    events = game.start_events
    assert [e["card"] for e in events[:22]] == spit0
    assert events[21]["clock_ms"] == 21 * 500
    # 15 stock cards each: the player without spit cards (1) counts as first and takes nothing;
    # 0 takes the pile: its new pack is the 22 pile cards and its 15 stock cards.
    assert events[22] == ev("round_end", 1, 10500, value=rules.ROUND_END_STALL_OUT)
    assert game.round == 1
    _check_new_round(game, 0, spit0 + [c for pl in s0 for c in pl])
    _check_new_round(game, 1, [c for pl in s1 for c in pl])


def test_one_pile_stall_out_fewer_stock_cards_counts_first_D12():
    d = Deck()
    first_spit, three = d.one(4), d.one(3)
    tops0, tops1 = d.take(1, 1, 13, 13) + [three], d.take(1, 13, 13, 7, 7)
    under_three = d.one(1)  # uncovered when the 3 goes, fits no spit rank
    spit0 = [first_spit] + d.rest(21, SPITS)
    s0 = d.under(tops0, heights=(1, 2, 3, 4, 4), ranks=DANGER)
    s0[4] = s0[4][:3] + [under_three, three]
    s1 = d.under(tops1)
    game = ReferenceGame(cfg(), seed=11, game_id=2,
                         deal=(pack_from_layout(s0, spit0), pack_from_layout(s1)))
    assert mask_ids(game, 0) == {W, P(4, OWN)}
    out = game.step(P(4, OWN), W)
    # The 3 lands at 100; then 21 stalls spit the rest (600 ... 10,600) and the stall-out ends the
    # round: 0 has 14 stock cards, 1 has 15, so 0 counts first and 1 takes the pile.
    types = [e["type"] for e in out.events]
    assert types[:23] == ["play"] + ["spit"] * 21 + ["round_end"]
    assert out.events[21]["clock_ms"] == 100 + 21 * 500
    assert out.events[22] == ev("round_end", 0, 10600, value=rules.ROUND_END_STALL_OUT)
    pile = [first_spit, three] + spit0[1:]
    _check_new_round(game, 1, pile + [c for pl in s1 for c in pl])
    _check_new_round(game, 0, [c for pl in s0 for c in pl if c != three])


def test_one_pile_round_won_by_the_pileless_player_D12_D14():
    d = Deck()
    ace = d.one(1)
    s0 = chain_stocks(d, CHAIN7)
    s1 = d.under(d.rest(5, (9, 10, 11)))
    game = ReferenceGame(cfg(), deal=(pack_from_layout(s0), pack_from_layout(s1, [ace] + d.rest())))
    results = run(game, *[(P(s, OPP), W) for s in CHAIN7_PLACES])
    for r in results[:-1]:
        assert [e["type"] for e in r.events] == ["play"] and r.rewards == (0.0, 0.0)
    last = results[-1]
    assert last.events[1:] == [ev("round_end", 0, 700, value=rules.ROUND_END_EMPTIED),
                               ev("game_end", 0, 700, value=rules.GAME_END_TERMINATED)]
    assert last.rewards == (1.0, -1.0) and last.terminated and not last.truncated
    assert game.done and game.winner == 0 and game.phase == "over"
    assert mask_ids(game, 0) == {W} == mask_ids(game, 1)
    after = game.snapshot()
    out = game.step(W, W)
    assert out.rewards == (0.0, 0.0) and out.events == [] and not out.terminated
    assert game.snapshot() == after


def test_one_pile_round_other_player_empties_first_D12_D13():
    deal, s0 = _chain_deal(spit_extra=21)  # player 0: 15 chain stock cards + 22 spit cards
    pack1 = deal[1]
    assert len(pack1) == 15
    game = ReferenceGame(cfg(), seed=11, game_id=2, deal=(deal[0], pack1))
    assert game.snapshot()["centre"][1] == []
    results = run(game, *[(P(s, OWN), W) for s in CHAIN15_PLACES])
    last = results[-1]
    assert last.events[1] == ev("round_end", 0, 1500, value=rules.ROUND_END_EMPTIED)
    assert not last.terminated and game.round == 1
    # 0 emptied first: it takes nothing and keeps its 21 spit cards; 1 takes the 16-card pile.
    pile = [deal[0][15]] + chain_order(deal[0])
    _check_new_round(game, 0, deal[0][16:])
    _check_new_round(game, 1, pile + pack1)


def _no_cards_left_round(config):
    """Player 0 holds 16 cards: its 15-card chain and the Ace it spits at the start. It plays the
    chain onto its Ace and ends the two-pile round at 1,500 ms holding no card."""
    deal, _ = _chain_deal(spit_extra=0)
    assert len(deal[0]) == 16
    game = ReferenceGame(config, seed=11, game_id=2, deal=deal)
    results = run(game, *[(P(s, OWN), W) for s in CHAIN15_PLACES])
    return game, deal, results[-1]


def test_two_pile_round_ended_with_no_cards_goes_to_the_slap_D11_D14():
    game, deal, last = _no_cards_left_round(cfg())
    assert last.events[1:] == [ev("round_end", 0, 1500, value=rules.ROUND_END_EMPTIED)]
    assert not last.terminated and last.rewards == (0.0, 0.0)
    snap = game.snapshot()
    assert snap["phase"] == "slap" and snap["stocks"][0] == [[]] * 5 and snap["spit"][0] == []
    assert mask_ids(game, 0) == {SLAP(0), SLAP(1)} == mask_ids(game, 1)
    pile1 = snap["centre"][1]  # player 1's opening spit card, the smaller pile
    out = game.step(SLAP(OPP), SLAP(OWN))  # both go for pile 1: player 0 lands first (1,600)
    assert out.events[0] == ev("slap", 0, 1600, SLAP(OPP), -1, 1)
    # Player 0 plays on with the one card it took (D13): no spit cards, so a one-pile round.
    _check_new_round(game, 0, pile1)
    after = game.snapshot()
    assert after["phase"] == "play" and after["centre"][0] == [] and not game.done


def test_win_on_empty_hand_house_rule_ends_the_game_at_once_D14():
    game, _, last = _no_cards_left_round(cfg(win_on_empty_hand=True))
    assert last.events[1:] == [ev("round_end", 0, 1500, value=rules.ROUND_END_EMPTIED),
                               ev("game_end", 0, 1500, value=rules.GAME_END_TERMINATED)]
    assert last.terminated and last.rewards == (1.0, -1.0) and game.winner == 0


def test_slap_is_compulsory_an_illegal_action_slaps_the_smaller_pile_D11():
    # Pile 0 holds 16 cards (the Ace and the chain), pile 1 one card: pile 1 is the smaller.
    game, _, _ = _empty_first_round(cfg(illegal_action="wait"))
    out = game.step(W, SLAP(OWN))  # 0's WAIT is illegal: it slaps pile 1 (its "opp") at 1,600
    assert out.illegal == (True, False)
    assert out.events[:2] == [ev("illegal", 0, 1500, W), ev("slap", 0, 1600, SLAP(OPP), -1, 1)]
    # Both illegal: each slaps the smaller pile, pile 1 (player 1's own); player 0 lands first.
    game, _, _ = _empty_first_round(cfg(illegal_action="wait"))
    out = game.step(W, P(0, OWN))
    assert out.illegal == (True, True)
    assert out.events[:3] == [ev("illegal", 0, 1500, W), ev("illegal", 1, 1500, P(0, OWN)),
                              ev("slap", 0, 1600, SLAP(OPP), -1, 1)]
    assert game.snapshot()["decisions"][1] == 1 + 1  # player 1's substituted slap was a decision
    # With "raise" the WAIT is refused and nothing changes.
    game, _, _ = _empty_first_round(cfg())
    before = game.snapshot()
    with pytest.raises(ValueError, match=r"action0=0 \(WAIT\) is not legal.*\[21, 22\]"):
        game.step(W, SLAP(OWN))
    assert game.snapshot() == before


def test_stall_timeout_spits_when_no_card_moved_D17():
    # Both players could play (player 0's 4 and player 1's 6 fit the 5 on pile 0), but both wait
    # 100 ms at a time. The last card moved at the round start (0 ms); the check after the
    # resolution at 1,000 ms finds the timeout reached: both spit 500 ms later, at 1,500 ms.
    deal, _, _ = _race_deal()
    game = ReferenceGame(cfg(wait_ms=100, stall_timeout_ms=1000), deal=deal)
    nxt = [sp[0] for sp in game.snapshot()["spit"]]
    assert game.snapshot()["last_move_ms"] == 0
    results = run(game, *[(W, W)] * 10)
    assert all(r.events == [] for r in results[:9]) and game.snapshot()["last_move_ms"] == 1500
    assert results[9].events == [ev("spit", 0, 1500, card=nxt[0], pile=0, value=rules.SPIT_TIMEOUT),
                                 ev("spit", 1, 1500, card=nxt[1], pile=1, value=rules.SPIT_TIMEOUT)]
    assert game.clock_ms == 1500
    # A card moving restarts the count: player 0's 8 (place 2) fits the 7 it spat; it lands at
    # 1,600. Waiting from there, the next timeout fires at the resolution at 2,600 and both spit at
    # 3,100.
    assert rules.rank(nxt[0]) == 7 and P(2, OWN) in mask_ids(game, 0)
    game.step(P(2, OWN), W)
    assert game.snapshot()["last_move_ms"] == 1600
    results = run(game, *[(W, W)] * 10)
    assert all(r.events == [] for r in results[:9])
    assert [(e["type"], e["clock_ms"]) for e in results[9].events] == [("spit", 3100)] * 2


def test_stall_timeout_off_lets_idle_players_wait_D17():
    deal, _, _ = _race_deal()
    game = ReferenceGame(cfg(wait_ms=100, stall_timeout_ms=None), deal=deal)
    results = run(game, *[(W, W)] * 30)
    assert all(r.events == [] for r in results) and game.clock_ms == 3000


def test_player_left_without_cards_wins_at_the_next_round_start_D10_D12_D14():
    # Player 0: the 15-card chain and 22 spit cards ending with an Ace; player 1: 15 stock cards,
    # no spit cards (one-pile rounds). Both wait; each timeout (1,000 ms, no spit delay) makes
    # player 0 spit, so after 21 waits its last spit card, the Ace, tops the pile (21,000 ms).
    # Each spit card fits one of the chain's tops (2, 3, 5, 8, Q), so no D9 stall comes between.
    d = Deck()
    ace = d.one(1)
    s0 = chain_stocks(d, CHAIN15)
    spit0 = d.rest(21, ranks=(1, 2, 3, 4, 6, 7, 9, 11, 13)) + [ace]
    pack1 = d.rest()
    assert len(pack1) == 15
    config = cfg(wait_ms=1000, stall_timeout_ms=1000, spit_delay_ms=0)
    game = ReferenceGame(config, seed=11, game_id=2, deal=(pack_from_layout(s0, spit0), pack1))
    assert game.snapshot()["centre"][1] == []
    run(game, *[(W, W)] * 21)
    snap = game.snapshot()
    assert snap["clock_ms"] == 21000 and snap["spit"][0] == [] and snap["centre"][0][-1] == ace
    # It plays the chain (100 ms a card); at 22,500 it has emptied first but holds the pile: it
    # takes nothing (D12) and holds no card. Player 1 takes the 37 cards of the pile; player 0 lays
    # out no card, so at the new round's start its places are empty: it ends that round at once
    # (D10 a) as the player without spit cards, and wins (D12, D14).
    results = run(game, *[(P(s, OWN), W) for s in CHAIN15_PLACES])
    last = results[-1]
    assert [(e["type"], e["player"], e["clock_ms"]) for e in last.events] == [
        ("play", 0, 22500), ("round_end", 0, 22500), ("spit", 1, 22500), ("round_end", 0, 22500),
        ("game_end", 0, 22500)]
    assert last.terminated and last.rewards == (1.0, -1.0) and game.round == 2
    final = game.snapshot()
    assert final["stocks"][0] == [[]] * 5 and final["spit"][0] == [] and final["centre"][0] == []


# --- D15: points ----------------------------------------------------------------------------------
def test_points_round_scores_and_target_D15():
    # At 1,500 ms player 0 holds 1 spit card, player 1 its 35 - 1 (one spat) = 34 cards.
    game, _, results = _empty_first_round(cfg(scoring="points", target_points=100))
    assert game.snapshot()["scores"] == [1, 34] and game.phase == "slap"
    game, _, results = _empty_first_round(cfg(scoring="points", target_points=34))
    last = results[-1]
    assert last.events[-1] == ev("game_end", 0, 1500, value=rules.GAME_END_TERMINATED)
    assert last.rewards == (1.0, -1.0) and last.terminated
    assert game.snapshot()["scores"] == [1, 34] and game.winner == 0


def test_standard_scoring_keeps_zero_scores_D14():
    game, _, _ = _empty_first_round(cfg())
    assert game.snapshot()["scores"] == [0, 0]


# --- D16: truncation ------------------------------------------------------------------------------
def test_truncation_at_max_rounds_D16():
    game, _, results = _empty_first_round(cfg(max_rounds=1))
    last = results[-1]
    assert last.events[-2:] == [ev("round_end", 0, 1500, value=0),
                                ev("game_end", -1, 1500, value=rules.GAME_END_TRUNCATED)]
    assert last.truncated and not last.terminated and last.rewards == (0.0, 0.0)
    assert game.winner == -1 and game.phase == "over"


def test_truncation_at_max_game_ms_D16():
    deal, _, _ = _race_deal()
    game = ReferenceGame(cfg(wait_ms=100, latency=100, max_game_ms=250), deal=deal)
    first, second, third = run(game, (W, W), (W, W), (W, W))
    assert not first.truncated and not second.truncated and game.clock_ms == 300
    assert third.events == [ev("game_end", -1, 300, value=rules.GAME_END_TRUNCATED)]
    assert third.truncated and not third.terminated and third.rewards == (0.0, 0.0)
    assert game.snapshot()["truncated"] and game.done
    assert game.step(W, W).events == []


def test_game_ending_during_its_start_is_over_from_the_start_D16():
    d = Deck()
    tops0, tops1 = d.take(1, 1, 13, 13, 7), d.take(1, 1, 13, 13, 7)
    spit0, spit1 = d.rest(11, SPITS), d.rest(11, SPITS)
    s0, s1 = d.under(tops0, ranks=DANGER), d.under(tops1)
    game = ReferenceGame(cfg(max_rounds=1),
                         deal=(pack_from_layout(s0, spit0), pack_from_layout(s1, spit1)))
    assert game.done and game.truncated and game.start_events[-1]["type"] == "game_end"
    out = game.step(W, W)
    assert out.events == [] and not out.truncated


# --- illegal moves and bad input -----------------------------------------------------------------
def test_illegal_action_becomes_wait_and_is_reported():
    deal, four, six = _race_deal()
    game = ReferenceGame(cfg(illegal_action="wait", wait_ms=1000), deal=deal)
    out = game.step(P(1, OWN), W)  # a 7 on the 5: not legal
    assert out.illegal == (True, False)
    assert out.events == [ev("illegal", 0, 0, P(1, OWN))]
    assert game.clock_ms == 1000 and game.snapshot()["decisions"] == [1, 1]
    # Tie at 1,000 (player_0 first): both free. A busy player's non-WAIT is illegal too.
    game.step(P(0, OWN), W)  # 0 lands at 1,100; 1 waits until 2,000
    out = game.step(W, P(0, OPP))  # 1 is busy: its action is ignored, and flagged
    assert out.illegal == (False, True) and out.events == [ev("illegal", 1, 1100, P(0, OPP))]
    snap = game.snapshot()  # 1's WAIT landed at 2,000; 0's WAIT lands at 2,100
    assert snap["clock_ms"] == 2000 and snap["decisions"] == [3, 2]  # busy: not a decision
    assert snap["in_flight"] == [{"action": W, "card": -1, "lands_ms": 2100}, None]


def test_illegal_action_raise_leaves_state_unchanged():
    deal, _, _ = _race_deal()
    game = ReferenceGame(cfg(), deal=deal)
    before = game.snapshot()
    with pytest.raises(ValueError, match=r"action0=3 .*legal action ids: \[0, 1\]"):
        game.step(P(1, OWN), W)
    with pytest.raises(ValueError, match="action1"):
        game.step(W, SLAP(0))
    assert game.snapshot() == before


@pytest.mark.parametrize("bad", [-1, 23, 2.0, "1", True, None, [0]])
def test_bad_action_type_or_range_raises(bad):
    deal, _, _ = _race_deal()
    for mode in ("wait", "raise"):
        game = ReferenceGame(cfg(illegal_action=mode), deal=deal)
        before = game.snapshot()
        with pytest.raises(ValueError, match="action"):
            game.step(W, bad)
        with pytest.raises(ValueError, match="action"):
            game.step(bad, W)
        assert game.snapshot() == before


@pytest.mark.parametrize("deal, match", [
    ((list(range(26)), list(range(26, 51))), "exactly once"),
    ((list(range(26)), list(range(25, 52))), "exactly once"),
    ((list(range(27)), list(range(26, 52))), "duplicates"),
    ((list(range(51)) + [52], []), "card ids 0-51"),
    ((list(range(-1, 25)), list(range(25, 52))), "card ids 0-51"),
    (([True] + list(range(1, 26)), list(range(26, 52))), "card ids 0-51"),
    (([1.0] + list(range(1, 26)), list(range(26, 52))), "card ids 0-51"),
    ((list(range(52)), []), "empty"),
    ((list(range(52)),), "pair"),
    (list(range(52)), "pair"),
    ("ab", "pair"),
    ((list(range(26)), "x"), "deal"),
])
def test_bad_deal_raises(deal, match):
    with pytest.raises(ValueError, match=match):
        ReferenceGame(cfg(), deal=deal)


def test_uneven_deal_is_accepted_and_bad_seed_rejected():
    game = ReferenceGame(cfg(), deal=(list(range(40)), list(range(40, 52))))
    assert sum(len(pl) for pl in game.snapshot()["stocks"][1]) == 12
    with pytest.raises(ValueError, match="seed"):
        ReferenceGame(cfg(), seed=1.5)
    with pytest.raises(ValueError, match="game_id"):
        ReferenceGame(cfg(), game_id="3")
    with pytest.raises(ValueError, match="config"):
        ReferenceGame({"wait_ms": 5})
    with pytest.raises(ValueError, match="player"):
        game.legal_action_mask(2)


def test_default_deal_comes_from_the_deal_stream():
    game = ReferenceGame(SpitConfig(), seed=4, game_id=9)
    order = streams.shuffled(int(streams.game_key(4, 9)), streams.DEAL, 0, range(52))
    snap = game.snapshot()
    for p, pack in enumerate((order[:26], order[26:])):
        stocks, spit = rules.layout(pack)
        assert snap["stocks"][p] == table(stocks)
        assert snap["centre"][p] + snap["spit"][p] == spit
