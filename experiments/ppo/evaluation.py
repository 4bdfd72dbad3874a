"""Evaluation of a PPO model and the reports of a run (used by ``experiments.train_ppo``).

Win rates on duplicate deals, every opponent of an evaluation in one batch (with one progress),
the bots' own levels on the same deals (played in the first evaluation's batch), the
learning-curve plot and the final table.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

import agents
from agents.arena import Player, play_pairings
from agents.arena.pairings import game_cost
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.progress import Progress, counted

__all__ = ["strongest_bot", "resolve_eval_opponents", "play_evaluation", "evaluate",
           "evaluate_with_levels", "bot_levels", "HeldOutEvaluations", "plot_learning_curve",
           "print_table"]


def strongest_bot() -> str:
    """The strongest heuristic bot of ``agents`` (its BOTS table is ordered weakest first)."""
    return list(agents.BOTS)[-1]


def resolve_eval_opponents(specs) -> list[str]:
    """The evaluation bots with "strongest" replaced by its name, duplicates dropped."""
    out = []
    for spec in specs:
        name = strongest_bot() if spec == "strongest" else spec
        if name not in out:
            out.append(name)
    return out


def _player(model) -> Player | str:
    """The evaluated player: a model (deterministic), or a player as given."""
    if isinstance(model, (str, Player)):
        return model
    return Player("ppo", "network", None, {"model": model, "deterministic": True})


def play_evaluation(pairings, deals: int, *, latency: str = "club", seed: int = 2024,
                    max_game_ms: int = 1_800_000, batch_size: int = 1024,
                    desc: str = "evaluation", show_progress: bool = True, stream=None,
                    runner=None, labels=None) -> list[dict]:
    """Duplicate deals of each pairing ``(a, b)``, all in one batch (or by ``runner``).

    ``agents.arena.play_pairings``: game ids 0..deals-1 of ``seed``, each played twice with the
    seats swapped, both seats at ``latency`` unless a profile says otherwise; draws and
    truncations count 1/2; 95% Wilson intervals. The pairings share one batch, so the
    evaluation lasts as long as its longest game, not as long as each pairing's longest game
    together. One progress (``spit_env.progress``) counts all the games, with the games done of
    each pairing at the end of its lines.

    Args:
        pairings: ``(a, b)`` pairs of players (Players, names or profiles).
        deals: duplicate deals per pairing.
        latency: both seats' latency, a preset name or whole ms.
        seed: the game seed of the deals.
        max_game_ms: simulated ms after which a game is truncated (D16).
        batch_size: games stepped at once.
        desc: what the progress lines call the evaluation ("final evaluation").
        show_progress: False shows no progress.
        stream: where the progress goes (default sys.stderr).
        runner: runs the pairings' jobs, as in ``agents.arena.play_pairings`` (None: here).
        labels: the pairings' names in the progress lines (default "a vs b").

    Returns:
        one PairingResult as a dict (win_rate, ci_low, ci_high, wins_a, wins_b, draws, games,
        ...) per pairing, in order.
    """
    config = SpitConfig(latency=Latency.parse(latency), max_game_ms=max_game_ms)
    parsed: dict = {}  # one Player per spec: its policy is built once for all its pairings

    def player(spec) -> Player:
        return parsed.setdefault(spec, Player.parse(spec)) if isinstance(spec, str) else spec

    pairs = [(player(a), player(b)) for a, b in pairings]
    labels = labels or [f"{a.label} vs {b.label}" for a, b in pairs]
    done = [0] * len(pairs)

    def postfix() -> str:
        return ", ".join(f"{label} {n:,}/{2 * deals:,}"
                         for label, n in zip(labels, done, strict=True))

    def report(i: int, n: int) -> None:
        done[i] += n
        progress.update(n, group=i)

    # the ETA of the work: a slow player's games (a planner's) weigh more than a bot's
    with Progress(None, f"{desc} ({counted(deals, 'deal')} per pairing)",
                  unit="games", enabled=show_progress, stream=stream, postfix=postfix,
                  groups=[(2 * deals, game_cost(a, b)) for a, b in pairs]) as progress:
        results = play_pairings(pairs, deals, config=config, seed=seed, runner=runner,
                                batch_size=min(batch_size, 2 * deals * len(pairs)),
                                report=report)
    return [asdict(r) for r in results]


def evaluate(model, opponents, deals: int, **kwargs) -> dict[str, dict]:
    """Win rate of ``model`` (deterministic) against each opponent on ``deals`` duplicate deals.

    All opponents in one batch (:func:`play_evaluation`, its keyword arguments: latency, seed,
    max_game_ms, batch_size, desc, show_progress, stream, runner).

    Args:
        model: a MaskablePPO model (its input options apply, ``agents.network.NetworkPolicy``), or a
            player (an ``agents.arena.Player`` or its spec: a bot, an RLlib checkpoint).
        opponents: names or profiles.
        deals: duplicate deals per opponent.
        **kwargs: as :func:`play_evaluation`.

    Returns:
        {opponent: PairingResult as a dict (win_rate, ci_low, ci_high, wins_a, wins_b, draws,
        games, ...)}.
    """
    results, _ = evaluate_with_levels(model, opponents, deals, None, **kwargs)
    return results


def evaluate_with_levels(model, opponents, deals: int, bot: str | None, level_opponents=None,
                         **kwargs) -> tuple[dict[str, dict], dict[str, dict[str, dict]] | None]:
    """:func:`evaluate`, and the bots' levels (:func:`bot_levels`) played in the same batch.

    The levels ride on the evaluation's batch: its longest game sets the length either way, so
    they cost only their own games' steps.

    Args:
        model: as :func:`evaluate`.
        opponents: as :func:`evaluate`.
        deals: duplicate deals per pairing.
        bot: the bot whose levels are wanted (None: none, as :func:`evaluate`).
        level_opponents: the opponents of the levels (default: ``opponents``).
        **kwargs: as :func:`play_evaluation`.

    Returns:
        (results as :func:`evaluate`'s, levels as :func:`bot_levels`' or None).
    """
    me = _player(model)
    versus = [] if bot is None else \
        [o for o in (opponents if level_opponents is None else level_opponents) if o != bot]
    pairings = [(me, o) for o in opponents] + [(bot, o) for o in versus]
    labels = [str(o) for o in opponents] + [f"{bot} vs {o}" for o in versus]
    out = play_evaluation(pairings, deals, labels=labels, **kwargs)
    results = dict(zip(opponents, out[:len(opponents)], strict=True))
    if bot is None:
        return results, None
    return results, _levels(bot, dict(zip(versus, out[len(opponents):], strict=True)))


def bot_levels(bot: str, opponents, deals: int, **kwargs) -> dict[str, dict[str, dict]]:
    """A bot's win rate against each opponent on the deals an evaluation plays: the levels.

    The learning curve draws them as reference lines: ``bot`` (the warm start's teacher, say)
    against each opponent, and each opponent against ``bot`` (the same games seen from the other
    side: 1 - the win rate, the interval mirrored). A bot against itself is 0.5 by symmetry and
    is not played. During training they ride on the first evaluation
    (:func:`evaluate_with_levels`).

    Args:
        bot: the bot (name or profile) whose levels are wanted.
        opponents: the evaluation's opponents.
        deals: duplicate deals per pairing.
        **kwargs: as :func:`play_evaluation` (latency, seed, max_game_ms, show_progress, ...).

    Returns:
        {player: {opponent: PairingResult as a dict}}: ``bot`` against each other opponent, and
        each of them against ``bot``.
    """
    versus = [o for o in opponents if o != bot]
    out = play_evaluation([(bot, o) for o in versus], deals,
                          **{"desc": f"level of {bot}", **kwargs})
    return _levels(bot, dict(zip(versus, out, strict=True)))


def _levels(bot: str, played: dict[str, dict]) -> dict[str, dict[str, dict]]:
    levels: dict[str, dict[str, dict]] = {bot: played}
    for opponent, r in played.items():
        levels.setdefault(opponent, {})[bot] = {
            **r, "a": r["b"], "b": r["a"], "wins_a": r["wins_b"], "wins_b": r["wins_a"],
            "win_rate": 1 - r["win_rate"], "ci_low": 1 - r["ci_high"],
            "ci_high": 1 - r["ci_low"]}
    return levels


class HeldOutEvaluations:
    """The evaluations during training, as ``experiments.ppo.schedule.OpponentSchedule`` calls them.

    Each plays the model against the opponents on the held-out deals (:func:`evaluate`); the
    first one also plays the bots' levels (``levels_of`` against the opponents,
    :func:`evaluate_with_levels`) in its batch, unless ``levels`` are given (a resumed run).

    Args:
        levels_of: the bot whose levels the learning curve shows (None: no levels).
        level_opponents: the opponents of the levels (the evaluation's bots).
        levels: levels already played (kept, not played again).
        **settings: as :func:`play_evaluation` (latency, seed, max_game_ms, show_progress...).

    Attributes:
        levels: the levels, once played (or as given).
    """

    def __init__(self, levels_of: str | None, level_opponents=(), levels: dict | None = None,
                 **settings):
        self.levels_of = levels_of
        self.level_opponents = list(level_opponents)
        self.levels = levels
        self.settings = settings

    def __call__(self, model, opponents, deals: int, desc: str = "evaluation") -> dict[str, dict]:
        """Results as :func:`evaluate`'s."""
        if self.levels is not None or self.levels_of is None:
            return evaluate(model, opponents, deals, desc=desc, **self.settings)
        results, self.levels = evaluate_with_levels(
            model, opponents, deals, self.levels_of, self.level_opponents,
            desc=desc + f" and {self.levels_of}'s levels", **self.settings)
        return results


def plot_learning_curve(eval_json: dict, path: Path) -> None:
    """Write the learning curve as a PNG at ``path``.

    One panel per evaluation opponent: the agent's win rate with its 95% Wilson interval at
    every evaluation during training (held-out deals; the first at step 0, right after the warm
    start, before any PPO update) and at the final evaluation (its own deals, drawn apart), with
    the bots' own levels on the held-out deals as dashed reference lines (bands: their
    intervals). A last panel shows the mean episode reward.

    Args:
        eval_json: the run's evaluations: "history" (``{"timesteps", "results"}`` points), an
            optional "final" one, optional "levels" (``{bot: {opponent: result}}``,
            :func:`bot_levels`), "episode_reward" (``(timesteps, mean reward)`` pairs) and
            "config" (the run's arguments, for the reward and episode kinds).
        path: the PNG to write.
    """
    # a Figure of its own, without pyplot: no backend switch in the caller's process (a
    # notebook keeps drawing inline) and nothing left open
    from matplotlib.figure import Figure

    history = list(eval_json["history"])
    final = eval_json.get("final")
    levels = eval_json.get("levels") or {}
    names = []
    for p in history + ([final] if final else []):
        names += [n for n in p["results"] if n not in names]
    cols = 2 if len(names) + 1 > 2 else len(names) + 1
    rows = -(-(len(names) + 1) // cols)
    fig = Figure(figsize=(5.6 * cols, 3.8 * rows))
    axes = list(np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel())
    level_colours = ["C2", "C4", "C1", "C5", "C6", "C8"]  # C0, C3: the agent's points
    for ax, name in zip(axes, names, strict=False):
        pts = [(p["timesteps"], p["results"][name]) for p in history if name in p["results"]]
        if pts:
            x = [t for t, _ in pts]
            y = np.array([r["win_rate"] for _, r in pts])
            err = [y - [r["ci_low"] for _, r in pts], [r["ci_high"] for _, r in pts] - y]
            deals = sorted({r["deals"] for _, r in pts})
            ax.errorbar(x, y, yerr=err, fmt="o-", capsize=4, color="C0",
                        label=f"agent, held-out deals ({'/'.join(map(str, deals))} each)")
            if history[0].get("start"):
                text = ("after the warm start" if eval_json["config"].get("behaviour_cloning")
                        else "before training")
                ax.annotate(text, (x[0], y[0]), textcoords="offset points", xytext=(6, -14),
                            fontsize=7, color="C0")
        if final and name in final["results"]:
            r = final["results"][name]
            ax.errorbar([final["timesteps"]], [r["win_rate"]],
                        yerr=[[r["win_rate"] - r["ci_low"]], [r["ci_high"] - r["win_rate"]]],
                        fmt="s", capsize=4, color="C3",
                        label=f"agent, final evaluation ({counted(r['deals'], 'deal')})")
        for k, (bot, against) in enumerate(levels.items()):
            r = against.get(name)
            if r is None:
                continue
            c = level_colours[k % len(level_colours)]
            ax.axhspan(r["ci_low"], r["ci_high"], color=c, alpha=0.12, lw=0)
            ax.axhline(r["win_rate"], color=c, ls="--", lw=1,
                       label=f"{bot}'s level {r['win_rate']:.3f}")
        ax.axhline(0.5, color="grey", lw=0.8, ls=":", label=f"{name} itself (0.5)")
        ax.set_ylim(0, 1)
        ax.set_xlabel("timesteps (learner decisions)")
        ax.set_ylabel("win rate (95% Wilson interval)")
        ax.set_title(f"against {name}", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
    ax2 = axes[len(names)]
    curve = eval_json.get("episode_reward", [])
    if curve:
        ax2.plot([t for t, _ in curve], [r for _, r in curve])
    ax2.set_xlabel("timesteps (learner decisions)")
    ax2.set_ylabel("mean episode reward (last 100 episodes)")
    ax2.set_title(f"training reward ({eval_json['config']['reward']} reward, "
                  f"{eval_json['config']['episode']} episodes)", fontsize=10)
    for ax in axes[len(names) + 1:]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def print_table(final: dict) -> None:
    """The final evaluation as a table (rich if it is installed, else plain text)."""
    rows = list(final["results"].items())
    title = (f"PPO evaluation: {counted(final['deals'], 'duplicate deal')} per bot "
             f"({counted(2 * final['deals'], 'game')}), latency {final['latency']} both seats, "
             f"at {counted(final['timesteps'], 'step')}")
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a dependency of [train]
        print(title)
        for name, r in rows:
            print(f"{name:>12}  win rate {r['win_rate']:.3f}  95% CI [{r['ci_low']:.3f}, "
                  f"{r['ci_high']:.3f}]  W/L/D {r['wins_a']}/{r['wins_b']}/{r['draws']}")
        return
    table = Table(title=title)
    for col in ("opponent", "win rate", "95% CI", "wins", "losses", "draws"):
        table.add_column(col, justify="right")
    for name, r in rows:
        table.add_row(name, f"{r['win_rate']:.3f}", f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
                      str(r["wins_a"]), str(r["wins_b"]), str(r["draws"]))
    Console().print(table)
