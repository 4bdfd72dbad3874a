"""PettingZoo environments: one game of Spit as a batch-1 view of the batched core (spit_env.core).

``parallel_env(config=None, render_mode=None)`` is the ParallelEnv, ``env(...)`` the AEC version.

Agents "player_0" and "player_1" (seats 0 and 1). Both agents act at every step (a decision epoch
of the time model, docs/RULES.md): a free agent picks any legal move, a busy agent's only legal
action is WAIT (0) and whatever it sends is ignored (anything else is reported as ``illegal``).

Spaces (the same objects on every call):

* observation: ``Dict({"observation": Box(0, 1, (D,), float32), "action_mask": Box(0, 1, (23,),
  int8)})`` as in PettingZoo's classic games. ``observation`` is egocentric, laid out by
  ``rules.OBSERVATION`` (docs/ENVIRONMENTS.md has the table); ``action_mask`` the legal moves.
* action: ``Discrete(23)``, the egocentric action ids of ``rules.py`` (WAIT 0, PLAY(s, c)
  1 + 2s + c, FILL(s) 11 + s, FLIP(s) 16 + s, SLAP(c) 21 + c).
* ``state()``: the two seats' observations concatenated, (2 D,) float32 in [0, 1]
  (``state_space``); it shows both moves in flight even with ``observe_opponent_move`` off.

Rewards: +1 to the winner and -1 to the loser on the step a game is won (D14 / D15); 0 at every
other step and for a draw or a truncation (D16). ``terminations`` is True on the step a game is
decided, ``truncations`` on the step it hits a limit; never both. Both agents end together and
then leave ``agents``; every dict a step returns is keyed by the agents alive before that step.
``infos[agent] = {"events": [...]}``: the step's events (docs/RULES.md "Events"), the same public
list for both agents.

Auto-reset: none. After the game ends, call ``reset()``; ``step`` on a finished game raises.

Seeding: game ``g`` of seed ``s`` is the core's game ``(s, g)``. ``reset(seed=s)`` plays game 0 of
``s``; each later ``reset()`` without a seed plays the next game id of the same seed. A first
``reset()`` without any seed draws a seed from the operating system (never from the global NumPy
or Python generators). ``reset(options={"deal": [pack0, pack1]})`` deals the given packs (lists
of card ids laid out by D3, together exactly the 52 cards); other option keys are ignored.

Errors: every misuse (a call before ``reset()`` or after the end, a bad seed, options, agent name
or action, an illegal action under ``illegal_action="raise"``) raises ``ValueError`` naming the
problem and changes nothing: the same snapshot and the same game from then on. An illegal action
is refused by the call that submits it (in the AEC env, that agent's own ``step``).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from .. import core
from ..checks import check_choice
from ..config import SpitConfig, check_config
from ..render import RENDER_MODES, check_render_mode, render
from ..rules import N_ACTIONS, OBS_DIM, check_action, check_legal, reset_deal
from ..streams import next_game

__all__ = ["SpitParallelEnv", "SpitAECEnv", "parallel_env", "env", "AGENTS"]

#: The agents, seat 0 then seat 1.
AGENTS = ("player_0", "player_1")


class SpitParallelEnv(ParallelEnv):
    """One game of Spit for two agents acting simultaneously (see the module docstring).

    Args:
        config: the rules and time model (default ``SpitConfig()``).
        render_mode: None, "ansi" (``render()`` returns the table as text) or "human" (prints it).

    Raises:
        ValueError: a bad ``config`` or ``render_mode``.
    """

    metadata = {"name": "spit_v0", "render_modes": list(RENDER_MODES), "is_parallelizable": True,
                "render_fps": 2}

    def __init__(self, config: SpitConfig | None = None, render_mode: str | None = None):
        check_render_mode(render_mode)
        self.config = check_config(config)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32),
                "action_mask": spaces.Box(0, 1, (N_ACTIONS,), np.int8),
            }
        )
        self._act_space = spaces.Discrete(N_ACTIONS)
        self.observation_spaces = dict.fromkeys(self.possible_agents, self._obs_space)
        self.action_spaces = dict.fromkeys(self.possible_agents, self._act_space)
        self.state_space = spaces.Box(0.0, 1.0, (2 * OBS_DIM,), np.float32)
        self._state = None
        self._seed: int | None = None
        self._game_id = -1

    def observation_space(self, agent):
        """The observation space of ``agent`` (the same Dict for both); ValueError for others."""
        return self.observation_spaces[self.check_agent(agent)]

    def action_space(self, agent):
        """The action space of ``agent``: Discrete(23); ValueError for other names."""
        return self.action_spaces[self.check_agent(agent)]

    def check_agent(self, agent) -> str:
        """``agent`` if it is one of ``possible_agents``; else ValueError naming them."""
        return check_choice("agent", agent, self.possible_agents)

    @property
    def seed_and_game(self) -> tuple[int, int]:
        """(seed, game id) of the current game; ValueError before the first reset."""
        self._need_state()
        return self._seed, self._game_id

    @property
    def core_state(self) -> core.CoreState:
        """The batch-1 core state of the current game (read only).

        For checks such as ``testing.check_invariants``; do not change it.

        Raises:
            ValueError: before the first reset.
        """
        self._need_state()
        return self._state

    def reset(self, seed=None, options=None):
        """Start a game: game 0 of ``seed`` if given, else the next game id (module docstring).

        Returns:
            (observations, infos) keyed by both agents; infos hold empty event lists.

        Raises:
            ValueError: a bad seed, ``options`` or ``options["deal"]``; nothing is changed then.
        """
        deal = reset_deal(options)
        seed, game_id = next_game(seed, self._seed, self._game_id)
        self._state = core.init(self.config, 1, seed, first_game=game_id, deals=[deal])
        self._seed, self._game_id = seed, game_id
        self.agents = list(self.possible_agents)
        observations = self._observations(self.agents)
        infos = {a: {"events": []} for a in self.agents}
        if self.render_mode == "human":
            self.render()
        return observations, infos

    def step(self, actions):
        """Advance one decision epoch with one action per live agent.

        Args:
            actions: {agent: action id 0-22} for exactly the agents in ``self.agents``.

        Returns:
            (observations, rewards, terminations, truncations, infos), each keyed by the agents
            alive before the step. Rewards are Python floats, flags Python bools.

        Raises:
            ValueError: the game is over or not started, missing or extra agents, an action that
                is not an integer 0-22, or (with ``illegal_action="raise"``) an illegal action;
                nothing is changed then.
        """
        self._need_state()
        if not self.agents:
            raise ValueError("step() called on a finished game; call reset() first")
        joint = self._joint_actions(actions)
        self._state, out = core.step(self._state, joint, events=True)
        live = list(self.agents)
        events = out.events.for_row(0)
        term, trunc = bool(out.terminated[0]), bool(out.truncated[0])
        observations = self._observations(live)
        rewards = {
            a: float(out.rewards[0, i]) for i, a in enumerate(self.possible_agents) if a in live
        }
        terminations = dict.fromkeys(live, term)
        truncations = dict.fromkeys(live, trunc)
        infos = {a: {"events": [dict(e) for e in events]} for a in live}
        if term or trunc:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def _joint_actions(self, actions) -> np.ndarray:
        """(1, 2) int64 core actions of a step's ``actions`` dict, every check done first."""
        if not isinstance(actions, dict) or set(actions) != set(self.agents):
            got = _keys(actions) if isinstance(actions, dict) else type(actions).__name__
            raise ValueError(
                f"actions must be a dict with one action for each of {self.agents}, got {got}"
            )
        joint = np.zeros((1, 2), dtype=np.int64)
        for seat, agent in enumerate(self.possible_agents):
            try:
                joint[0, seat] = check_action(actions[agent])
            except ValueError as err:
                raise ValueError(f"actions[{agent!r}]: {err}") from None
        if self.config.illegal_action == "raise":
            masks = self.action_masks()
            for seat, agent in enumerate(self.possible_agents):
                check_legal(f"actions[{agent!r}]", int(joint[0, seat]), masks[agent])
        return joint

    def _observations(self, agents) -> dict:
        obs = core.observe(self._state)[0]
        mask = core.legal_action_mask(self._state)[0].astype(np.int8)
        return {
            a: {"observation": obs[i].copy(), "action_mask": mask[i].copy()}
            for i, a in enumerate(self.possible_agents)
            if a in agents
        }

    def _need_state(self):
        if self._state is None:
            raise ValueError("the environment has not been reset; call reset() first")

    def action_masks(self) -> dict:
        """{agent: (23,) bool legal mask} for both seats of the current game."""
        self._need_state()
        mask = core.legal_action_mask(self._state)[0]
        return {a: mask[i].copy() for i, a in enumerate(self.possible_agents)}

    def state(self) -> np.ndarray:
        """The global state: both seats' observations concatenated, (2 D,) float32 in [0, 1]."""
        self._need_state()
        # Each seat's own move in flight is in its own half, so the state shows both moves even
        # when the observations hide the opponent's (observe_opponent_move off).
        obs = core.observe(self._state)[0]
        return obs.reshape(-1).astype(np.float32, copy=True)

    def snapshot(self) -> dict:
        """The whole public table as a JSON-serialisable dict (format: docs/ENVIRONMENTS.md)."""
        self._need_state()
        return core.snapshot(self._state, 0)

    def public_table(self, agent: str):
        """``agent``'s public table (``spit_env.core.PublicTable``, one row).

        For a planning policy: ``planner(o["observation"][None],
        o["action_mask"][None].astype(bool), rng, table=env.public_table(agent))`` with
        ``o = observations[agent]``.

        Args:
            agent: "player_0" or "player_1".

        Raises:
            ValueError: an unknown agent, or before reset().
        """
        self._need_state()
        if agent not in self.possible_agents:
            raise ValueError(f"agent must be one of {self.possible_agents}, got {agent!r}")
        seat = self.possible_agents.index(agent)
        return core.public_table(self._state, np.zeros(1, np.intp), seat)

    def render(self):
        """"ansi": the table as text; "human": print it (returns None); None: returns None."""
        if self.render_mode is None or self._state is None:
            return None
        return render(self.snapshot(), tuple(self.possible_agents), self.render_mode)

    def close(self):
        """Nothing to release."""


