"""Evaluation of a PPO model and the reports of a run (used by ``experiments.train_ppo``).

Win rates on duplicate deals (each with its progress), the bots' own levels on the same deals,
the learning-curve plot and the final table.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

import agents
from agents.arena import Player, play_pairing
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.progress import Progress

__all__ = ["strongest_bot", "resolve_eval_opponents", "evaluate", "bot_levels",
           "plot_learning_curve", "print_table"]


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


def evaluate(model, opponents, deals: int, *, latency: str = "club", seed: int = 2024,
             max_game_ms: int = 1_800_000, batch_size: int = 1024, desc: str = "evaluation",
             show_progress: bool = True, stream=None, runner=None) -> dict[str, dict]:
    """Win rate of ``model`` (deterministic) against each opponent on ``deals`` duplicate deals.

    Uses the match library (``agents.arena.play_pairing``): game ids 0..deals-1 of ``seed``,
    each played twice with the seats swapped, both seats at ``latency`` unless a profile says
    otherwise; draws and truncations count 1/2; 95% Wilson intervals. Each opponent's games show
    their progress (``spit_env.progress``: games done of ``2 * deals``).

    Args:
        model: a MaskablePPO model (its input options apply, ``agents.ppo.PPOPolicy``), or a
            player (an ``agents.arena.Player`` or its spec: a bot for the bots' own levels, an
            RLlib checkpoint).
        opponents: names or profiles.
        deals: duplicate deals per opponent.
        latency: both seats' latency, a preset name or whole ms.
        seed: the game seed of the deals.
        max_game_ms: simulated ms after which a game is truncated (D16).
        batch_size: games stepped at once (at most ``deals``).
        desc: the progress lines' start ("final evaluation"); " vs <opponent>" follows.
        show_progress: False shows no progress.
        stream: where the progress goes (default sys.stderr).
        runner: runs the pairings' jobs, as in ``agents.arena.play_pairing`` (None: here).

    Returns:
        {opponent: PairingResult as a dict (win_rate, ci_low, ci_high, wins_a, wins_b, draws,
        games, ...)}.
    """
    config = SpitConfig(latency=Latency.parse(latency), max_game_ms=max_game_ms)
    me = (model if isinstance(model, (str, Player))
          else Player("ppo", "ppo", None, {"model": model, "deterministic": True}))
    results = {}
    for spec in opponents:
        with Progress(2 * deals, f"{desc} vs {spec} ({deals:,} deals)", unit="games",
                      enabled=show_progress, stream=stream) as progress:
            res = play_pairing(me, spec, deals, config=config, seed=seed,
                               batch_size=min(batch_size, deals), progress=progress,
                               runner=runner)
        results[spec] = asdict(res)
    return results


def bot_levels(bot: str, opponents, deals: int, **kwargs) -> dict[str, dict[str, dict]]:
    """A bot's win rate against each opponent on the deals an evaluation plays: the levels.

    The learning curve draws them as reference lines: ``bot`` (the warm start's teacher, say)
    against each opponent, and each opponent against ``bot`` (the same games seen from the other
    side: 1 - the win rate, the interval mirrored). A bot against itself is 0.5 by symmetry and
    is not played.

    Args:
        bot: the bot (name or profile) whose levels are wanted.
        opponents: the evaluation's opponents.
        deals: duplicate deals per pairing.
        **kwargs: as :func:`evaluate` (latency, seed, max_game_ms, show_progress, ...).

    Returns:
        {player: {opponent: PairingResult as a dict}}: ``bot`` against each other opponent, and
        each of them against ``bot``.
    """
    played = evaluate(bot, [o for o in opponents if o != bot], deals,
                      **{"desc": f"level of {bot}", **kwargs})
    levels: dict[str, dict[str, dict]] = {bot: played}
    for opponent, r in played.items():
        levels.setdefault(opponent, {})[bot] = {
            **r, "a": r["b"], "b": r["a"], "wins_a": r["wins_b"], "wins_b": r["wins_a"],
            "win_rate": 1 - r["win_rate"], "ci_low": 1 - r["ci_high"],
            "ci_high": 1 - r["ci_low"]}
    return levels


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
                        label=f"agent, final evaluation ({r['deals']:,} deals)")
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
    title = (f"PPO evaluation: {final['deals']} duplicate deals per bot ({2 * final['deals']} "
             f"games), latency {final['latency']} both seats, at {final['timesteps']:,} steps")
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
