"""RLlib modules restore anywhere, as they were saved: every option that shapes one comes back.

For every combination of the options that shape ``agents.rllib_modules.MaskedPPOModule``
(the observation space, ``mask_wait``, ``obs_mask``, the rules its mask is read under, the hidden
layer sizes), a module is saved, then restored in a new
process that imports nothing but ``spit_env`` before ``RLModule.from_checkpoint``: the restored
module gives the same logits (1e-6) and plays the same greedy trajectory against a bot. No Ray
runtime is started (a module saves and restores without one); the algorithm checkpoint of a
training run is restored in ``test_ray.py``.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

ROOT = Path(__file__).resolve().parents[1]

#: The Dict space of the PettingZoo runs ("dict") and the Box of Spit-v0's vector env ("box",
#: the mask read from the observation under the rules auto_flip / wrap_ranks name).
COMBOS = [dict(space="dict", mask_wait=w, obs_mask=m, fcnet_hiddens=h) for w, m, h in
          itertools.product([True, False], [True, False], [[16], [32, 8]])] + \
    [dict(space="box", mask_wait=w, obs_mask=m, fcnet_hiddens=h) for w, m, h in
     itertools.product([True, False], [True, False], [[16]])] + \
    [dict(space="box", mask_wait=True, obs_mask=True, fcnet_hiddens=[32, 8], auto_flip=False,
          wrap_ranks=False)]

#: Run in the new process: restore each module, write its logits and trajectory.
RESTORE = """
import json, sys
import numpy as np
import spit_env  # the one import before the restore
from ray.rllib.core.rl_module.rl_module import RLModule

out = {}
for folder in sys.argv[2:]:
    module = RLModule.from_checkpoint(folder)
    out[folder] = {"options": module.model_config, "box": module.reads_mask, **PLAY(module)}
json.dump(out, open(sys.argv[1], "w"))
"""

#: The logits on fixed observations, and a greedy trajectory against racer (both sides'
#: moves come from the module's argmax, the bot's from its seeded generator).
PLAY = '''
def PLAY(module):
    import numpy as np
    import torch
    from agents.rllib import RLlibPolicy
    from spit_env import SpitVecEnv

    torch.manual_seed(0)
    policy = RLlibPolicy(module)
    env = SpitVecEnv(num_envs=8, opponent="racer", seed=5)
    obs = env.reset()
    logits, actions = [], []
    for _ in range(60):
        masks = env.action_masks()
        logits.append(policy.logits(obs, masks).tolist())
        moves = policy(obs, masks, np.random.default_rng(0))
        actions.append(moves.tolist())
        obs, _, _, _ = env.step(moves)
    return {"logits": logits, "actions": actions}
'''


def _play(module):
    scope = {}
    exec(PLAY, scope)  # noqa: S102 - the same code in both processes
    return scope["PLAY"](module)


def test_every_option_comes_back_from_a_checkpoint_in_a_new_process(tmp_path):
    import torch

    import spit_env
    from agents.rllib_modules import MaskedPPOModule

    env = spit_env.parallel_env()
    spaces = {"dict": env.observation_space("player_0"),
              "box": spit_env.SpitGymEnv().observation_space}
    saved = {}
    for k, combo in enumerate(COMBOS):
        torch.manual_seed(k)
        options = {key: v for key, v in combo.items() if key != "space"}
        module = MaskedPPOModule(
            observation_space=spaces[combo["space"]], action_space=env.action_space("player_0"),
            model_config={"fcnet_activation": "tanh", "head_fcnet_hiddens": [],
                          "vf_share_layers": False, **options})
        folder = str(tmp_path / f"module_{k}")
        module.save_to_path(folder)
        saved[folder] = (combo, _play(module))
    out = tmp_path / "restored.json"
    proc = subprocess.run(
        [sys.executable, "-c", PLAY + RESTORE, str(out), *saved], cwd=tmp_path,
        env=dict(os.environ, RAY_USAGE_STATS_ENABLED="0"), capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    restored = json.loads(out.read_text())
    trajectories = set()
    for folder, (combo, before) in saved.items():
        after = restored[folder]
        for key, value in combo.items():
            if key != "space":
                assert after["options"][key] == value, (combo, key)
        assert after["box"] == (combo["space"] == "box"), combo
        np.testing.assert_allclose(np.array(after["logits"]), np.array(before["logits"]),
                                   atol=1e-6, err_msg=str(combo))
        assert after["actions"] == before["actions"], combo
        trajectories.add(json.dumps(before["actions"]))
    assert len(trajectories) == len(COMBOS), "the options should make different players"
