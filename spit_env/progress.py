"""Progress of long work: a bar on a terminal, plain lines with rate and ETA anywhere else.

The one progress reporter of the project: the scripts, the match library's pairings (as their
``progress`` callback: a :class:`Progress` is called with the count just done), the training
loops and the notebook runs all use it::

    with Progress(2000, "final evaluation vs greedy", unit="games") as progress:
        play_pairing(me, "greedy", 1000, progress=progress)   # progress(n) after n more games

When its stream is a terminal it draws a tqdm bar. Anywhere else (a log file, a pipe, CI, a
notebook's output) it prints plain lines, one each time another ``1/lines`` of the total is done
and at least every ``every_s`` seconds while work goes on (never two within ``min_gap_s``), and
a last one at the end, so a step of a few seconds prints one line::

    final evaluation vs greedy: 1,200/2,000 games (60%) | 35.2 games/s | elapsed 00:34 | ETA 00:23

Time spent inside :meth:`Progress.paused` (an evaluation during training, say) is left out of
the rate and named beside it, so the rate counts only the work the bar counts; the ETA uses the
wall rate, pauses included, since they recur (but for a pause before any work is counted, such as
the evaluation at step 0: a one-off).

Work whose items cost unequal time (a tournament's games: a planner's game costs a hundred times a
bot's) is counted in groups with a cost each (``groups=[(count, cost), ...]``, ``update(n,
group=i)``): the percentage and the ETA are then of the work, the sum of count x cost, so the
ETA is the work left over the rate of work so far, not the games left over the rate of games.

It imports nothing of the package and tqdm only
for a bar (without tqdm, a terminal gets the plain lines too).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Sequence

__all__ = ["Progress", "counted", "format_duration", "format_rate", "is_terminal"]


def is_terminal(stream) -> bool:
    """Whether ``stream`` is an interactive terminal (a bar can redraw itself there)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural but for one: ``"1 pairing"``, ``"6 pairings"``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def format_duration(seconds: float | None) -> str:
    """``MM:SS`` or ``H:MM:SS``; ``"?"`` for None or a value that is not finite."""
    if seconds is None or seconds != seconds or seconds in (float("inf"), float("-inf")):
        return "?"
    s = max(0, int(round(seconds)))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


def format_rate(count: float, seconds: float, unit: str) -> str:
    """A rate with the precision it needs: ``"1,321 steps/s"``, ``"35.2 games/s"``.

    Slower than one a second, the time of one: ``"3.4 s per iteration"`` (``unit`` without its
    plural s).
    """
    if seconds <= 0 or count <= 0:
        return f"? {unit}/s"
    rate = count / seconds
    if rate >= 100:
        return f"{rate:,.0f} {unit}/s"
    if rate >= 10:
        return f"{rate:.1f} {unit}/s"
    if rate >= 1:
        return f"{rate:.2f} {unit}/s"
    one = unit[:-1] if unit.endswith("s") and len(unit) > 1 else unit
    return f"{1 / rate:.1f} s per {one}"