class SpitAECEnv(AECEnv):
    """The AEC version of :class:`SpitParallelEnv`.

    player_0 then player_1 choose, and the decision epoch runs when player_1 has chosen (the two
    moves are still simultaneous in game time). Rewards, terminations, truncations and infos are
    those of the parallel step; at the end both agents get their dead step (``step(None)``) and
    leave ``agents``.

    Auto-reset: none, call ``reset()``. Same arguments and errors as :class:`SpitParallelEnv`:
    ``step``, ``last`` and ``observe`` before ``reset()``, ``step`` and ``last`` once every agent
    has left, and an agent's illegal action (``illegal_action="raise"``, refused by that agent's
    own ``step``) raise ``ValueError`` and change nothing (a pending action stays pending).
    """

    metadata = {**SpitParallelEnv.metadata, "name": "spit_aec_v0"}

    def __init__(self, config: SpitConfig | None = None, render_mode: str | None = None):
        super().__init__()
        self._par = SpitParallelEnv(config, render_mode)
        self.config = self._par.config
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = []
        self.state_space = self._par.state_space
        self.observation_spaces = self._par.observation_spaces
        self.action_spaces = self._par.action_spaces

    def observation_space(self, agent):
        """The observation space of ``agent`` (the ParallelEnv's)."""
        return self._par.observation_space(agent)

    def action_space(self, agent):
        """The action space of ``agent``: Discrete(23)."""
        return self._par.action_space(agent)

    def reset(self, seed=None, options=None):
        """Start a game (as :meth:`SpitParallelEnv.reset`); player_0 is selected first.

        Raises:
            ValueError: as :meth:`SpitParallelEnv.reset`; nothing is changed then.
        """
        self._observations, infos = self._par.reset(seed=seed, options=options)
        self._skip_agent_selection = None  # PettingZoo's dead-step bookkeeping of an old game
        self.agents = list(self._par.agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = infos
        self._pending: dict = {}
        self.agent_selection = self.agents[0]

    def _need_reset(self) -> None:
        if not hasattr(self, "_observations"):
            raise ValueError("the environment has not been reset; call reset() first")

    def observe(self, agent):
        """The last observation of ``agent``: {"observation", "action_mask"}.

        Raises:
            ValueError: before ``reset()``, or an agent not in ``possible_agents``.
        """
        self._need_reset()
        return self._observations[self._par.check_agent(agent)]

    def last(self, observe: bool = True):
        """(observation, cumulative reward, terminated, truncated, info) of the selected agent.

        Raises:
            ValueError: before ``reset()`` or once every agent has left (the game is over).
        """
        self._need_reset()
        if not self.agents:
            raise ValueError("last() called on a finished game (every agent has left); "
                             "call reset() first")
        return super().last(observe)

    def state(self):
        """The global state (as :meth:`SpitParallelEnv.state`)."""
        return self._par.state()

    @property
    def core_state(self) -> core.CoreState:
        """The batch-1 core state of the current game (read only; ValueError before a reset)."""
        return self._par.core_state

    @property
    def seed_and_game(self) -> tuple[int, int]:
        """(seed, game id) of the current game; ValueError before the first reset."""
        return self._par.seed_and_game

    def snapshot(self) -> dict:
        """The whole public table as a JSON-serialisable dict (see :class:`SpitParallelEnv`)."""
        return self._par.snapshot()

    def public_table(self, agent: str):
        """``agent``'s public table, as :meth:`SpitParallelEnv.public_table`."""
        return self._par.public_table(agent)

    def step(self, action):
        """Record the selected agent's action; after player_1's, run the decision epoch.

        Raises:
            ValueError: before ``reset()`` or after every agent has left, an action that is not
                an integer 0-22, with ``illegal_action="raise"`` an illegal action (checked
                against the agent's own ``action_mask``), or a non-None action for a done agent;
                nothing is changed then.
        """
        self._need_reset()
        if not self.agents:
            raise ValueError("step() called on a finished game (every agent has left); "
                             "call reset() first")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        # Refused at once, by this agent's own step, not one call later.
        try:
            action = check_action(action)
        except ValueError as err:
            raise ValueError(f"{agent}'s action: {err}") from None
        if self.config.illegal_action == "raise":
            check_legal(f"{agent}'s action", action, self._observations[agent]["action_mask"])
        if agent != self.agents[-1]:
            self._pending[agent] = action
            self._clear_rewards()
            self._cumulative_rewards[agent] = 0.0
            self.agent_selection = self.agents[self.agents.index(agent) + 1]
            return
        # The pending actions are kept until the parallel step has succeeded.
        obs, rewards, terms, truncs, infos = self._par.step({**self._pending, agent: action})
        self._pending = {}
        self._observations = obs
        self.rewards = rewards
        self.terminations, self.truncations, self.infos = terms, truncs, infos
        self._cumulative_rewards = dict(rewards)
        self.agent_selection = self.agents[0]
        self._deads_step_first()

    def render(self):
        """As :meth:`SpitParallelEnv.render`."""
        return self._par.render()

    def close(self):
        """Nothing to release."""
        self._par.close()


def _keys(d: dict) -> list:
    """The keys of ``d`` in a stable order, whatever their types."""
    return sorted(d, key=repr)


def parallel_env(
    config: SpitConfig | None = None, render_mode: str | None = None
) -> SpitParallelEnv:
    """A PettingZoo ParallelEnv of one Spit game (see :class:`SpitParallelEnv`)."""
    return SpitParallelEnv(config, render_mode)


def env(config: SpitConfig | None = None, render_mode: str | None = None) -> SpitAECEnv:
    """A PettingZoo AEC env of one Spit game (see :class:`SpitAECEnv`)."""
    return SpitAECEnv(config, render_mode)
