"""The match library's jobs as Ray tasks: ``python -m experiments.tournament --ray [ADDRESS]``.

:func:`run_jobs_on_ray` is an :data:`agents.arena.Runner`: every :class:`agents.arena.GameJob` (a
chunk of a pairing's deals in one seat order) becomes one Ray task of one CPU, all submitted at
once; the report callback hears of each task's games as the task finishes. A game depends only
on its game id, its players and the seed, never on the other games in its batch, so the table is
the local run's (all jobs in one batch), game for game, whatever the number of nodes, the chunks
or the order in which tasks finish.

Ray must already be initialised (``experiments.cluster.connect.ray_session``). Players given by a
path (a trained model, an RLlib checkpoint) are loaded by the task on its node: on a cluster the
path must be readable there too (a shared filesystem).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["run_jobs_on_ray"]


def _play(play: Callable, job) -> dict:
    return play([job])[0]


def run_jobs_on_ray(jobs: list, play: Callable,
                    report: Callable[[int, int], None] | None = None, *,
                    num_cpus: float = 1) -> list:
    """Run ``play([job])`` for every job as a Ray task; outputs in the order of ``jobs``.

    Args:
        jobs: GameJobs (anything picklable with a ``count`` of deals).
        play: a picklable callable playing a list of jobs and returning their outputs
            (``agents.arena.play_jobs`` with its settings bound, a partial).
        report: called as ``report(k, n)`` with the task's index k in ``jobs`` and its number
            of games n (``job.count``: one per deal, a job plays one seat order) as the task
            finishes.
        num_cpus: CPUs Ray reserves for each task.

    Raises:
        RuntimeError: Ray is not initialised.
        ray.exceptions.RayTaskError: a task failed (it wraps the task's own error, e.g. a
            model path that a node cannot read).
    """
    import ray

    if not ray.is_initialized():
        raise RuntimeError("Ray is not initialised: use experiments.cluster.connect.ray_session")
    if not jobs:
        return []
    task = ray.remote(num_cpus=num_cpus, max_retries=0)(_play)
    run_ref = ray.put(play)
    refs = [task.remote(run_ref, job) for job in jobs]
    where = {ref: i for i, ref in enumerate(refs)}
    outputs: list = [None] * len(refs)
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                i = where[ref]
                outputs[i] = ray.get(ref)
                if report is not None:
                    report(i, int(jobs[i].count))
    except BaseException:
        for ref in pending:  # a failed or interrupted run leaves no task behind
            ray.cancel(ref, force=True)
        raise
    return outputs
