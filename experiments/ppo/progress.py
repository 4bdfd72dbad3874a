"""Progress of a PPO run that shows in a log file (used by ``experiments.train_ppo``).

Plain lines when stdout is not a terminal.

SB3's ``progress_bar=True`` draws a rich/tqdm bar, which rich turns off when the output is not a
terminal (a log file, CI): nothing shows. :class:`ProgressLines` prints one line instead each time
another ``every`` learner decisions are done, formatted by tqdm (``tqdm.format_meter``); one line,
wrapped here::

    progress 250,880/1,000,448 steps (25%) | 2718.09 steps/s | elapsed 01:32 | ETA 04:35
      | last eval @200,704: random 0.93, greedy 0.52, racer 0.47

:func:`progress_callback` picks the bar for a terminal and the lines otherwise.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from stable_baselines3.common.callbacks import BaseCallback, ProgressBarCallback
from tqdm import tqdm

__all__ = ["ProgressLines", "progress_callback", "DEFAULT_LINES"]

#: Lines a run prints by default (one per 5% of the steps).
DEFAULT_LINES = 20

_FORMAT = ("{n:,}/{total:,} steps ({percentage:.0f}%) | {rate_fmt} | elapsed {elapsed} "
           "| ETA {remaining}")


class ProgressLines(BaseCallback):
    """Print a progress line every ``every`` learner decisions, and one at the end.

    Args:
        total_timesteps: the steps of this run (``learn(total_timesteps=...)``; after a resume,
            the steps added to the checkpoint's count).
        every: steps between two lines (> 0).
        latest_eval: returns the latest evaluation during training as ``(timesteps, {opponent:
            win rate})``, or None before the first; shown at the end of each line.
        file: where the lines go (default: sys.stdout at the time of printing), flushed at once.
        clock: seconds as a float (default ``time.perf_counter``).

    Raises:
        ValueError: ``total_timesteps`` or ``every`` not positive.
    """

    def __init__(self, total_timesteps: int, every: int,
                 latest_eval: Callable[[], tuple[int, dict[str, float]] | None] | None = None,
                 file=None, clock: Callable[[], float] = time.perf_counter):
        super().__init__()
        if total_timesteps <= 0:
            raise ValueError(f"total_timesteps must be positive, got {total_timesteps}")
        if every <= 0:
            raise ValueError(f"every must be positive, got {every}")
        self.total = int(total_timesteps)
        self.every = int(every)
        self.latest_eval = latest_eval
        self.file = file
        self.clock = clock
        self.lines: list[str] = []
        self._start_steps = 0
        self._start_time = 0.0
        self._next = 0

    def _on_training_start(self) -> None:
        self._start_steps = int(self.model.num_timesteps)
        self._start_time = self.clock()
        self._next = self.every

    def _on_step(self) -> bool:
        done = int(self.model.num_timesteps) - self._start_steps
        if done >= self._next and done < self.total:
            self._next = (done // self.every + 1) * self.every
            self._print(done)
        return True

    def _on_training_end(self) -> None:
        self._print(int(self.model.num_timesteps) - self._start_steps)

    def line(self, done: int, elapsed: float) -> str:
        """The progress line after ``done`` steps in ``elapsed`` seconds."""
        text = "progress " + tqdm.format_meter(
            done, max(self.total, done), elapsed, unit=" steps", bar_format=_FORMAT)
        latest = self.latest_eval() if self.latest_eval is not None else None
        if latest is not None:
            steps, rates = latest
            text += f" | last eval @{steps:,}: " + ", ".join(
                f"{name} {rate:.2f}" for name, rate in rates.items())
        return text

    def _print(self, done: int) -> None:
        text = self.line(done, self.clock() - self._start_time)
        self.lines.append(text)
        print(text, file=self.file if self.file is not None else sys.stdout, flush=True)


def progress_callback(total_timesteps: int, lines: int = DEFAULT_LINES, latest_eval=None,
                      stream=None) -> BaseCallback:
    """SB3's progress bar for a terminal, else :class:`ProgressLines`.

    Args:
        total_timesteps: the steps of this run.
        lines: about how many lines :class:`ProgressLines` prints over the run.
        latest_eval: as :class:`ProgressLines`.
        stream: where the progress goes (default sys.stdout); the bar when it is a terminal.
    """
    stream = sys.stdout if stream is None else stream
    if getattr(stream, "isatty", lambda: False)():
        return ProgressBarCallback()
    every = max(1, -(-int(total_timesteps) // max(1, lines)))
    return ProgressLines(total_timesteps, every, latest_eval=latest_eval, file=stream)
