"""Shared checks for every environment of the package (the core and its adapters).

Importable with no test dependency: each raises AssertionError with a message naming the row
(game) at fault. The checks::

    check_invariants(state, out=None, prev_mask=None, actions=None)
    check_caches(state)                                      # part of check_invariants
    check_environments(config=None, *, opponent=None, ...)   # every API checker, for users' CI
"""

from __future__ import annotations

import numpy as np

from . import core, rules
from .policy import uniform_legal, uniform_legal_actions

__all__ = ["check_invariants", "check_caches", "check_environments"]


def _fail(row, msg: str):
    raise AssertionError(f"row {int(row)}: {msg}")


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))[0])


def check_invariants(state, out=None, prev_mask=None, actions=None) -> None:
    """Check the invariants of a batched core state (spit_env.core.CoreState).

    Optionally with the StepOutput of the step that produced it and the mask / actions that step
    was given.

    Checked, per row:
      * the 52 cards are all there, each exactly once (stocks within their heights, spit cards,
        centre piles); counts within bounds; only a stock top may be face up; cached tops agree;
      * the legal mask (B, 2, 23) is non-empty; a busy seat (move in flight) and a finished game
        allow only WAIT; a free seat in the slap phase only SLAP (D11), elsewhere WAIT is legal;
        SLAP only in the slap phase; PLAY/FILL/FLIP only in the play phase;
      * no card has been still longer than the D17 timeout in the play phase beyond the last
        decision epoch: ``last_move <= clock``; ``last_move`` is the later of the players'
        ``moved`` times;
      * terminated and truncated are never both set; phase "over" <=> terminated or truncated;
        winner is -1 unless terminated;
      * with ``out``: rewards are zero-sum and in {-1, 0, 1}, out.terminated / out.truncated are
        never both set and only on rows now over;
      * with ``prev_mask`` and ``actions`` (the step's input): an action legal in ``prev_mask``
        is never flagged in ``out.illegal``.

    Raises:
        AssertionError: naming the first row that breaks an invariant.
    """
    _check_cards(state)
    check_caches(state)  # the cached tops first: the mask below is read from them
    over = _check_flags(state)
    _check_mask(state, over)
    if out is not None:
        _check_step(state, over, out, prev_mask, actions)


def _check_cards(st) -> None:
    """The 52 cards conserved (D2, D3): stock heights, packed spit cards and centre piles."""
    B = st.batch_size
    h = st.height.astype(np.int64)
    if (h < 0).any() or (h > rules.MAX_STOCK_HEIGHT).any():
        _fail(
            _first((h < 0) | (h > rules.MAX_STOCK_HEIGHT)),
            f"stock height out of 0..5: {h[_first((h < 0) | (h > 5))].tolist()}",
        )
    level = np.arange(rules.MAX_STOCK_HEIGHT)
    in_stock = level[None, None, None, :] < h[..., None]
    if ((st.stock >= 0) != in_stock).any():
        _fail(_first((st.stock >= 0) != in_stock), "stock cards do not match the place heights")
    held = np.concatenate([st.stock.reshape(B, -1), st.spit.reshape(B, -1),
                           st.centre.reshape(B, -1)], axis=1).astype(np.int64) + 1  # 0: no card
    width = rules.N_CARDS + 1
    counts = np.bincount((held + width * np.arange(B)[:, None]).reshape(-1),
                         minlength=B * width).reshape(B, width)
    bad = (counts[:, 1:] != 1).any(axis=1)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        missing = np.flatnonzero(counts[r, 1:] == 0).tolist()
        twice = np.flatnonzero(counts[r, 1:] > 1).tolist()
        _fail(r, f"52 cards not conserved: missing {missing}, more than once {twice}")
    for name, arr, n in (("spit", st.spit, st.spit_n), ("centre", st.centre, st.centre_n)):
        filled = (arr >= 0).sum(axis=2)
        if (filled != n).any():
            _fail(_first(filled != n), f"{name} count disagrees with its cards")
        inside = np.arange(rules.N_CARDS)[None, None, :] < n[..., None].astype(np.int64)
        if ((arr >= 0) != inside).any():
            _fail(_first((arr >= 0) != inside), f"{name} cards are not packed from index 0")
    if (st.face_up & (h == 0)).any():
        _fail(_first(st.face_up & (h == 0)), "an empty stock place is marked face up")


