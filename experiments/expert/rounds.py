"""The rounds of expert iteration, the run folder they write and the resumption of a run.

Round 0 clones a bot (``--bc-teacher``, racer): it plays the learner's seat, every decision with
a choice is labelled with its move (WAITs on purpose included), and a fresh network
(``experiments.expert.network``) fits its moves and the games' outcomes. Round k >= 1:

1. the network of round k - 1 plays the learner's seat against the ``--opponents`` mix (itself
   among them), and the planner, with that network as its reference move (and, with
   ``--rollout-policy network``, as the rollout policy of both seats), labels its positions
   (``experiments.expert.teachers.planner_teacher``: soft targets over the moves, the planner's
   value);
2. the network goes on from its weights and fits the round's positions (with ``--aggregate``,
   the planner's positions of every round so far), less a held-out share;
3. it is measured on the held-out positions (agreement with the planner, and on the
   positions where the planner departs from the network's move, how often it now makes that
   departure) and plays alone against ``--eval-opponents`` on duplicate deals of
   ``--eval-seed`` (``agents.arena.play_pairings``, 95% Wilson intervals).

Run folder: ``config.json`` (the settings), ``round_K/`` (``model.zip``, ``train.npz``,
``holdout.npz``), ``model.zip`` (the last round's network), ``rounds.json`` and ``rounds.csv``
(one row per round), ``curve.png`` (win rate per round) and ``state.json`` (the last finished
round, written last: a run stopped at any point resumes from there, the unfinished round played
again from its start, with the same games).

Randomness: round k's games are those of seed ``SeedSequence([seed, k])`` (each game's deal
and streams keyed by (that seed, game id)), its fit's minibatches and held-out split draw from
the same key, and the networks play deterministically, so a run is a function of its settings.
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from pathlib import Path

import numpy as np

from experiments.expert.args import NETWORK, Args, config_of
from experiments.expert.network import fit, new_network, scores
from experiments.expert.positions import Positions, collect, make_env
from experiments.expert.teachers import bot_teacher, planner_teacher
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.progress import Progress, format_rate

__all__ = ["run", "round_seed", "game_config", "plot_curve", "ROW_FIELDS"]

#: The columns of rounds.csv before the evaluation's (win_rate / ci_low / ci_high per opponent).
ROW_FIELDS = ("round", "teacher", "labels", "games", "label_seconds", "labels_per_s",
              "rollouts", "departure_rate", "positions_fit", "policy_loss", "value_loss",
              "agreement", "departures", "departure_agreement", "cross_entropy", "value_mse",
              "fit_seconds", "eval_seconds", "seconds")


def round_seed(seed: int, k: int) -> int:
    """The games' seed of round ``k`` of a run of ``seed`` (an integer >= 0)."""
    return int(np.random.SeedSequence([int(seed), int(k)]).generate_state(1)[0])


def game_config(args: Args) -> SpitConfig:
    """The config of every game of a run: the learner's, the planner's and the evaluation's.

    Both seats play at ``--eval-latency``; a game is truncated after ``--max-game-ms`` (D16).
    The planner's rollouts copy the labelled games' states (``PlannerBot.plan`` on the env's
    public table), so they play under this config too.
    """
    return SpitConfig(latency=Latency.parse(args.eval_latency), max_game_ms=args.max_game_ms)


def _write_json(path: Path, value) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=2))
    tmp.replace(path)  # whole or not at all


def _learner(args: Args, k: int, out: Path):
    """(model, learner policy, teach, teacher label, planner stats) of round ``k``."""
    from agents.network import NetworkPolicy, load_model
    from agents.planner import PlannerBot
    from spit_env.policy import make_policy

    if k == 0:
        model = new_network(args.arch, args.seed, args.learning_rate, config=game_config(args))
        bot = make_policy(args.bc_teacher)
        return model, bot, bot_teacher(bot), args.bc_teacher, None
    model = load_model(out / f"round_{k - 1}" / "model.zip")
    net = NetworkPolicy(model, deterministic=True, threads=args.torch_threads)
    planner = PlannerBot(rollouts=args.rollouts, horizon_ms=args.horizon_ms,
                         rollout_policy=net if args.rollout_policy == NETWORK
                         else args.rollout_policy,
                         win_weight=args.win_weight, confidence=args.confidence, reference=net)
    stats: dict = {}
    teach = planner_teacher(planner, args.temperature, args.target_score,
                            args.target_margin, stats)
    return model, net, teach, "planner", stats


