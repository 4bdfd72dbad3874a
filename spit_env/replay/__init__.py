"""Replays: one game as a JSON record (``record``) and as a self-contained HTML page (``html``).

``from spit_env import replay`` gives the record's functions (``Recorder``, ``save``, ``load``,
``validate``, ``rebuild``, ``check``, ...) and the page's (``replay_html``, ``write_html``,
``card_label``); the page's assets (CSS, JavaScript, the HTML shell) are in ``page/``.
"""

from __future__ import annotations

from .html import SUIT_SYMBOLS, card_label, marks_of, moves_of, replay_html, write_html
from .record import (
    SCHEMA,
    SCHEMA_VERSION,
    Recorder,
    check,
    deal_of,
    load,
    outcome_of,
    rebuild,
    save,
    validate,
)

__all__ = ["SCHEMA", "SCHEMA_VERSION", "Recorder", "deal_of", "outcome_of", "save", "load",
           "validate", "rebuild", "check", "replay_html", "write_html", "moves_of", "marks_of",
           "card_label", "SUIT_SYMBOLS"]
