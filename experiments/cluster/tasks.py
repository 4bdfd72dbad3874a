"""The match library's jobs as Ray tasks: ``python -m experiments.tournament --ray [ADDRESS]``.

:func:`run_jobs_on_ray` is an :data:`agents.arena.Runner`: every :class:`agents.arena.GameJob` (a
chunk of a pairing's deals in one seat order) becomes one Ray task of one CPU, all submitted at
once; the progress callback hears of each task's games as the task finishes. A job's games depend
only on the job (its game ids and policy stream), so the table is the local run's, number for
number, whatever the number of nodes or the order in which tasks finish.

Ray must already be initialised (``experiments.cluster.connect.ray_session``). Players given by a
path (a trained model, an RLlib checkpoint) are loaded by the task on its node: on a cluster the
path must be readable there too (a shared filesystem).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["run_jobs_on_ray"]


def _play(run_one: Callable, job) -> dict:
    return run_one(job)


def run_jobs_on_ray(jobs: list, run_one: Callable, progress: Callable[[int], None] | None = None,
                    *, num_cpus: float = 1) -> list:
    """Run ``run_one(job)`` for every job as a Ray task; outputs in the order of ``jobs``.

    Args:
        jobs: GameJobs (anything picklable with a ``count`` of deals).
        run_one: a picklable callable playing one job (a module-level function or a partial).
        progress: called with a task's number of games (``job.count``: one per deal, a job
            plays one seat order) as the task finishes.
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
    run_ref = ray.put(run_one)
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
                if progress is not None:
                    progress(int(jobs[i].count))
    except BaseException:
        for ref in pending:  # a failed or interrupted run leaves no task behind
            ray.cancel(ref, force=True)
        raise
    return outputs
