"""Deprecated: the older name of :mod:`agents.network` (importing it warns).

Everything this module held lives on under the same names: the policy network as a player, its
loader and the shipped network in :mod:`agents.network` (``PPOPolicy`` is
``agents.network.NetworkPolicy``, ``make_ppo`` is ``agents.network.make_network``), and the legal
moves read from an observation with the rule options a model needs in
:mod:`spit_env.observation` (``observed_masks``, ``RULE_OPTIONS``). The player name ``"ppo"``
itself stays registered (the same factory as ``"network"``); only this import path is
deprecated. Model files do not name this module, so every saved model loads without it.
"""

from __future__ import annotations

import warnings

from agents.network import (
    CONVERT_HINT,
    FORWARD_BLOCK,
    INPUT_OPTIONS,
    RACER_FEATURES,
    SHIPPED_MODEL,
    LegacyModelError,
    NetworkPolicy,
    PPOPolicy,
    forward_in_blocks,
    input_options,
    input_size,
    is_legacy,
    load_model,
    mask_idle_wait,
    model_input,
    playing_masks,
    racer_features,
    shipped_model_path,
)
from agents.network import make_network as make_ppo
from spit_env.observation import RULE_OPTIONS, observed_masks

__all__ = ["PPOPolicy", "NetworkPolicy", "make_ppo", "load_model", "mask_idle_wait",
           "INPUT_OPTIONS", "RULE_OPTIONS", "input_options", "input_size", "observed_masks",
           "playing_masks", "model_input", "racer_features", "RACER_FEATURES", "SHIPPED_MODEL",
           "shipped_model_path", "LegacyModelError", "CONVERT_HINT", "is_legacy",
           "FORWARD_BLOCK", "forward_in_blocks"]

warnings.warn("agents.ppo is deprecated: import agents.network (the network player, its loader "
              "and input contract) and spit_env.observation (observed_masks, RULE_OPTIONS) "
              "instead", DeprecationWarning, stacklevel=2)
