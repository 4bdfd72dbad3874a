"""Image rendering of a table (``render_mode="rgb_array"``), a pure function of a snapshot.

:func:`render_rgb` draws a snapshot (the environments' ``snapshot()`` dict) with Pillow in the
look of the HTML replay (``spit_env/replay/page/``): a green felt table with seat 1 at the top and
seat 0 at the bottom; each seat's five stock places as fanned stacks (face-down cards blue, the
face-up top with its rank and suit); in the centre, each seat's spit cards (a face-down stack and
its count) beside the two centre piles (top card, a card peeking out under it, the size); each
seat's move in flight (D7) as the card it carries, its action and the time to landing, with the
place it leaves and the pile it targets outlined in the seat's colour (light blue for seat 0,
orange for seat 1) and "RACE" on a pile both moves target. The piles and spit cards are labelled
by their owner's name ("player_0's pile", "player_0's spit cards"). The header shows the round,
the phase and the clock; a banner between seat 1's stock places and the centre row the slap
phase (D11) and the end of the game, where it covers no card. :func:`frame_layout` gives the
boxes of what a frame draws (cards, empty places, texts, the banner).

The view is a spectator's, like the text renderer (``spit_env.render``): nothing hidden is drawn.
Pillow is imported the first time a frame is drawn.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .rules import (
    ACTION_KIND,
    ACTION_NAMES,
    ACTION_PILE,
    ACTION_STOCK,
    KIND_PLAY,
    N_RANKS,
    N_STOCKS,
)

__all__ = ["render_rgb", "frame_layout", "FRAME_SHAPE"]

#: (H, W, 3): the shape of every frame, multiples of 16 as video encoders want.
FRAME_SHAPE = (576, 800, 3)

_H, _W = FRAME_SHAPE[:2]
_CW, _CH, _FAN = 56, 78, 10  # card width and height, and the offset of each card under the top
_PLACE_GAP = 22
_BG, _FELT, _RIM = (15, 26, 20), (29, 92, 58), (59, 42, 26)
_INK, _MUTED = (238, 243, 238), (169, 194, 178)
_SEAT = ((79, 195, 247), (255, 183, 77))  # the replay page's --p0 and --p1
_RACE = (255, 82, 82)
_FACE, _EDGE, _BLACK, _RED = (253, 253, 251), (201, 201, 194), (27, 27, 27), (198, 40, 40)
_BACK, _BACK_LINE = (43, 79, 146), (92, 124, 184)
_RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")


@cache
def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _places_x() -> list[int]:
    width = N_STOCKS * _CW + (N_STOCKS - 1) * _PLACE_GAP
    return [(_W - width) // 2 + s * (_CW + _PLACE_GAP) for s in range(N_STOCKS)]


# y of the stack's bottom card (seat 1 fans down towards the centre, seat 0 up); the piles' row
_PLACES_Y = (376, 70)
_CENTRE_Y = 236
# the bottom seat's pile on the left, as on the page and in the terminal game (the keys' "left")
_PILE_X = (242, 502)  # absolute pile 0 (seat 0's own), pile 1 (seat 1's own)
_SPIT_X = (70, 674)
# the widest label under a pile and under a spit stack (px): no two labels meet
_PILE_LABEL_W, _SPIT_LABEL_W = 144, 178


class _Canvas:
    """The image being drawn, its ImageDraw and the boxes drawn so far (:func:`frame_layout`)."""

    def __init__(self, img, draw):
        self.img, self.draw = img, draw
        self.boxes: list[tuple[str, str, tuple[int, int, int, int]]] = []

    def text(self, xy, text: str, fill, font, kind: str = "text") -> None:
        """Draw ``text`` with its top left at ``xy`` and keep its box."""
        self.draw.text(xy, text, fill, font)
        x0, y0, x1, y1 = self.draw.textbbox(xy, text, font=font)
        self.boxes.append((kind, text, (int(x0), int(y0), int(x1), int(y1))))

    def fit(self, text: str, font, width: float, tail: str = "") -> str:
        """``text + tail`` in at most ``width`` px of ``font``, ``text`` cut (with "...")."""
        if self.draw.textlength(text + tail, font=font) <= width:
            return text + tail
        while text and self.draw.textlength(text + "..." + tail, font=font) > width:
            text = text[:-1]
        return text + "..." + tail


def _suit(draw, cx: float, cy: float, r: float, suit: int, fill) -> None:
    """Suit ``suit`` (0 clubs, 1 diamonds, 2 hearts, 3 spades, D2) as a shape of radius ``r``."""
    if suit == 1:
        draw.polygon([(cx, cy - r), (cx + 0.72 * r, cy), (cx, cy + r), (cx - 0.72 * r, cy)], fill)
        return
    h = r / 2
    if suit == 2:  # heart: two lobes over a point
        for dx in (-h, h):
            draw.ellipse([cx + dx - h, cy - r * 0.75 - 0.05 * r, cx + dx + h, cy + 0.2 * r], fill)
        draw.polygon([(cx - r, cy - 0.2 * r), (cx + r, cy - 0.2 * r), (cx, cy + r)], fill)
        return
    if suit == 3:  # spade: a point over two lobes
        for dx in (-h, h):
            draw.ellipse([cx + dx - h, cy - 0.25 * r, cx + dx + h, cy + 0.7 * r], fill)
        draw.polygon([(cx - r, cy + 0.25 * r), (cx + r, cy + 0.25 * r), (cx, cy - r)], fill)
    else:  # club: three leaves
        q = 0.45 * r
        for x, y in ((cx, cy - 0.5 * r), (cx - h, cy + 0.1 * r), (cx + h, cy + 0.1 * r)):
            draw.ellipse([x - q, y - q, x + q, y + q], fill)
    draw.polygon([(cx, cy + 0.2 * r), (cx - 0.35 * r, cy + r), (cx + 0.35 * r, cy + r)], fill)


@cache
def _tile(card: int, face_up: bool, small: bool):
    """An RGBA image of one card: its face (rank, suit) if ``face_up``, else its back."""
    from PIL import Image, ImageDraw

    w, h = (_CW * 5 // 7, _CH * 5 // 7) if small else (_CW, _CH)
    img = Image.new("RGBA", (w + 1, h + 1), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    if not face_up:
        draw.rounded_rectangle([0, 0, w, h], 6, fill=_BACK)
        for k in range(-h, w, 9):  # the hatching of the page's card back
            draw.line([(k, 0), (k + h, h)], _BACK_LINE, 1)
        mask = Image.new("L", img.size, 0)
        ImageDraw.Draw(mask).rounded_rectangle([0, 0, w, h], 6, fill=255)
        img.putalpha(mask)
        draw.rounded_rectangle([0, 0, w, h], 6, outline=(244, 244, 244), width=3)
        return img
    rank, suit = card % N_RANKS, card // N_RANKS
    ink = _RED if suit in (1, 2) else _BLACK
    draw.rounded_rectangle([0, 0, w, h], 6, fill=_FACE, outline=_EDGE, width=1)
    draw.text((5, 3), _RANKS[rank], ink, _font(13 if small else 16))
    _suit(draw, 11, 26 if small else 30, 5 if small else 6, suit, ink)
    if not small:
        _suit(draw, w / 2 + 4, h / 2 + 8, 12, suit, ink)
    return img


def _card(cv: _Canvas, x: int, y: int, card: int, face_up: bool, outline=None,
          small=False) -> None:
    """One card at (x, y) (top left), outlined in ``outline`` if given."""
    tile = _tile(int(card), bool(face_up), bool(small))
    cv.img.paste(tile, (int(x), int(y)), tile)
    w, h = tile.size
    cv.boxes.append(("card", "", (int(x), int(y), int(x) + w, int(y) + h)))
    if outline is not None:
        cv.draw.rounded_rectangle([x - 3, y - 3, x + w + 2, y + h + 2], 8, outline=outline,
                                  width=3)


def _slot(cv: _Canvas, x: int, y: int, w: int = _CW, h: int = _CH) -> None:
    """An empty place or pile: a dashed-looking outline."""
    cv.draw.rounded_rectangle([x, y, x + w, y + h], 6, outline=(90, 130, 105), width=2)
    cv.boxes.append(("slot", "", (x, y, x + w + 1, y + h + 1)))


def _label(cv: _Canvas, centre_x: float, y: int, name: str, what: str, count: int,
           width: int) -> None:
    """A label centred on ``centre_x``: "<name>'s <what>" (``width`` px at most) over a count.

    The name is cut to fit; the label stays inside the felt.
    """
    font = _font(12)
    for k, line in enumerate((cv.fit(name, font, width, f"'s {what}"), _cards(count))):
        w = cv.draw.textlength(line, font=font)
        x = min(max(centre_x - w / 2, 16), _W - 16 - w)
        cv.text((x, y + 15 * k), line, _MUTED, font)


def _leaving(snap: dict, p: int) -> tuple[int, int]:
    """(stock place seat ``p``'s move in flight leaves or -1, absolute pile it aims at or -1)."""
    move = snap["in_flight"][p]
    if move is None:
        return -1, -1
    a = move["action"]
    pile = int(ACTION_PILE[a])
    target = -1 if pile < 0 else (p if pile == 0 else 1 - p)
    stock = int(ACTION_STOCK[a]) if ACTION_KIND[a] == KIND_PLAY else -1
    return stock, target


def _seat(cv: _Canvas, snap: dict, p: int, name: str) -> None:
    stocks = snap["stocks"][p]
    leave, _ = _leaving(snap, p)
    base = _PLACES_Y[p]
    for s, x in enumerate(_places_x()):
        place = stocks[s]
        # the top card nearest the centre, the cards under it peeking out towards the seat
        near = base + 4 * _FAN if p == 1 else base
        if not place:
            _slot(cv, x, near)
        for k, (card, face_up) in enumerate(place):
            under = len(place) - 1 - k
            y = near - under * _FAN if p == 1 else near + under * _FAN
            top = under == 0
            _card(cv, x, y, card, face_up, _SEAT[p] if top and s == leave else None)
    # the seat's head: name, counts, the move in flight
    head_y = 30 if p == 1 else _H - 58
    colour = _SEAT[p]
    cv.draw.ellipse([24, head_y + 4, 36, head_y + 16], colour)
    cv.text((44, head_y), name, _INK, _font(16))
    held = sum(len(place) for place in stocks)
    spit = len(snap["spit"][p])
    counts = f"stock {held}  spit {spit}  held {held + spit}  score {snap['scores'][p]}"
    cv.text((44, head_y + 20), counts, _MUTED, _font(13))
    move = snap["in_flight"][p]
    if move is None:
        cv.text((_W - 210, head_y + 8), "hand free", _MUTED, _font(14))
        return
    if move["card"] >= 0:
        _card(cv, _W - 250, head_y - 6, move["card"], True, colour, small=True)
    what = ACTION_NAMES[move["action"]].replace("stock=", "").replace("pile=", "")
    cv.text((_W - 205, head_y), what, colour, _font(13))
    cv.text((_W - 205, head_y + 20), f"lands in {move['lands_ms'] - snap['clock_ms']} ms",
            _INK, _font(13))


def _cards(n: int) -> str:
    return f"{n:,} card{'' if n == 1 else 's'}"


def _centre(cv: _Canvas, snap: dict, names) -> None:
    targets = [_leaving(snap, p)[1] for p in (0, 1)]
    draw = cv.draw
    for q in (0, 1):
        pile, x, y = snap["centre"][q], _PILE_X[q], _CENTRE_Y
        if not pile:
            _slot(cv, x, y)
        else:
            if len(pile) > 1:
                _card(cv, x - 6, y + 3, pile[-2], True)
            _card(cv, x, y, pile[-1], True)
        aimed = [p for p in (0, 1) if targets[p] == q]
        for k, p in enumerate(aimed):
            pad = 5 + 5 * k
            draw.rounded_rectangle([x - pad, y - pad, x + _CW + pad, y + _CH + pad], 10,
                                   outline=_SEAT[p], width=3)
        if len(aimed) == 2:
            draw.rounded_rectangle([x + _CW - 10, y - 22, x + _CW + 34, y - 6], 8, fill=_RACE)
            cv.text((x + _CW - 4, y - 21), "RACE", (255, 255, 255), _font(11))
        # absolute pile q is seat q's own (D5), named by its owner as the replay page does
        _label(cv, x + _CW / 2, y + _CH + 10, names[q], "pile", len(pile), _PILE_LABEL_W)
    for p in (0, 1):
        n, x, y = len(snap["spit"][p]), _SPIT_X[p], _CENTRE_Y
        if n:
            for k in range(min(n, 3)):
                _card(cv, x + 6 * k, y, -1, False)
        else:
            _slot(cv, x, y)
        _label(cv, x + (_CW + 12) / 2, y + _CH + 10, names[p], "spit cards", n, _SPIT_LABEL_W)
    font = _font(18)
    banner = ""
    if snap["phase"] == "slap":
        banner = "SLAP!"
    elif snap["phase"] == "over":
        if snap["truncated"] or snap["winner"] < 0:
            banner = "game over: a draw"
        else:
            banner = cv.fit(names[snap["winner"]], font, _W - 80, " wins")
    if banner:
        # in the band between seat 1's stock places and the centre row, which holds no card
        x0, y0, x1, y1 = draw.textbbox((0, 0), banner, font=font)
        top = _PLACES_Y[1] + 4 * _FAN + _CH
        x = (_W - (x1 - x0)) / 2 - x0
        y = (top + _CENTRE_Y - (y1 - y0)) / 2 - y0
        box = (x + x0 - 10, y + y0 - 5, x + x1 + 10, y + y1 + 5)
        draw.rounded_rectangle(box, 8, fill=(14, 52, 32), outline=(255, 248, 225), width=1)
        cv.text((x, y), banner, (255, 248, 225), font, kind="banner")
        cv.boxes[-1] = ("banner", banner, tuple(int(round(v)) for v in box))


def _draw(snapshot: dict, names) -> _Canvas:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (_W, _H), _BG)
    cv = _Canvas(img, ImageDraw.Draw(img))
    cv.draw.rounded_rectangle([4, 4, _W - 5, _H - 5], 18, fill=_FELT, outline=_RIM, width=6)
    try:
        clock = snapshot["clock_ms"]
        header = (f"round {snapshot['round'] + 1}   phase {snapshot['phase']}   "
                  f"clock {clock // 60_000}:{clock // 1000 % 60:02d}.{clock % 1000:03d}")
        font = _font(14)
        cv.text(((_W - cv.draw.textlength(header, font=font)) / 2, 12), header, _MUTED, font)
        for p in (0, 1):
            _seat(cv, snapshot, p, names[p])
        _centre(cv, snapshot, names)
    except KeyError as err:
        raise ValueError(f"snapshot is missing the key {err.args[0]!r}") from None
    return cv