def _check_flags(st) -> np.ndarray:
    """The end flags, the phase and the winner agree; returns ``over``, (B,) bool."""
    both = st.terminated & st.truncated
    if both.any():
        _fail(_first(both), "terminated and truncated both set")
    over = st.phase == rules.PHASE_OVER
    ended = st.terminated | st.truncated
    if (over != ended).any():
        _fail(
            _first(over != ended),
            f"phase over ({over[_first(over != ended)]}) but terminated|truncated "
            f"= {ended[_first(over != ended)]}",
        )
    if ((st.winner >= 0) & ~st.terminated).any():
        _fail(_first((st.winner >= 0) & ~st.terminated), "a winner without termination")
    return over


def _check_mask(st, over: np.ndarray) -> None:
    """The legal mask's shape and the phases' moves (D11, D17's last_move)."""
    B = st.batch_size
    mask = core.legal_action_mask(st)
    if mask.shape != (B, rules.N_PLAYERS, rules.N_ACTIONS) or mask.dtype != np.bool_:
        raise AssertionError(f"mask must be ({B}, 2, 23) bool, got {mask.shape} {mask.dtype}")
    if not mask.any(axis=2).all():
        _fail(_first(~mask.any(axis=2)), "a seat has no legal action")
    free_slap = st.free & (st.phase == rules.PHASE_SLAP)[:, None]
    if (mask[:, :, rules.WAIT] == free_slap).any():
        _fail(_first(mask[:, :, rules.WAIT] == free_slap),
              "WAIT must be legal except for a free seat in the slap phase (D11)")
    if (st.last_move > st.clock).any():
        _fail(_first(st.last_move > st.clock), "last_move is later than the clock")
    if (st.moved.max(axis=1) != st.last_move).any():
        _fail(_first(st.moved.max(axis=1) != st.last_move),
              "last_move is not the later of the players' moved times")
    only_wait = (~st.free) | over[:, None]
    bad = only_wait & mask[:, :, 1:].any(axis=2)
    if bad.any():
        _fail(_first(bad), "a busy seat or a finished game has a move other than WAIT")
    slap = mask[:, :, rules.SLAP_BASE:].any(axis=2) & (st.phase != rules.PHASE_SLAP)[:, None]
    if slap.any():
        _fail(_first(slap), "SLAP legal outside the slap phase")
    table = mask[:, :, 1:rules.SLAP_BASE].any(axis=2) & (st.phase != rules.PHASE_PLAY)[:, None]
    if table.any():
        _fail(_first(table), "PLAY/FILL/FLIP legal outside the play phase")


def _check_step(st, over: np.ndarray, out, prev_mask, actions) -> None:
    """The step's output: zero-sum rewards, end flags on rows now over, no legal move flagged."""
    B = st.batch_size
    r = np.asarray(out.rewards)
    if r.shape != (B, rules.N_PLAYERS):
        raise AssertionError(f"rewards must be ({B}, 2), got {r.shape}")
    if (np.abs(r.sum(axis=1)) > 1e-6).any():
        _fail(
            _first(np.abs(r.sum(axis=1)) > 1e-6),
            f"rewards not zero-sum: {r[_first(np.abs(r.sum(axis=1)) > 1e-6)]}",
        )
    if (~np.isin(r, (-1.0, 0.0, 1.0))).any():
        _fail(_first(~np.isin(r, (-1.0, 0.0, 1.0))), "rewards outside {-1, 0, 1}")
    term, trunc = np.asarray(out.terminated), np.asarray(out.truncated)
    if (term & trunc).any():
        _fail(_first(term & trunc), "out.terminated and out.truncated both set")
    if ((term | trunc) & ~over).any():
        _fail(
            _first((term | trunc) & ~over),
            "the step reports a game end but the game is not over",
        )
    if ((r != 0).any(axis=1) & ~term).any():
        _fail(_first((r != 0).any(axis=1) & ~term), "non-zero rewards without termination")
    if prev_mask is not None and actions is not None:
        a = np.asarray(actions).astype(np.intp)
        was_legal = np.take_along_axis(np.asarray(prev_mask), a[:, :, None], axis=2)[:, :, 0]
        bad = was_legal & np.asarray(out.illegal)
        if bad.any():
            _fail(_first(bad), "a legal action was flagged illegal")