class Progress:
    """Progress of one long step (module docstring): call it, or :meth:`update`, with counts.

    Args:
        total: the count at the end (None: unknown; no percentage or ETA then).
        desc: what is being done, the start of every line ("tournament").
        unit: what is counted, plural ("games", "steps"); rates are per second of it.
        stream: where it writes (default: sys.stderr at the time of writing).
        enabled: False writes nothing (a ``--quiet`` run); the counts are still kept.
        bar: True a tqdm bar, False plain lines, None (default): a bar on a terminal only.
        lines: plain lines over the whole count (one per ``1/lines`` of it), > 0.
        every_s: a plain line at least this often while updates come, seconds, > 0.
        min_gap_s: no plain line sooner than this after the previous one (or the start),
            seconds, >= 0; the last line comes anyway.
        paused_label: what the paused time is, shown beside the rate ("evaluations").
        postfix: called for extra text at the end of each line (the latest evaluation...).
        clock: seconds as a float (default ``time.perf_counter``; tests pass their own).
        groups: the work in groups of unequal cost, [(count, cost per item)]: ``total`` is then
            the sum of the counts (give None or that sum), and the percentage and the ETA are
            of the work (count x cost); :meth:`update` names each count's group.

    Raises:
        ValueError: a total below 0, ``lines`` or ``every_s`` not positive, ``min_gap_s`` < 0,
            a group's count < 0 or cost not > 0, a total that is not the groups' count.
    """

    def __init__(self, total: int | None, desc: str, *, unit: str = "steps", stream=None,
                 enabled: bool = True, bar: bool | None = None, lines: int = 10,
                 every_s: float = 30.0, min_gap_s: float = 2.0, paused_label: str | None = None,
                 postfix: Callable[[], str | None] | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 groups: Sequence[tuple[int, float]] | None = None):
        self.groups = None if groups is None else [(int(c), float(w)) for c, w in groups]
        if self.groups is not None:
            if any(c < 0 or not w > 0 for c, w in self.groups):
                raise ValueError(f"groups must be (count >= 0, cost > 0) pairs, got {groups}")
            counted_total = sum(c for c, _ in self.groups)
            if total is not None and total != counted_total:
                raise ValueError(f"total ({total}) must be the groups' count ({counted_total})")
            total = counted_total
        if total is not None and total < 0:
            raise ValueError(f"total must be None or >= 0, got {total}")
        if lines <= 0:
            raise ValueError(f"lines must be positive, got {lines}")
        if not every_s > 0:
            raise ValueError(f"every_s must be positive, got {every_s}")
        if not min_gap_s >= 0:
            raise ValueError(f"min_gap_s must be >= 0, got {min_gap_s}")
        self.total = None if total is None else int(total)
        self.desc = desc
        self.unit = unit
        self.stream = stream
        self.enabled = enabled
        self.lines = int(lines)
        self.every_s = float(every_s)
        self.min_gap_s = float(min_gap_s)
        self.paused_label = paused_label
        self.postfix = postfix
        self.clock = clock
        self.n = 0
        #: the work done (count x cost, summed; the count itself without groups)
        self.work = 0.0
        #: seconds spent inside :meth:`paused`
        self.paused_s = 0.0
        #: the plain lines written so far (also kept when writing a bar: the last state)
        self.written: list[str] = []
        self.closed = False
        self._closed_at: float | None = None
        self._start = clock()
        self._last_line_t = self._start
        self._next_fraction = 1
        self._pause_t: float | None = None
        self._upfront_s = 0.0
        self._bar = None
        self._last_draw = -1.0
        if enabled and (bar if bar is not None else is_terminal(self._out())):
            self._bar = self._make_bar()

    # --- counting -------------------------------------------------------------------------------
    def __call__(self, n: int = 1) -> None:
        """The match library's callback form: ``n`` more done."""
        self.update(n)

    def update(self, n: int = 1, group: int | None = None) -> None:
        """Count ``n`` more done (of ``group``, with groups); write a line or redraw the bar.

        Raises:
            ValueError: with groups, ``group`` not one of their indices.
        """
        if self.groups is not None:
            if group is None or not 0 <= group < len(self.groups):
                raise ValueError(f"group must be an index of the "
                                 f"{counted(len(self.groups), 'group')}, got {group}")
            self.work += int(n) * self.groups[group][1]
        else:
            self.work += int(n)
        self.n += int(n)
        if not self.enabled or self.closed:
            return
        now = self.clock()
        if self._bar is not None:
            if now - self._last_draw >= 0.1:
                self._draw(now)
            return
        since = now - self._last_line_t
        due_fraction = (self.total is not None and self.total > 0 and self.n < self.total
                        and self._fraction() * self.lines >= self._next_fraction)
        done = self.total is not None and self.n >= self.total  # the last line is close()'s
        if not done and ((due_fraction and since >= self.min_gap_s) or since >= self.every_s):
            self._write(now)

    def set_total(self, total: int | None) -> None:
        """Change the expected total (a count known only once work has started)."""
        self.total = None if total is None else int(total)
        if self._bar is not None:
            self._bar.total = self.total

    @contextlib.contextmanager
    def paused(self):
        """Leave the time of the ``with`` block out of the rate (it is named beside it)."""
        start = self.clock()
        self._pause_t = start
        try:
            yield self
        finally:
            took = self.clock() - start
            self.paused_s += took
            if self.n == 0:  # before any work: a one-off, left out of the ETA too
                self._upfront_s += took
            self._pause_t = None

    # --- reading ----------------------------------------------------------------------------------
    @property
    def total_work(self) -> float | None:
        """The work at the end: the total, or with groups the sum of count x cost."""
        if self.groups is not None:
            return sum(c * w for c, w in self.groups)
        return None if self.total is None else float(self.total)

    def _fraction(self) -> float:
        """The share of the work done, in [0, 1] (1 for no work)."""
        total = self.total_work
        return 1.0 if not total else min(self.work / total, 1.0)

    def _now(self) -> float:
        """The clock, or the time of :meth:`close` once closed (the figures stop there)."""
        return self._closed_at if self._closed_at is not None else self.clock()

    @property
    def elapsed_s(self) -> float:
        """Wall seconds since the start (until :meth:`close`)."""
        return self._now() - self._start

    @property
    def working_s(self) -> float:
        """Seconds since the start outside :meth:`paused` blocks (until :meth:`close`).

        After :meth:`close` it is the figure the last line's rate was computed from, so a
        summary that divides :attr:`n` by it prints that rate exactly.
        """
        now = self._now()
        inside = now - self._pause_t if self._pause_t is not None else 0.0
        return now - self._start - self.paused_s - inside

    def text(self, now: float | None = None, *, with_count: bool = True) -> str:
        """The state as one line (without ``desc``): count, rate, elapsed, ETA, postfix."""
        now = self._now() if now is None else now
        elapsed = now - self._start
        inside = now - self._pause_t if self._pause_t is not None else 0.0
        working = elapsed - self.paused_s - inside
        parts = []
        if with_count:
            if self.total is not None:
                # rounded down: 199 of 200 is not yet 100%
                pct = int(100 * self._fraction() + 1e-9)
                parts.append(f"{self.n:,}/{self.total:,} {self.unit} ({pct}%)")
            else:
                parts.append(f"{self.n:,} {self.unit}")
        rate = format_rate(self.n, working, self.unit)
        if self.paused_label and self.paused_s > 0:
            wall = format_rate(self.n, elapsed, self.unit)
            # "1,667 with" beside "2,500 steps/s"; a slow one whole: "4.4 s per step with"
            wall = wall.rsplit(" ", 1)[0] if wall.endswith("/s") else wall
            rate += (f" without {self.paused_label} ({format_duration(self.paused_s)} of them; "
                     f"{wall} with)")
        parts.append(rate)
        parts.append(f"elapsed {format_duration(elapsed)}")
        if self.total is not None:
            left = max(self.total_work - self.work, 0.0)
            since = elapsed - self._upfront_s
            eta = 0.0 if left == 0 else (left * since / self.work if self.work and since > 0
                                         else None)
            parts.append(f"ETA {format_duration(eta)}")
        extra = self.postfix() if self.postfix is not None else None
        if extra:
            parts.append(extra)
        return " | ".join(parts)

    # --- writing --------------------------------------------------------------------------------
    def _out(self):
        return self.stream if self.stream is not None else sys.stderr

    def _make_bar(self):
        try:
            from tqdm import tqdm
        except ImportError:  # tqdm comes with the [train] extra; plain lines without it
            return None
        return tqdm(total=self.total, desc=self.desc, file=self._out(), leave=True,
                    dynamic_ncols=True, mininterval=0.1,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}" if self.total
                    else "{desc}: {postfix}")

    def _draw(self, now: float) -> None:
        self._last_draw = now
        self._bar.n = self.n
        self._bar.set_postfix_str(self.text(now), refresh=True)

    def _write(self, now: float) -> None:
        self._last_line_t = now
        if self.total:
            self._next_fraction = int(self._fraction() * self.lines + 1e-9) + 1
        line = f"{self.desc}: {self.text(now)}"
        self.written.append(line)
        out = self._out()
        if out is not sys.stdout:  # keep the order of what the script printed before
            sys.stdout.flush()
        print(line, file=out, flush=True)

    def write(self, message: str, *, file=None, always: bool = False) -> None:
        """Print ``message`` on a line of its own (above the bar, if there is one).

        Args:
            message: the line.
            file: where it goes (default: the progress's stream); a result goes to sys.stdout,
                the bar stays on its own stream.
            always: write it even when the progress is disabled (a result, not a progress
                message).
        """
        if not (self.enabled or always):
            return
        file = self._out() if file is None else file
        if self._bar is not None:
            self._bar.write(message, file=file)
        else:
            if file is not sys.stdout:  # keep the order of what the script printed before
                sys.stdout.flush()
            print(message, file=file, flush=True)

    def close(self) -> None:
        """Write the last line (or the bar's final state) once; later updates write nothing."""
        if self.closed:
            return
        self.closed = True
        now = self._closed_at = self.clock()
        if not self.enabled:
            return
        if self._bar is not None:
            self._draw(now)
            self._bar.close()
            self.written.append(f"{self.desc}: {self.text(now)}")
        else:
            self._write(now)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
