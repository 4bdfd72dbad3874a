"""Evaluation of a PPO model and the reports of a run (used by ``experiments.train_ppo``).

Win rates on duplicate deals, the learning-curve plot and the final table.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

import agents
from agents.arena import Player, play_pairing
from spit_env.config import SpitConfig
from spit_env.latency import Latency

__all__ = ["strongest_bot", "resolve_eval_opponents", "evaluate", "plot_learning_curve",
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


def evaluate(model, opponents, deals: int, *, latency: str = "club", seed: int = 2024,
             max_game_ms: int = 1_800_000, batch_size: int = 1024) -> dict[str, dict]:
    """Win rate of ``model`` (deterministic) against each opponent on ``deals`` duplicate deals.

    Uses the match library (``agents.arena.play_pairing``): game ids 0..deals-1 of ``seed``,
    each played twice with the seats swapped, both seats at ``latency`` unless a profile says
    otherwise; draws and truncations count 1/2; 95% Wilson intervals.

    Args:
        model: a MaskablePPO model (its input options apply, ``agents.ppo.PPOPolicy``).
        opponents: names or profiles.
        deals: duplicate deals per opponent.
        latency: both seats' latency, a preset name or whole ms.
        seed: the game seed of the deals.
        max_game_ms: simulated ms after which a game is truncated (D16).
        batch_size: games stepped at once (at most ``deals``).

    Returns:
        {opponent: PairingResult as a dict (win_rate, ci_low, ci_high, wins_a, wins_b, draws,
        games, ...)}.
    """
    config = SpitConfig(latency=Latency.parse(latency), max_game_ms=max_game_ms)
    me = Player("ppo", "ppo", None, {"model": model, "deterministic": True})
    results = {}
    for spec in opponents:
        res = play_pairing(me, spec, deals, config=config, seed=seed,
                           batch_size=min(batch_size, deals))
        results[spec] = asdict(res)
    return results


def plot_learning_curve(eval_json: dict, path: Path) -> None:
    """Write the learning curve as a PNG at ``path``.

    Two panels: the evaluation win rate (95% bands) against timesteps per opponent, and the mean
    episode reward.

    Args:
        eval_json: the run's evaluations: "history" (``{"timesteps", "results"}`` points), an
            optional "final" one, "episode_reward" (``(timesteps, mean reward)`` pairs) and
            "config" (the run's arguments, for the reward and episode kinds).
        path: the PNG to write.
    """
    # a Figure of its own, without pyplot: no backend switch in the caller's process (a
    # notebook keeps drawing inline) and nothing left open
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4))
    ax1, ax2 = fig.subplots(1, 2)
    points = list(eval_json["history"])
    final = eval_json.get("final")
    if final:
        points.append({"timesteps": final["timesteps"], "results": final["results"]})
    names = []
    for p in points:
        names += [n for n in p["results"] if n not in names]
    for name in names:
        pts = [(p["timesteps"], p["results"][name]) for p in points if name in p["results"]]
        x = [t for t, _ in pts]
        y = np.array([r["win_rate"] for _, r in pts])
        err = [y - [r["ci_low"] for _, r in pts], np.array([r["ci_high"] for _, r in pts]) - y]
        ax1.errorbar(x, y, yerr=err, fmt="o-", capsize=4, label=name)
    ax1.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax1.set_ylim(0, 1)
    ax1.set_xlabel("timesteps (learner decisions)")
    ax1.set_ylabel("win rate (95% Wilson interval)")
    ax1.set_title("evaluation on fixed duplicate deals", fontsize=10)
    ax1.legend(fontsize=8)
    curve = eval_json.get("episode_reward", [])
    if curve:
        ax2.plot([t for t, _ in curve], [r for _, r in curve])
    ax2.set_xlabel("timesteps (learner decisions)")
    ax2.set_ylabel("mean episode reward (last 100 episodes)")
    ax2.set_title(f"training reward ({eval_json['config']['reward']} reward, "
                  f"{eval_json['config']['episode']} episodes)", fontsize=10)
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