def _evaluate(args: Args, path: Path, k: int, show: bool) -> tuple[dict, float]:
    """{opponent: PairingResult dict} of the network at ``path`` alone, and the seconds."""
    from agents.arena import Player, play_pairings

    t = time.perf_counter()
    me = Player(f"round {k}", "network", None, {"path": str(path)})
    games = 2 * args.eval_deals * len(args.eval_list)
    with Progress(games, f"round {k}: evaluation", unit="games", enabled=show) as progress:
        res = play_pairings([(me, o) for o in args.eval_list], args.eval_deals,
                            config=game_config(args), seed=args.eval_seed,
                            batch_size=args.eval_batch, report=lambda _, n: progress(n))
    return ({o: vars(r) for o, r in zip(args.eval_list, res, strict=True)},
            time.perf_counter() - t)


def _plain(value):
    """A row's value as strict JSON has it: floats rounded to 4 places, NaN as None (null)."""
    if isinstance(value, float):
        return None if value != value else round(value, 4)
    return value


def _one_round(args: Args, k: int, out: Path, show: bool) -> dict:
    """Play, label, fit, save and evaluate round ``k``; returns its row."""
    from agents.ppo_model import save_model

    t0 = time.perf_counter()
    folder = out / f"round_{k}"
    folder.mkdir(parents=True, exist_ok=True)
    seed = round_seed(args.seed, k)
    model, learner, teach, teacher, stats = _learner(args, k, out)
    positions, info = _label(args, k, seed, learner, teach, teacher, show)
    train, holdout = _split(args, positions, seed, folder)
    fit_on, losses, fit_seconds = _fit(args, k, out, model, train, seed, show)
    measured = scores(model, holdout if len(holdout) else train, args.value_target)
    save_model(model, folder / "model.zip")
    results, eval_seconds = _evaluate(args, folder / "model.zip", k, show)
    shutil.copyfile(folder / "model.zip", out / "model.zip")
    row = {
        "round": k, "teacher": teacher, "labels": info["labels"], "games": info["games"],
        "label_seconds": round(info["label_seconds"], 2),
        "labels_per_s": round(info["labels"] / max(info["label_seconds"], 1e-9), 1),
        "rollouts": (stats or {}).get("rollouts", 0),
        "departure_rate": round((stats or {}).get("deviations", 0) / info["labels"], 4),
        "positions_fit": len(fit_on), **{k2: round(v, 4) for k2, v in losses.items()},
        **{k2: _plain(v) for k2, v in measured.items()},
        "fit_seconds": round(fit_seconds, 2), "eval_seconds": round(eval_seconds, 2),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    for opp, r in results.items():
        row.update({f"win_rate_{opp}": round(r["win_rate"], 4),
                    f"ci_low_{opp}": round(r["ci_low"], 4),
                    f"ci_high_{opp}": round(r["ci_high"], 4)})
    return row


def _label(args: Args, k: int, seed: int, learner, teach, teacher: str,
           show: bool) -> tuple[Positions, dict]:
    """The learner's games of round ``k`` (seed ``seed``) and the teacher's labels on them."""
    env = make_env(args.num_envs, seed, args.opponent_mix, learner, game_config(args))
    budget = args.bc_labels if k == 0 else args.labels
    # the outcomes are needed by round 0's value target and by any but the planner's own
    positions, info = collect(env, learner, teach, budget, desc=f"round {k}: {teacher} labels",
                              finish=k == 0 or args.value_target != "plan", show_progress=show)
    env.close()
    return positions, info


def _split(args: Args, positions: Positions, seed: int,
           folder: Path) -> tuple[Positions, Positions]:
    """(train, holdout): the round's positions less a held-out share, both saved in ``folder``."""
    order = np.random.default_rng(seed).permutation(len(positions))
    n_hold = int(round(args.holdout * len(positions)))
    holdout = positions.take(np.sort(order[:n_hold]))
    train = positions.take(np.sort(order[n_hold:]))
    train.save(folder / "train.npz")
    holdout.save(folder / "holdout.npz")
    return train, holdout


def _fit(args: Args, k: int, out: Path, model, train: Positions, seed: int,
         show: bool) -> tuple[Positions, dict, float]:
    """Fit round ``k``'s network; (the positions it fitted, its losses, the seconds)."""
    fit_on = train
    if args.aggregate and k > 1:  # the planner's positions of the earlier rounds too
        fit_on = Positions.concat([Positions.load(out / f"round_{j}" / "train.npz")
                                   for j in range(1, k)] + [train])
    t = time.perf_counter()
    steps = args.bc_fit_steps if k == 0 else args.fit_steps
    with Progress(steps, f"round {k}: fitting", unit="steps", enabled=show) as progress:
        losses = fit(model, fit_on, value_target=args.value_target, steps=steps,
                     batch_size=args.fit_batch_size, learning_rate=args.learning_rate,
                     value_coef=args.value_coef, seed=seed, progress=progress)
    return fit_on, losses, time.perf_counter() - t


def plot_curve(rows: list[dict], opponents, path: Path) -> None:
    """Win rate (95% Wilson interval) of each round's network against each opponent, a PNG.

    Args:
        rows: rounds.json's rows (``round`` and ``win_rate_<opponent>``, ``ci_low_<opponent>``,
            ``ci_high_<opponent>`` for each opponent).
        opponents: the evaluation opponents' names, one line each.
        path: the PNG to write.
    """
    # a Figure of its own, without pyplot: no backend switch in the caller's process (a
    # notebook keeps drawing inline) and nothing left open
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    x = [r["round"] for r in rows]
    for opp in opponents:
        y = np.array([r[f"win_rate_{opp}"] for r in rows])
        lo = y - np.array([r[f"ci_low_{opp}"] for r in rows])
        hi = np.array([r[f"ci_high_{opp}"] for r in rows]) - y
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=f"vs {opp}")
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("round (0: clone of the bot; k: k planner-labelled rounds)")
    ax.set_ylabel("win rate of the network alone (95% CI)")
    ax.set_xticks(x)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _write_rows(rows: list[dict], opponents, out: Path) -> None:
    _write_json(out / "rounds.json", rows)
    fields = list(ROW_FIELDS) + [f"{m}_{o}" for o in opponents
                                 for m in ("win_rate", "ci_low", "ci_high")]
    with (out / "rounds.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    plot_curve(rows, opponents, out / "curve.png")


def _log(row: dict, opponents) -> str:
    vs = ", ".join(f"vs {o} {row[f'win_rate_{o}']:.3f} [{row[f'ci_low_{o}']:.3f}, "
                   f"{row[f'ci_high_{o}']:.3f}]" for o in opponents)
    dep = "n/a" if row["departure_agreement"] is None else f"{row['departure_agreement']:.3f}"
    return (f"round {row['round']} ({row['teacher']}): {row['labels']:,} labels at "
            f"{format_rate(row['labels'], row['label_seconds'], 'labels')}, departures "
            f"{row['departure_rate']:.3f}, agreement {row['agreement']:.3f}, departures "
            f"reproduced {dep}; {vs}; {row['seconds']:.0f} s")


def run(args: Args, show: bool = True) -> list[dict]:
    """Run (or resume) the rounds of ``args`` (checked by ``experiments.expert.args.check``).

    Returns:
        the rows of every finished round (rounds.json's content).
    """
    import torch

    torch.set_num_threads(args.torch_threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    start = 0
    if args.resume:
        finished = json.loads((out / "state.json").read_text())["finished_round"]
        rows = [r for r in json.loads((out / "rounds.json").read_text())
                if r["round"] <= finished]
        start = finished + 1
        print(f"resuming {out} after round {finished}", flush=True)
    else:
        _write_json(out / "config.json", config_of(args))
    for k in range(start, args.rounds + 1):
        row = _one_round(args, k, out, show)
        rows.append(row)
        _write_rows(rows, args.eval_list, out)
        _write_json(out / "state.json", {"finished_round": k})
        print(_log(row, args.eval_list), flush=True)
    for path in sorted(out.iterdir()):  # the run folder's entries, rewritten every round
        print(f"wrote {path}{'/' if path.is_dir() else ''}")
    return rows