def check_caches(state) -> None:
    """Check that the core's caches agree with the arrays they are computed from.

    ``spit_env.core.check_caches`` (the core keeps its caches; the check lives beside them,
    ``core/caches.py``): the stock and centre-pile tops, the place indices, the centre rank
    counts, the latency-stream hashes, the seats' latency models, the legal-move bits and the
    cached observation. :func:`check_invariants` runs it.

    Raises:
        AssertionError: naming the first row whose cache is stale.
    """
    core.check_caches(state)


# --- the adapters' checks (one public entry point for users' CI) --------------------------------
# PettingZoo's api_test warns about any Dict observation (space) unless the environment's name is
# on its hard-coded list of PettingZoo's own classic games: those two messages are not faults.
_PETTINGZOO_NAME_LIST_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or "
    "gymnasium.spaces.discrete",
)


def check_environments(config=None, *, opponent=None, num_cycles: int = 1000, seed: int = 0,
                       num_envs: int = 4, vec_steps: int = 300) -> None:
    """Run every API checker of the ecosystem, plus this package's invariants, on one config.

    For users' CI: check the configs and opponents you train with. Runs, with every warning
    turned into an error (except the two PettingZoo api_test messages about Dict observations
    that only its hard-coded list of classic game names avoids):

    * PettingZoo ``parallel_api_test``, ``parallel_seed_test`` on ``parallel_env(config)``,
      ``api_test``, ``seed_test`` on ``env(config)`` and ``state_test`` on both;
    * Gymnasium's ``check_env`` and stable-baselines3's ``check_env`` on
      ``SpitGymEnv(opponent, config)``;
    * :func:`check_invariants` after every step of a random ParallelEnv game (plus zero-sum
      rewards, one ending flag, agents leaving together) and of ``vec_steps`` steps of a
      ``SpitVecEnv(num_envs, opponent, config)`` (learner free after every step, masks
      matching the core, auto-reset observations inside the space);
    * an illegal action in each of the four views: with ``illegal_action="raise"`` it must be
      refused with ``ValueError`` by the call that submits it, leaving the same snapshot and the
      same game to come (the AEC env keeps the other agent's pending action); with "wait" it
      is played as WAIT and reported as an ``illegal`` event.

    Unmasked actions: ``parallel_seed_test``, ``state_test`` and the two ``check_env`` send
    actions drawn from the whole action space, without the mask. Under
    ``illegal_action="raise"`` an illegal one is an error by the config's own choice, so those
    four checkers run on
    ``config.replace(illegal_action="wait")``, the one field that decides what an unmasked
    action does; everything else runs on ``config`` as given, and the last check above covers
    "raise" itself.

    Args:
        config: a SpitConfig (None: defaults). Games must end within ``num_cycles`` epochs for
            the PettingZoo tests to see an end; use a smaller ``max_game_ms`` to ensure it.
        opponent: the Gymnasium / VecEnv opponent (Policy, name or profile); None: a uniform
            random legal policy (``policy.uniform_legal``, no bot plug-in needed).
        num_cycles: PettingZoo api tests' cycles.
        seed: the games' seed.
        num_envs: games of the SpitVecEnv run.
        vec_steps: steps of the SpitVecEnv run.

    Raises:
        AssertionError (or a warning turned error) naming the first failed check; ValueError
        for bad arguments; ImportError without stable-baselines3 (extra [train]).
    """
    import warnings

    from gymnasium.utils.env_checker import check_env as gym_check_env
    from pettingzoo.test import (
        api_test,
        parallel_api_test,
        parallel_seed_test,
        seed_test,
        state_test,
    )
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from .config import check_config
    from .envs.gym import SpitGymEnv
    from .envs.parallel import env, parallel_env
    from .envs.vec import SpitVecEnv

    config = check_config(config)
    unmasked = config.replace(illegal_action="wait")  # for the checkers that ignore the mask
    opponent = uniform_legal if opponent is None else opponent
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(parallel_env(config), num_cycles=num_cycles)
        parallel_seed_test(lambda: parallel_env(unmasked), num_cycles=min(num_cycles, 300))
        with warnings.catch_warnings():
            for message in _PETTINGZOO_NAME_LIST_WARNINGS:
                warnings.filterwarnings("ignore", message=message)
            api_test(env(config), num_cycles=num_cycles)
            seed_test(lambda: env(config), num_cycles=min(num_cycles, 300))
        state_test(env(unmasked), parallel_env(unmasked), num_cycles=min(num_cycles, 300))
        gym_check_env(SpitGymEnv(opponent=opponent, config=unmasked), skip_render_check=True)
        sb3_check_env(
            SpitGymEnv(opponent=opponent, config=unmasked), warn=True, skip_render_check=True
        )
        _check_parallel_game(parallel_env(config), seed, num_cycles)
        _check_vec_run(SpitVecEnv(num_envs, opponent=opponent, config=config, seed=seed), vec_steps)
        _check_illegal_actions(config, opponent, seed, num_envs)


