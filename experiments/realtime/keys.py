"""The game's keys, shared by both front ends (the terminal game and the browser game).

Columns are the five stock places, left to right; the browser's page sends the same key names
(its arrows as "left" / "right"), and the server maps them here, so both games read a key alike::

    1 2 3 4 5   play that stock's top card where it fits (your pile first)
    Q W E R T   play it onto your pile (left)
    A S D F G   play it onto the opponent's pile (right)
    Z X C V B   move it to an empty place (or turn it up, with auto_flip off)
    <- / ->     slap your pile / the opponent's pile
"""

from __future__ import annotations

from spit_env import rules
from spit_env.replay.html import card_label

__all__ = ["KEYMAP", "SLAP_KEYS", "GAME_KEYS", "key_action", "key_of", "press_key"]

#: The keys of the five stock places, per kind of move (column s = stock place s).
KEYMAP = {
    "fits": "12345",  # play where it fits: your pile first
    "own": "qwert",  # play onto your own centre pile (drawn on the left)
    "opp": "asdfg",  # play onto the opponent's centre pile (drawn on the right)
    "fill": "zxcvb",  # fill an empty place from this place, or turn its top up (auto_flip off)
}
SLAP_KEYS = {"left": 0, "right": 1}  # slap your pile / the opponent's (egocentric piles)
#: Every key that asks for a move.
GAME_KEYS = tuple("".join(KEYMAP.values())) + tuple(SLAP_KEYS)


def key_action(key: str, mask) -> int | None:
    """The egocentric action id a key asks for (:data:`KEYMAP`, the arrows for SLAP).

    "Where it fits" and "fill or flip" pick the legal one (own pile first); if none is legal, the
    plain PLAY onto the own pile / FILL is returned (and refused by the game).

    Args:
        key: a key name: a lower-case letter or digit of :data:`KEYMAP`, "left" or "right".
        mask: (23,) bool, the human's legal moves.

    Returns:
        an action id 0-22, or None if the key is not a move key.
    """
    for kind, keys in KEYMAP.items():
        if len(key) == 1 and key in keys:
            s = keys.index(key)
            if kind == "own":
                return rules.play_action(s, 0)
            if kind == "opp":
                return rules.play_action(s, 1)
            if kind == "fits":
                legal = [a for a in (rules.play_action(s, 0), rules.play_action(s, 1)) if mask[a]]
                return legal[0] if legal else rules.play_action(s, 0)
            legal = [a for a in (rules.fill_action(s), rules.flip_action(s)) if mask[a]]
            return legal[0] if legal else rules.fill_action(s)
    if key in SLAP_KEYS:
        return rules.slap_action(SLAP_KEYS[key])
    return None


def key_of(action: int) -> str | None:
    """The key that asks for ``action`` (egocentric id 0-22), whatever the mask.

    The inverse of :func:`key_action` for every move: a PLAY by its pile's row (Q-T / A-G), FILL
    and FLIP by Z-B, SLAP by "left" / "right"; None for WAIT.
    """
    kind, s = int(rules.ACTION_KIND[action]), int(rules.ACTION_STOCK[action])
    c = int(rules.ACTION_PILE[action])
    if kind == rules.KIND_PLAY:
        return KEYMAP["own" if c == 0 else "opp"][s]
    if kind in (rules.KIND_FILL, rules.KIND_FLIP):
        return KEYMAP["fill"][s]
    if kind == rules.KIND_SLAP:
        return "left" if c == 0 else "right"
    return None


def press_key(game, key: str, wall_ms: float) -> tuple[int | None, str | None]:
    """Press a game key in ``game`` (a ``RealtimeGame``) at wall time ``wall_ms``.

    Returns:
        ``(action, refused)``: the action id the key asked for (None: not a game key, nothing
        done) and None if the game queued it, else why it was refused, in words ("7♥ fits
        neither pile" for a "where it fits" key with nothing to play).
    """
    action = key_action(key, game.human_mask())
    if action is None:
        return None, None
    refused = game.press(action, wall_ms)
    if refused and key in KEYMAP["fits"] and refused.startswith("not possible"):
        place = game.snapshot["stocks"][game.human][KEYMAP["fits"].index(key)]
        refused = f"{card_label(place[-1][0])} fits neither pile" if place and place[-1][1] \
            else "nothing to play from that place"
    return action, refused