def render_rgb(snapshot: dict, names=("player_0", "player_1")) -> np.ndarray:
    """The table of ``snapshot`` as an RGB image (module docstring).

    Args:
        snapshot: a snapshot dict (format in the environments' ``snapshot()`` docstring).
        names: the two seats' display names (the seats' heads, the piles' and spit cards'
            labels, the winner's banner).

    Returns:
        (576, 800, 3) uint8 (:data:`FRAME_SHAPE`), a fresh array.

    Raises:
        ValueError: a snapshot missing a key.
    """
    return np.asarray(_draw(snapshot, names).img, dtype=np.uint8).copy()


def frame_layout(snapshot: dict, names=("player_0", "player_1")) -> list[tuple[str, str, tuple]]:
    """What :func:`render_rgb` draws for ``snapshot``, as boxes in the frame's pixels.

    Args:
        snapshot: a snapshot dict, as :func:`render_rgb`'s.
        names: the two seats' display names, as :func:`render_rgb`'s.

    Returns:
        one ``(kind, text, (x0, y0, x1, y1))`` per item drawn, in drawing order: kind "card"
        (a card's face or back, text ""), "slot" (an empty stock place, pile or spit stack, text
        ""), "text" (a line of text, e.g. a label "player_0's pile") or "banner" (the slap or
        end-of-game banner with its frame); x1 and y1 exclusive, in px from the top left.

    Raises:
        ValueError: a snapshot missing a key.
    """
    return _draw(snapshot, names).boxes
