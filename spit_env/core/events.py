"""The events of a step (docs/RULES.md "Events"): the collector and the log ``step`` returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import rules

__all__ = ["EventLog", "Events", "event_collector"]


@dataclass
class EventLog:
    """Events of one step of B games (docs/RULES.md "Events").

    (N,) int64 arrays grouped by row, in occurrence order within a row. ``type`` indexes
    rules.EVENT_NAMES.
    """

    row: np.ndarray
    type: np.ndarray
    player: np.ndarray
    clock_ms: np.ndarray
    action: np.ndarray
    card: np.ndarray
    pile: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return int(self.row.shape[0])

    def for_row(self, row: int) -> list[dict]:
        """The events of one row as dicts, like the reference game's."""
        lo, hi = np.searchsorted(self.row, [row, row + 1])
        out = []
        for i in range(lo, hi):
            ev = {"type": rules.EVENT_NAMES[int(self.type[i])]}
            for name in rules.EVENT_FIELDS[1:]:
                ev[name] = int(getattr(self, name)[i])
            out.append(ev)
        return out


class Events:
    """Collects event columns during one step; rows get grouped at the end (stable by row).

    ``keep``: None (every event) or a (len(EVENT_NAMES),) bool array, the event types kept.
    """

    def __init__(self, keep=None):
        self.parts = []
        self.keep = keep

    def add(self, idx, type_, player, clock, action=-1, card=-1, pile=-1, value=0):
        """Events at rows ``idx`` ((n,) ints); every other column one value or (n,) values."""
        n = len(idx)
        if n == 0:
            return
        if self.keep is not None:
            if not isinstance(type_, np.ndarray):
                if not self.keep[type_]:
                    return
            else:
                k = self.keep[type_]
                if not k.all():
                    n = int(k.sum())
                    if n == 0:
                        return
                    idx, type_, player, clock, action, card, pile, value = (
                        c[k] if isinstance(c, np.ndarray) else c
                        for c in (idx, type_, player, clock, action, card, pile, value))
        # arrays are taken as they are now; a scalar (most columns of most events) is kept as
        # one int and widened to n rows only in log(), which is cheaper than broadcasting here
        cols = [idx, type_, player, clock, action, card, pile, value]
        self.parts.append((n, [np.asarray(c, np.int64) if isinstance(c, np.ndarray) else c
                               for c in cols]))

    def log(self) -> EventLog:
        """The events collected, grouped by row."""
        if not self.parts:
            e = np.zeros(0, np.int64)
            return EventLog(e, e, e, e, e, e, e, e)
        cols = [np.concatenate([c[i] if isinstance(c[i], np.ndarray) else np.full(n, c[i], np.int64)
                                for n, c in self.parts]) for i in range(8)]
        order = np.argsort(cols[0], kind="stable")
        return EventLog(*[c[order] for c in cols])


def event_collector(events) -> Events | None:
    """The step's event collector for its ``events`` argument (None: no events).

    Raises:
        ValueError: ``events`` is neither a bool nor a collection of event names.
    """
    if events is None or isinstance(events, (bool, np.bool_, int, np.integer)):
        return Events() if events else None
    if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
        raise ValueError(f"events must be True, False or a collection of event names "
                         f"{rules.EVENT_NAMES}, got {events!r}")
    keep = np.zeros(len(rules.EVENT_NAMES), bool)
    for name in events:
        if name not in rules.EVENT_NAMES:
            raise ValueError(f"events: unknown event name {name!r}; allowed: {rules.EVENT_NAMES}")
        keep[rules.EVENT_NAMES.index(name)] = True
    return Events(keep)
