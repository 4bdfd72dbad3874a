"""The README's Python snippets run and do what they say, so the front door cannot drift.

Each ```python block of README.md runs in a fresh interpreter (no state shared with the tests or
the other snippets), at a small size: :data:`SHRINK` replaces a snippet's sizes (each replaced
text must be in the snippet, so a changed snippet fails here instead of running at full size),
and :data:`CHECKS` appends the checks of what the snippet's text promises. A new snippet needs an
entry in :data:`CHECKS`.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_snippets() -> list[str]:
    """The README's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


#: snippet id -> (a text only that snippet holds, modules it needs, check code run after it)
CHECKS = {
    "pettingzoo": ("spit_env.parallel_env(", (), """
        assert env.agents == [] and set(rewards) == {"player_0", "player_1"}
        assert sorted(rewards.values()) in ([-1.0, 1.0], [0.0, 0.0]), rewards
        assert terminations["player_0"] or truncations["player_0"]
        assert "game over" in env.render()
    """),
    "gymnasium": ('gymnasium.make("Spit-v0"', (), """
        import numpy as np
        assert terminated or truncated
        assert reward in (-1.0, 0.0, 1.0) and info["learner_seat"] in (0, 1)
        assert obs.shape == (282,) and obs.dtype == np.float32  # the README says so
        assert mask.shape == (23,) and mask.dtype == bool
    """),
    "sb3": ("MaskablePPO(", ("sb3_contrib",), """
        import numpy as np
        from agents.network import NetworkPolicy
        assert model.num_timesteps >= 256 and isinstance(policy, NetworkPolicy)
        obs, masks = venv.reset(), venv.action_masks()
        actions = policy(obs, masks, np.random.default_rng(0))
        assert actions.shape == (venv.num_envs,) and masks[np.arange(venv.num_envs), actions].all()
        assert -1 <= mean <= 1 and std >= 0
        moves, _ = shipped.predict(obs, action_masks=masks, deterministic=True)
        assert masks[np.arange(venv.num_envs), moves].all()
    """),
    "own_bot": ("def digger(", ("scipy",), """
        import agents
        assert result["players"] == ["digger", "greedy", "racer"]
        assert set(result["ratings"]) == {"digger", "greedy", "racer"}
        assert len(result["pairings"]) == 3 and all(p["games"] == 2 for p in result["pairings"])
        # registered: found by name; in a slap phase it slaps the smaller pile (here pile 1)
        masks = np.zeros((4, rules.N_ACTIONS), bool)
        masks[:, rules.SLAP_BASE:] = True
        obs = np.zeros((4, rules.OBS_DIM), np.float32)
        obs[:, rules.OBS["centre_size"].start:rules.OBS["centre_size"].stop] = [10 / 52, 3 / 52]
        actions = agents.make("digger")(obs, masks, np.random.default_rng(0))
        assert (actions == rules.SLAP_BASE + 1).all(), actions
    """),
}

#: snippet id -> patterns its printed output must hold (what the README says it prints)
OUTPUT = {
    "sb3": (r"shipped network vs greedy: mean reward [+-]\d\.\d{3}, win rate \d+\.\d%",),
}

#: snippet id -> {text in the snippet: the text it runs with}
SHRINK = {
    "sb3": {"num_envs=256": "num_envs=16", "n_steps=64": "n_steps=16",
            "total_timesteps=6 * 64 * 256": "total_timesteps=256",
            "n_eval_episodes=256": "n_eval_episodes=4"},
    # one deal per pairing, in short games (a game truncated at 20 s of game time is a draw)
    "own_bot": {'"racer"], 200)': '"racer"], 1, config=spit_env.SpitConfig(max_game_ms=20_000))'},
}

def _snippet(name: str) -> str:
    key = CHECKS[name][0]
    found = [s for s in readme_snippets() if key in s]
    assert len(found) == 1, f"README.md must hold exactly one ```python block with {key!r}"
    return found[0]


def test_every_snippet_has_a_check():
    keys = [key for key, _, _ in CHECKS.values()]
    for snippet in readme_snippets():
        owners = [k for k in keys if k in snippet]
        assert len(owners) == 1, (
            f"each README snippet needs exactly one entry in CHECKS; this one matches {owners}:\n"
            f"{snippet}")


@pytest.mark.parametrize("name", list(CHECKS))
def test_readme_snippet_runs_and_does_what_it_says(name, tmp_path):
    _, needs, check = CHECKS[name]
    for module in needs:
        pytest.importorskip(module)
    code = _snippet(name)
    for old, new in SHRINK.get(name, {}).items():
        assert old in code, f"README snippet {name!r} no longer holds {old!r}: update SHRINK"
        code = code.replace(old, new)
    script = tmp_path / f"readme_{name}.py"
    script.write_text(code + "\n# checks (tests/test_readme.py)\n" + textwrap.dedent(check))
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, f"README snippet {name!r} failed:\n{run.stderr[-4000:]}"
    # a quick start runs clean: no library warning for the user to puzzle over
    assert "Warning" not in run.stderr, f"README snippet {name!r} warns:\n{run.stderr[-4000:]}"
    for line in OUTPUT.get(name, ()):
        assert re.search(line, run.stdout), f"README snippet {name!r} printed:\n{run.stdout}"
