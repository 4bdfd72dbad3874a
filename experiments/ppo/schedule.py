"""What changes during a PPO run (used by ``experiments.train_ppo``).

The opponents (curriculum stages, weighted mixes, the self-play pool), the evaluations and the
learning curve.

:class:`OpponentSchedule` holds that state and acts on the row groups of the training env
(``experiments.ppo.envs.OpponentGroups``); :class:`ScheduleCallback` calls it from SB3's
training loop. :class:`PortableCheckpoints` saves the model every so many steps, in the portable
file format (``agents.ppo_model.save_model``) as every model file of a run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback

from agents.network import NetworkPolicy
from agents.ppo_model import save_model
from experiments.ppo.envs import OpponentGroups, split_groups

__all__ = ["Stage", "stage_label", "OpponentSchedule", "ScheduleCallback", "Checkpoints",
           "LEAGUE_WEIGHTINGS", "loss_weights"]

#: How the members of a mix share the row groups: by their given weights, or by the agent's
#: losses.
LEAGUE_WEIGHTINGS = ("fixed", "losses")

#: A curriculum stage: its opponents as (profile, weight) pairs, e.g.
#: ``[("random", .3), ("greedy", .7)]``.
Stage = list[tuple[str, float]]


def stage_label(members: Stage) -> str:
    """A stage as written on the command line: "greedy" or "random:0.3,greedy:0.7"."""
    if len(members) == 1:
        return members[0][0]
    return ",".join(f"{n}:{w:g}" for n, w in members)


class OpponentSchedule:
    """The opponents, evaluations and learning curve of one run.

    Stages switch at fixed fractions of ``total_timesteps`` (``curriculum_switch``, default equal
    parts) or, with ``curriculum_threshold``, as soon as the evaluation win rate against the
    current stage (its members weighted) reaches it. With ``self_play_every`` a frozen copy of
    the model (a sampling :class:`agents.network.NetworkPolicy`) joins a pool of the newest
    ``self_play_pool`` snapshots, which then takes ``1 - self_play_bot_weight`` of the row groups
    (newest first); the stage's members share the rest by weight.

    Args:
        stages: the curriculum, at least one stage.
        groups: the training env's row groups.
        evaluate: ``evaluate(model, opponent specs, deals, desc=...) -> {spec: result dict}``
            (desc: what the progress lines call the evaluation).
        eval_opponents: the bots every evaluation plays.
        eval_freq: steps between evaluations during training (0: none); the first is at the
            start, before any update (:class:`ScheduleCallback`).
        eval_deals: duplicate deals per opponent of those evaluations.
        total_timesteps: the steps of this run.
        curriculum_switch: fractions of ``total_timesteps`` at which stages switch.
        curriculum_threshold: switch on the evaluation win rate instead (None: off).
        self_play_every: steps between snapshots (None: no self-play).
        self_play_pool: snapshots kept.
        self_play_bot_weight: the bots' share of the groups once the pool is not empty.
        best_path: if given, every evaluation scores the model by its mean win rate over
            ``eval_opponents`` and saves it here (``agents.ppo_model.save_model``) when it beats
            the best score so far (SB3's ``EvalCallback`` keeps a best model the same way, by
            mean reward).
        league_weighting: "fixed" (the stage's weights) or "losses": every evaluation during
            training also plays the stage's members, and their shares of the bots' row groups
            become :func:`loss_weights` of the win rates (prioritized fictitious self-play:
            more games against the opponents the agent loses to).
    """

    def __init__(self, stages: Sequence[Stage], groups: OpponentGroups,
                 evaluate: Callable[..., dict], eval_opponents: Sequence[str], *,
                 eval_freq: int, eval_deals: int, total_timesteps: int,
                 curriculum_switch: Sequence[float] = (), curriculum_threshold: float | None = None,
                 self_play_every: int | None = None, self_play_pool: int = 5,
                 self_play_bot_weight: float = 0.5, best_path=None,
                 league_weighting: str = "fixed"):
        self.stages = list(stages)
        self.groups = groups
        self.evaluate = evaluate
        self.eval_opponents = list(eval_opponents)
        self.eval_freq = eval_freq
        self.eval_deals = eval_deals
        self.total_timesteps = total_timesteps
        self.curriculum_switch = list(curriculum_switch)
        self.curriculum_threshold = curriculum_threshold
        self.self_play_every = self_play_every
        self.self_play_pool = self_play_pool
        self.self_play_bot_weight = self_play_bot_weight
        self.best_path = best_path
        if league_weighting not in LEAGUE_WEIGHTINGS:
            raise ValueError(f"league_weighting must be one of {LEAGUE_WEIGHTINGS}, "
                             f"got {league_weighting!r}")
        self.league_weighting = league_weighting
        #: the latest win rate against each stage member ("losses" weighting), by profile
        self.member_win_rates: dict[str, float] = {}
        #: the best evaluation so far, {"timesteps", "score"} (with best_path), else None
        self.best: dict | None = None
        self.stage = 0
        self.pool: list = []
        self.pool_steps: list[int] = []
        #: evaluations during training: {"timesteps", "deals", "stage", "score", "results"}
        #: (score: the mean win rate over eval_opponents)
        self.history: list[dict] = []
        #: (timesteps, mean episode reward of the last 100 episodes) after each rollout
        self.episode_curve: list[tuple[int, float]] = []
        #: stage switches and pool changes, with the groups' opponents
        self.stage_log: list[dict] = []
        self.switch_at: list[int] = []
        self.next_eval: int | None = None
        self.next_snapshot: int | None = None
        self.end = 0

    def on_start(self, model) -> None:
        """Call once before ``learn()`` (after a resume, the step count is the checkpoint's)."""
        start = int(model.num_timesteps)
        self.end = start + self.total_timesteps  # the final evaluation comes after learn()
        if self.curriculum_threshold is None and len(self.stages) > 1:
            fractions = self.curriculum_switch or [
                k / len(self.stages) for k in range(1, len(self.stages))]
            self.switch_at = [start + int(f * self.total_timesteps) for f in fractions]
        self.next_eval = start + self.eval_freq if self.eval_freq else None
        self.next_snapshot = start + self.self_play_every if self.self_play_every else None
        self.set_stage(0, model)

    def set_stage(self, stage: int, model) -> None:
        """Move to curriculum stage ``stage`` and give the groups its opponents."""
        self.stage = stage
        self.stage_log.append({"timesteps": int(model.num_timesteps), "stage": stage,
                               "opponent": stage_label(self.stages[stage])})
        self.apply_opponents()

    def apply_opponents(self) -> None:
        """Give every row group its opponent.

        The stage's members share the groups by weight; once the self-play pool is not empty,
        ``1 - self_play_bot_weight`` of the groups go to its snapshots (newest first).
        """
        members = self.member_weights()
        n_groups = self.groups.n_groups
        n_bot = n_groups
        if self.pool:
            n_bot = split_groups([self.self_play_bot_weight, 1 - self.self_play_bot_weight],
                                 n_groups)[0]
        counts = split_groups([w for _, w in members], n_bot) if n_bot else [0] * len(members)
        plan = [(name, name) for (name, _), c in zip(members, counts, strict=True)
                for _ in range(c)]
        for k in range(n_groups - n_bot):
            j = len(self.pool) - 1 - k % len(self.pool)
            plan.append((self.pool[j], f"snapshot@{self.pool_steps[j]}"))
        for g, (opponent, label) in enumerate(plan):
            self.groups.set_group_opponent(g, opponent, label)
        if self.stage_log:
            labels = self.groups.labels
            self.stage_log[-1]["groups"] = list(labels)
            rows: dict[str, int] = {}
            for size, label in zip(np.diff(self.groups.bounds), labels, strict=True):
                rows[label] = rows.get(label, 0) + int(size)
            self.stage_log[-1]["rows"] = rows

    def member_weights(self) -> Stage:
        """The current stage's members with their weights now.

        The stage's own weights, or, with ``league_weighting="losses"`` and an evaluation of
        every member, :func:`loss_weights` of the latest win rates against them.
        """
        members = self.stages[self.stage]
        rates = self.member_win_rates
        if self.league_weighting != "losses" or any(n not in rates for n, _ in members):
            return members
        weights = loss_weights([rates[n] for n, _ in members])
        return [(n, float(w)) for (n, _), w in zip(members, weights, strict=True)]

    def on_step(self, model, logger) -> None:
        """After each environment step: switch stages and add snapshots when due."""
        n = int(model.num_timesteps)
        if self.stage < len(self.switch_at) and n >= self.switch_at[self.stage]:
            self.set_stage(self.stage + 1, model)
        if self.next_snapshot is not None and n >= self.next_snapshot:
            snapshot = NetworkPolicy(model, deterministic=False)
            self.pool = (self.pool + [snapshot])[-self.self_play_pool:]
            self.pool_steps = (self.pool_steps + [n])[-self.self_play_pool:]
            self.next_snapshot += self.self_play_every
            self.stage_log.append({"timesteps": n, "stage": self.stage,
                                   "self_play_pool": len(self.pool),
                                   "opponent": stage_label(self.stages[self.stage])})
            self.apply_opponents()
            logger.record("self_play/pool_size", len(self.pool))

    def on_rollout_start(self, model, logger) -> None:
        """Before each rollout, after the update of the last one: evaluate when due.

        Here the model is the one trained on exactly ``model.num_timesteps`` steps, the label of
        the evaluation (in the middle of a rollout it would still be the model of the previous
        update). The evaluation after the last rollout is the final one (after ``learn()``).
        """
        n = int(model.num_timesteps)
        if self.next_eval is not None and n >= self.next_eval and n < self.end:
            while self.next_eval <= n:  # one evaluation, however many intervals a rollout spans
                self.next_eval += self.eval_freq
            self.evaluate_now(model, logger)

    def latest_eval(self) -> tuple[int, dict[str, float]] | None:
        """The latest evaluation as (timesteps, {opponent: win rate}), None before the first."""
        if not self.history:
            return None
        last = self.history[-1]
        return last["timesteps"], {s: r["win_rate"] for s, r in last["results"].items()}

    def evaluate_now(self, model, logger, *, start: bool = False) -> dict:
        """Evaluate, log the win rates, record them, and switch a threshold curriculum.

        Args:
            model: the model being trained.
            logger: SB3's logger (the win rates go to TensorBoard).
            start: this is the evaluation at the start of training (before any update).
        """
        threshold_mode = (self.curriculum_threshold is not None
                          and self.stage < len(self.stages) - 1)
        weighting = self.league_weighting == "losses" and len(self.stages[self.stage]) > 1
        specs = list(self.eval_opponents)
        if threshold_mode or weighting:
            specs += [s for s, _ in self.stages[self.stage] if s not in specs]
        n = int(model.num_timesteps)
        results = self.evaluate(model, specs, self.eval_deals,
                                desc=f"evaluation @{n:,}" + (" (start)" if start else ""))
        score = float(np.mean([results[s]["win_rate"] for s in self.eval_opponents]))
        self.history.append({"timesteps": n, "deals": self.eval_deals, "stage": self.stage,
                             "score": score, "results": results, "start": start})
        for spec, r in results.items():
            logger.record(f"eval/win_rate_{spec}", r["win_rate"])
        logger.record("eval/mean_win_rate", score)
        if self.best_path is not None and (self.best is None or score > self.best["score"]):
            self.best = {"timesteps": n, "score": score}
            save_model(model, self.best_path)
        switched = False
        if threshold_mode:
            members = self.stages[self.stage]
            total = sum(w for _, w in members)
            rate = sum(w * results[s]["win_rate"] for s, w in members) / total
            logger.record("curriculum/stage_win_rate", rate)
            if rate >= self.curriculum_threshold:
                self.set_stage(self.stage + 1, model)
                switched = True
        if weighting and not switched:
            self.member_win_rates = {s: results[s]["win_rate"] for s, _ in self.stages[self.stage]}
            self.stage_log.append({"timesteps": n, "stage": self.stage,
                                   "opponent": stage_label(self.member_weights())})
            self.apply_opponents()
        logger.record("curriculum/stage", self.stage)
        return results


def loss_weights(win_rates, power: float = 2.0, floor: float = 0.01) -> np.ndarray:
    """Opponent weights from the agent's win rates against them: ``(1 - p) ** power + floor``.

    AlphaStar's "hard" prioritized fictitious self-play weighting, f(p) = (1 - p)^2 (Vinyals et
    al., 2019); the floor keeps every opponent in play (``split_groups`` then gives it a group).

    Args:
        win_rates: (K,) the agent's win rates in [0, 1].
        power: the exponent of ``1 - p`` (2: AlphaStar's "hard" weighting).
        floor: added to every weight, so no opponent drops out.

    Returns:
        (K,) float64 weights, not normalised.
    """
    p = np.clip(np.asarray(win_rates, np.float64), 0.0, 1.0)
    return (1.0 - p) ** power + floor


class ScheduleCallback(BaseCallback):
    """Runs an :class:`OpponentSchedule` inside ``model.learn()``.

    At the start of training (before the first rollout, so before any update) it evaluates the
    model when evaluations during training are on and none was made at this step count (the
    first point of the learning curve: the warm-started model); before every later rollout it
    calls ``schedule.on_rollout_start`` (the evaluations when due, of the model just updated);
    after every step ``schedule.on_step``. That time, evaluations included, is summed in
    ``seconds`` and spent inside ``progress.paused()``, so the progress shows the training rate
    without it. After every rollout it records the mean episode reward.

    Args:
        schedule: the run's schedule.
        progress: the run's progress (``spit_env.progress.Progress``), or None.
    """

    def __init__(self, schedule: OpponentSchedule, progress=None):
        super().__init__()
        self.schedule = schedule
        self.progress = progress
        self.seconds = 0.0

    @contextlib.contextmanager
    def _timed(self):
        t = time.perf_counter()
        with self.progress.paused() if self.progress is not None else contextlib.nullcontext():
            try:
                yield
            finally:
                self.seconds += time.perf_counter() - t

    def _on_training_start(self) -> None:
        n = int(self.model.num_timesteps)
        if self.schedule.eval_freq and all(h["timesteps"] != n for h in self.schedule.history):
            with self._timed():
                self.schedule.evaluate_now(self.model, self.logger, start=True)

    def _on_rollout_start(self) -> None:
        with self._timed():
            self.schedule.on_rollout_start(self.model, self.logger)

    def _on_rollout_end(self) -> None:
        buf = self.model.ep_info_buffer
        if buf:
            self.schedule.episode_curve.append(
                (int(self.model.num_timesteps), float(np.mean([e["r"] for e in buf]))))

    def _on_step(self) -> bool:
        with self._timed():
            self.schedule.on_step(self.model, self.logger)
        return True


class Checkpoints(CheckpointCallback):
    """SB3's ``CheckpointCallback`` writing portable files, without the last rollout's.

    Each checkpoint is written by ``agents.ppo_model.save_model`` with Adam's state, so that
    ``--resume`` continues from it on any version the package admits. A checkpoint taken after
    step ``until`` (the start of the last rollout) would hold the model that the run folder's
    ``model.zip`` holds at the end (give or take that rollout's update), a second copy of the
    final model; ``model.zip`` is the last checkpoint instead (``--resume`` takes it). The folder
    is made with the first checkpoint, so a run that takes none (the default run: 1,000,000
    steps, one checkpoint every 1,000,000) leaves no empty ``checkpoints/``.

    Args:
        until: the last step count at which a checkpoint is still taken.
        **kwargs: as ``CheckpointCallback`` (save_freq, save_path, name_prefix, ...).
    """

    def __init__(self, *, until: int, **kwargs):
        super().__init__(**kwargs)
        self.until = int(until)

    def _init_callback(self) -> None:
        """Nothing to set up: the folder is made with the first checkpoint (SB3 makes it here)."""

    def _on_step(self) -> bool:
        if int(self.model.num_timesteps) > self.until:
            return True
        if self.n_calls % self.save_freq == 0:
            path = self._checkpoint_path(extension="zip")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            save_model(self.model, path)
            if self.verbose >= 2:
                print(f"Saving model checkpoint to {path}")
        return True
