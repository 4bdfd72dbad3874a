"""Text rendering of a table, a pure function of a snapshot, and every view's ``render()``.

The snapshot is a dict (see ``snapshot()`` of the environments), so rendering never reads an
engine's private fields.

The view is a spectator's: it shows everything public and nothing hidden. Face-up stock tops are
shown by card, face-down tops as ``##``, with each place's height; spit cards only by count;
each centre pile by its top card and size; the clock, the round, the phase, scores, and each
player's move in flight with its landing time (D7). Cards are written rank + suit letter
(A 2-9 T J Q K; c d h s for suits 0-3 of D2, which never matter in play).
"""

from __future__ import annotations

from .render_rgb import render_rgb
from .rules import ACTION_NAMES, N_RANKS, N_STOCKS

__all__ = ["card_name", "render_text", "render", "check_render_mode", "RENDER_MODES",
           "RENDER_FPS"]

#: The render modes every environment of the package accepts (besides None): "ansi" the table as
#: text, "human" that text printed, "rgb_array" an image (``spit_env.render_rgb``).
RENDER_MODES = ("ansi", "human", "rgb_array")
#: Frames per second of the environments' ``metadata["render_fps"]`` (a video shows two steps a
#: second).
RENDER_FPS = 2

_RANKS = "A23456789TJQK"
_SUITS = "cdhs"


def card_name(card: int) -> str:
    """Two-character name of a card id 0-51 (D2), e.g. 0 -> "Ac", 51 -> "Ks"; "--" for -1.

    Raises:
        ValueError: an id outside -1..51.
    """
    card = int(card)
    if card == -1:
        return "--"
    if not 0 <= card < 4 * N_RANKS:
        raise ValueError(f"card must be a card id 0-51 or -1, got {card}")
    return _RANKS[card % N_RANKS] + _SUITS[card // N_RANKS]


def _cards(n: int) -> str:
    return f"{n} card" if n == 1 else f"{n} cards"


def _place(place: list) -> str:
    if not place:
        return "  --  "
    card, face_up = place[-1]
    top = card_name(card) if face_up else "##"
    return f"{top}({len(place)})".ljust(6)


def _player_lines(snap: dict, p: int, names) -> list[str]:
    stocks = snap["stocks"][p]
    stock_cards = sum(len(place) for place in stocks)
    spit = len(snap["spit"][p])
    head = (
        f"{names[p]}  stock {stock_cards:2d}  spit {spit:2d}  held {stock_cards + spit:2d}"
        f"  score {snap['scores'][p]}  decisions {snap['decisions'][p]}"
    )
    places = "  ".join(_place(stocks[s]) for s in range(N_STOCKS))
    lines = [head, f"  stocks  {places}".rstrip()]
    move = snap["in_flight"][p]
    if move is None:
        lines.append("  hand    free")
    else:
        carried = f" carrying {card_name(move['card'])}" if move["card"] >= 0 else ""
        wait = move["lands_ms"] - snap["clock_ms"]
        lines.append(
            f"  hand    {ACTION_NAMES[move['action']]}{carried}, lands at {move['lands_ms']:,} ms "
            f"(+{wait} ms)"
        )
    return lines


def render_text(snapshot: dict, names=("player_0", "player_1")) -> str:
    """The table of ``snapshot`` as multi-line text (no trailing newline).

    Args:
        snapshot: a snapshot dict (format in the environments' ``snapshot()`` docstring).
        names: the two seats' display names.

    Raises:
        ValueError: a snapshot missing a key or holding a bad card id.
    """
    try:
        phase = snapshot["phase"]
        header = (
            f"Spit  round {snapshot['round'] + 1} ({snapshot['round']} completed)  phase {phase}"
            f"  clock {snapshot['clock_ms']:,} ms"
        )
        centre = snapshot["centre"]
        piles = "    ".join(
            f"pile {c} ({names[c]}): "
            + (
                f"top {card_name(centre[c][-1])}, {_cards(len(centre[c]))}"
                if centre[c]
                else "empty"
            )
            for c in range(2)
        )
        lines = [
            header,
            *_player_lines(snapshot, 1, names),
            f"centre  {piles}",
            *_player_lines(snapshot, 0, names),
        ]
        if phase == "over":
            if snapshot["truncated"]:
                lines.append("game over: truncated (a draw)")
            elif snapshot["winner"] >= 0:
                lines.append(f"game over: {names[snapshot['winner']]} wins")
            else:
                lines.append("game over: a draw")
    except KeyError as err:
        raise ValueError(f"snapshot is missing the key {err.args[0]!r}") from None
    return "\n".join(lines)


def check_render_mode(render_mode) -> None:
    """Accept None or one of :data:`RENDER_MODES`.

    Raises:
        ValueError: naming ``render_mode`` and the allowed values.
    """
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(
            f"render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}")


def render(snapshot: dict, names: tuple[str, str], render_mode: str | None):
    """What an environment's ``render()`` returns for ``render_mode``.

    Returns:
        the text for "ansi"; None after printing it for "human"; an RGB frame (576, 800, 3)
        uint8 for "rgb_array" (``render_rgb.render_rgb``); None for None.
    """
    if render_mode is None:
        return None
    if render_mode == "rgb_array":
        return render_rgb(snapshot, names)
    text = render_text(snapshot, names)
    if render_mode == "human":
        print(text)
        return None
    return text
