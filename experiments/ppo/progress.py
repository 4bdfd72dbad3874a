"""Progress of a PPO run (used by ``experiments.train_ppo``): ``spit_env.progress`` inside SB3.

:class:`ProgressCallback` counts the learner decisions of ``model.learn()`` into a
:class:`spit_env.progress.Progress`: a bar on a terminal, plain lines in a log file (one per
``1/lines`` of the steps and at least every 30 s). The evaluations during training run inside
the progress's ``paused()`` (``experiments.ppo.schedule.ScheduleCallback``), so the rate it shows
is the training rate without them, the figure the run's summary prints, with the wall rate
beside it; one line, wrapped here::

    training: 250,880/1,000,448 steps (25%) | 1,321 steps/s without evaluations (01:02 of
      them; 1,105 with) | elapsed 03:47 | ETA 11:18 | last eval @200,704: random 0.93,
      greedy 0.52, racer 0.47
"""

from __future__ import annotations

from collections.abc import Callable

from stable_baselines3.common.callbacks import BaseCallback

from spit_env.progress import Progress

__all__ = ["ProgressCallback", "training_progress", "eval_postfix", "DEFAULT_LINES"]

#: Plain lines a run prints by default (one per 5% of the steps).
DEFAULT_LINES = 20


def eval_postfix(latest_eval: Callable[[], tuple[int, dict[str, float]] | None]):
    """A postfix for :class:`Progress`: "last eval @N: random 0.93, greedy 0.52" (or nothing).

    Args:
        latest_eval: returns the latest evaluation as ``(timesteps, {opponent: win rate})``, or
            None before the first.
    """
    def postfix() -> str | None:
        latest = latest_eval()
        if latest is None:
            return None
        steps, rates = latest
        return f"last eval @{steps:,}: " + ", ".join(f"{n} {r:.2f}" for n, r in rates.items())
    return postfix


def training_progress(total_timesteps: int, *, lines: int = DEFAULT_LINES, latest_eval=None,
                      enabled: bool = True, stream=None, clock=None) -> Progress:
    """The progress of ``model.learn(total_timesteps)``: steps, training rate, evaluations.

    Args:
        total_timesteps: the steps of this run (after a resume, the steps added).
        lines: plain lines over the run when the stream is not a terminal.
        latest_eval: as :func:`eval_postfix` (None: no postfix).
        enabled: False shows nothing.
        stream: where it writes (default sys.stderr).
        clock: seconds as a float (tests).

    Raises:
        ValueError: ``total_timesteps`` or ``lines`` not positive.
    """
    if total_timesteps <= 0:
        raise ValueError(f"total_timesteps must be positive, got {total_timesteps}")
    kwargs = {} if clock is None else {"clock": clock}
    return Progress(total_timesteps, "training", unit="steps", lines=lines, enabled=enabled,
                    stream=stream, paused_label="evaluations",
                    postfix=eval_postfix(latest_eval) if latest_eval is not None else None,
                    **kwargs)


class ProgressCallback(BaseCallback):
    """Counts ``model.learn()``'s learner decisions into ``progress`` and closes it at the end.

    The count is the steps done in this ``learn()`` call (SB3 rounds ``total_timesteps`` up to
    whole rollouts, so the last count may pass the total; the total then follows it).
    """

    def __init__(self, progress: Progress):
        super().__init__()
        self.progress = progress
        self._start_steps = 0

    def _on_training_start(self) -> None:
        self._start_steps = int(self.model.num_timesteps)

    def _on_step(self) -> bool:
        done = int(self.model.num_timesteps) - self._start_steps
        if self.progress.total is not None and done > self.progress.total:
            self.progress.set_total(done)
        self.progress.update(done - self.progress.n)
        return True

    def _on_training_end(self) -> None:
        self.progress.close()
