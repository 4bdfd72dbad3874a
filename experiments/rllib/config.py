"""The RLlib algorithm of a run: its ``PPOConfig`` (:func:`build_config`) and the algorithm.

Every path of ``--mode`` gets the run's whole ``SpitConfig`` in its ``env_config`` (the vector
env of ``Spit-v0``, and the PettingZoo env of the bot and self-play modes), the same config the
module's rule options are read from, so the env runners play the rules the module was built for.
Every name the config holds is importable (no ``register_env``): a checkpoint restores in a
fresh process with nothing registered first (``agents.rllib.restore_algorithm``).
"""

from __future__ import annotations

import contextlib
import logging

__all__ = ["LEARNER", "BOT", "SINGLE", "VECTOR_ENVS", "PETTINGZOO_ENVS", "build_config",
           "build_algorithm", "on_vector_env"]

LEARNER = "learner"  # agents.rllib_modules.LEARNER, the trained module's id (multi-agent)
BOT = "bot"
SINGLE = "default_policy"  # agents.rllib.SINGLE_AGENT_MODULE, the trained module's id (vector env)
#: Games per env runner by default: the vector env's num_envs, the PettingZoo path's env objects.
VECTOR_ENVS, PETTINGZOO_ENVS = 64, 8


def on_vector_env(args) -> bool:
    """Whether the run samples from ``Spit-v0``'s vector env (``--mode bot --vector-env``)."""
    return args.mode == "bot" and args.vector_env


def build_config(args, spit_config):
    """The PPOConfig of a run (new API stack, masked module).

    Args:
        args: the run's ``experiments.rllib.args.Args``.
        spit_config: the games' ``SpitConfig``; every env path gets it whole (``env_config``
            ``{"config": ...}``), and the module's rule options
            (``spit_env.observation.rule_options``) and the PettingZoo bot's latency are read
            from it.

    Raises:
        RayMissingError: Ray is not installed.
        ValueError: ``--mode bot`` on the PettingZoo path with seats of different latencies.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    import spit_env
    from agents.rllib_modules import MaskedPPOModule
    from spit_env.observation import rule_options

    model = {"fcnet_hiddens": list(args.hiddens), "fcnet_activation": "tanh",
             "head_fcnet_hiddens": [], "vf_share_layers": False,
             "mask_wait": args.mask_wait, "obs_mask": args.obs_mask,
             **rule_options(spit_config)}
    config = PPOConfig().training(
        train_batch_size_per_learner=args.train_batch_size, minibatch_size=args.minibatch_size,
        num_epochs=args.num_epochs, lr=args.lr, gamma=args.gamma, lambda_=args.gae_lambda,
        entropy_coeff=args.entropy_coeff).debugging(seed=args.seed)
    vector = on_vector_env(args)
    envs = args.num_envs_per_runner or (VECTOR_ENVS if vector else PETTINGZOO_ENVS)
    runners = dict(num_env_runners=args.num_env_runners, num_envs_per_env_runner=envs,
                   rollout_fragment_length="auto", num_cpus_per_env_runner=1)
    if not vector:
        return _multi_agent(config, args, spit_config, model).env_runners(**runners)
    # "spit_env:Spit-v0" imports spit_env, which registers the id
    return (
        config.environment(f"spit_env:{spit_env.GYM_ID}",
                           env_config={"opponent": args.opponent, "config": spit_config})
        .env_runners(gym_env_vectorize_mode="vector_entry_point", **runners)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=MaskedPPOModule, model_config=model))
    )


def _multi_agent(config, args, spit_config, model):
    """The PettingZoo path (``agents.rllib_modules.SpitMultiAgentEnv``): bot or self-play."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    import spit_env
    from agents.rllib_modules import (
        BotModule,
        MaskedPPOModule,
        SpitMultiAgentEnv,
        map_learner_vs_bot,
        map_self_play,
    )

    probe = spit_env.parallel_env(spit_config)
    obs_space, act_space = probe.observation_space("player_0"), probe.action_space("player_0")
    specs = {LEARNER: RLModuleSpec(module_class=MaskedPPOModule, observation_space=obs_space,
                                   action_space=act_space, model_config=model)}
    bot_mode = args.mode == "bot"
    if bot_mode:
        if spit_config.latency[0] != spit_config.latency[1]:  # the bot plays either seat
            raise ValueError("spit_config: the bot mode seats the bot in either seat, so both "
                             f"seats need one latency, got {spit_config.latency}")
        specs[BOT] = RLModuleSpec(
            module_class=BotModule, observation_space=obs_space, action_space=act_space,
            model_config={"bot": args.opponent, "latency": spit_config.latency[0],
                          "seed": args.seed})
    # bot mode: the agents are the roles, the learner's seat drawn per game by the env
    return (
        config.environment(SpitMultiAgentEnv, env_config={"config": spit_config,
                                                          "roles": bot_mode})
        .multi_agent(policies=set(specs),
                     policy_mapping_fn=map_learner_vs_bot if bot_mode else map_self_play,
                     policies_to_train=[LEARNER])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    )


def build_algorithm(args, spit_config):
    """``build_config(args, spit_config).build_algo()``, without RLlib's notice of its default.

    Raises:
        RayMissingError: Ray is not installed.
    """
    with _without_api_stack_notice():
        return build_config(args, spit_config).build_algo()


@contextlib.contextmanager
def _without_api_stack_notice():
    # RLlib logs a WARNING on every run that PPO runs on the new API stack, its default (which
    # this script asks for): that one record is dropped, every other warning still shows
    class Drop(logging.Filter):
        def filter(self, record):
            return "on the new API stack!" not in record.getMessage()

    log = logging.getLogger("ray.rllib.algorithms.algorithm_config")
    drop = Drop()
    log.addFilter(drop)
    try:
        yield
    finally:
        log.removeFilter(drop)