def _check_parallel_game(par, seed: int, max_steps: int) -> None:
    rng = np.random.default_rng(seed)
    obs, _ = par.reset(seed=seed)
    check_invariants(par.core_state)
    for _ in range(max_steps):
        if not par.agents:
            break
        before = list(par.agents)
        prev_mask = core.legal_action_mask(par.core_state)
        actions = {a: int(uniform_legal_actions(obs[a]["action_mask"].astype(bool), rng))
                   for a in before}
        obs, rewards, terms, truncs, infos = par.step(actions)
        check_invariants(par.core_state)
        joint = np.array([[actions["player_0"], actions["player_1"]]])
        assert prev_mask[0, np.arange(2), joint[0]].all(), "a masked action was not legal"
        for d in (obs, rewards, terms, truncs, infos):
            assert set(d) == set(before), f"step results keyed by {sorted(d)}, not {before}"
        assert sum(rewards.values()) == 0.0, f"rewards not zero-sum: {rewards}"
        term, trunc = terms["player_0"], truncs["player_0"]
        assert not (term and trunc), "terminated and truncated together"
        assert set(terms.values()) == {term} and set(truncs.values()) == {trunc}, (
            "agents ended apart"
        )
        assert par.agents == ([] if term or trunc else before)
        for agent in before:
            assert par.observation_space(agent).contains(obs[agent]), (
                f"{agent}'s observation outside its space"
            )


def _check_vec_run(venv, steps: int) -> None:
    rng = np.random.default_rng(0)
    obs = venv.reset()
    busy = rules.OBS["self_busy"].start
    for _ in range(steps):
        assert venv.observation_space.contains(obs[0]) and obs.shape == (
            venv.num_envs,
            rules.OBS_DIM,
        )
        assert (obs[:, busy] == 0.0).all(), "the learner is busy after a VecEnv step"
        masks = venv.action_masks()
        full = venv.duel.masks()[np.arange(venv.num_envs), venv.duel.seat]
        assert (masks == full).all(), "action_masks() disagrees with the core"
        obs, rewards, dones, infos = venv.step(uniform_legal_actions(masks, rng))
        check_invariants(venv.duel.state)
        for i in np.flatnonzero(dones):
            assert "terminal_observation" in infos[i]
            assert venv.observation_space.contains(infos[i]["terminal_observation"])


# --- an illegal action in every view --------------------------------------------------------------
def _illegal(mask) -> int:
    """An action id outside ``mask`` (there is always one: never all 23 moves are legal)."""
    return int(np.flatnonzero(~np.asarray(mask, bool))[0])


def _refused(call, what: str) -> str:
    try:
        call()
    except ValueError as err:
        return str(err)
    raise AssertionError(f"{what}: an illegal action was accepted under illegal_action='raise'")


def _check_illegal_actions(config, opponent, seed: int, num_envs: int) -> None:
    """One illegal action per view, a few decisions into a game (see check_environments)."""
    import copy

    from .envs.gym import SpitGymEnv
    from .envs.parallel import env, parallel_env
    from .envs.vec import SpitVecEnv

    raising = config.illegal_action == "raise"
    rng = np.random.default_rng(seed)

    def legal(mask):
        return int(uniform_legal_actions(np.asarray(mask, bool), rng))

    # ParallelEnv: refused (nothing changed, the same game goes on) or reported.
    par = parallel_env(config)
    obs, _ = par.reset(seed=seed)
    for _ in range(3):
        if par.agents:
            obs, *_ = par.step({a: legal(obs[a]["action_mask"]) for a in par.agents})
    if par.agents:
        bad = _illegal(obs["player_0"]["action_mask"])
        good = legal(obs["player_1"]["action_mask"])
        if raising:
            twin, before = copy.deepcopy(par), par.snapshot()
            msg = _refused(lambda: par.step({"player_0": bad, "player_1": good}), "ParallelEnv")
            assert "player_0" in msg, f"the ParallelEnv's refusal does not name the agent: {msg}"
            assert par.snapshot() == before, "a refused ParallelEnv step changed the game"
            a = {"player_0": legal(obs["player_0"]["action_mask"]), "player_1": good}
            assert par.step(a)[1:4] == twin.step(a)[1:4] and par.snapshot() == twin.snapshot(), (
                "a refused ParallelEnv step changed the game to come")
        else:
            infos = par.step({"player_0": bad, "player_1": good})[4]
            assert infos["player_0"]["illegal"] and any(
                e["type"] == "illegal" and e["player"] == 0 for e in par.last_events()), (
                "an illegal action was not reported")

    # AEC: each agent's illegal action is refused by its own step; a pending action stays.
    aec = env(config)
    aec.reset(seed=seed)
    first = aec.agent_selection
    mask0 = aec.observe(first)["action_mask"]
    if raising:
        before = aec.snapshot()
        _refused(lambda: aec.step(_illegal(mask0)), "AEC env, first agent")
        assert aec.agent_selection == first and aec.snapshot() == before
        aec.step(legal(mask0))
        second = aec.agent_selection
        mask1 = aec.observe(second)["action_mask"]
        _refused(lambda: aec.step(_illegal(mask1)), "AEC env, second agent")
        assert aec.agent_selection == second and aec.snapshot() == before
        aec.step(legal(mask1))  # the first agent's action is still pending: the epoch runs
        assert aec.snapshot() != before, "the AEC env did not run the epoch after a refusal"

    # Gymnasium and the VecEnv: the opponent's random draws must not run either.
    gym = SpitGymEnv(opponent=opponent, config=config)
    gym.reset(seed=seed)
    bad = _illegal(gym.action_masks())
    if raising:
        twin, before = copy.deepcopy(gym), gym.snapshot()
        _refused(lambda: gym.step(bad), "SpitGymEnv")
        assert gym.snapshot() == before, "a refused SpitGymEnv step changed the game"
        a = legal(gym.action_masks())
        got, want = gym.step(a), twin.step(a)
        assert got[1:4] == want[1:4] and gym.snapshot() == twin.snapshot(), (
            "a refused SpitGymEnv step changed the game to come (the opponent drew?)")
    venv = SpitVecEnv(num_envs, opponent=opponent, config=config, seed=seed)
    venv.reset()
    masks = venv.action_masks()
    actions = uniform_legal_actions(masks, rng)
    actions[-1] = _illegal(masks[-1])
    if raising:
        twin = copy.deepcopy(venv)
        before = [venv.snapshot(i) for i in range(num_envs)]
        msg = _refused(lambda: venv.step(actions), "SpitVecEnv")
        assert f"actions[{num_envs - 1}]" in msg, f"the refusal does not name the env: {msg}"
        assert [venv.snapshot(i) for i in range(num_envs)] == before, (
            "a refused SpitVecEnv step changed a game")
        actions[-1] = legal(masks[-1])
        got, want = venv.step(actions), twin.step(actions)
        assert (got[0] == want[0]).all() and (got[1] == want[1]).all(), (
            "a refused SpitVecEnv step changed the games to come")
