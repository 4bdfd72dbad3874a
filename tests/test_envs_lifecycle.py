"""Lifecycles of the four views under random call sequences (issue 14): one Hypothesis state
machine per view (ParallelEnv, AEC, Gymnasium, SpitVecEnv) drives reset (with and without a seed
and options, good and bad), legal, illegal, out-of-range and wrong-type actions, steps after the
end, render, snapshot, pickle and deepcopy, close, and each view's own calls (the AEC env's
last / observe / dead steps, the Gymnasium env's set_opponent, the VecEnv's SB3 plumbing). After
every call: either a valid transition whose results and invariants hold
(``testing.check_invariants``, masks against the rule table, a model of seeds, game ids, deals and
pending actions), or a ValueError with nothing changed: the same tables and the same future
(``helpers.future``).

The default suite runs 25 sequences of up to 40 calls per view (derandomized: every run sees the
same ones); the slow marker runs 200 fresh random sequences of up to 80 calls per view, about 20
minutes on one core (SPIT_SLOW_SCALE=ci: 20 of 50)."""

from __future__ import annotations

import copy
import json
import os
import pickle
import re

import numpy as np
import pytest
from helpers import SHORT, TINY, future, rules_mask, tables
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import spit_env
from spit_env import Latency, SpitConfig, SpitGymEnv, SpitVecEnv, core, rules, streams
from spit_env.envs import vec as vec_env
from spit_env.policy import uniform_legal, uniform_legal_actions
from spit_env.testing import check_invariants

AGENTS = ["player_0", "player_1"]
CONFIGS = [
    SHORT.replace(illegal_action="raise"),
    TINY,
    TINY.replace(illegal_action="raise", auto_flip=False, wrap_ranks=False, scoring="points",
                 target_points=5, tie_break="player_1", latency=("pro", Latency.fixed(200)),
                 stall_timeout_ms=None, observe_opponent_move=False, win_on_empty_hand=True),
    SpitConfig(max_game_ms=4_000, stall_timeout_ms=300, wait_ms=40, spit_delay_ms=0,
               tie_break="player_0", latency=(Latency.normal(150, 40, 80), "novice")),
]

# --- strategies -------------------------------------------------------------------------------------
SEEDS = st.one_of(st.none(), st.integers(0, 2**63 - 1))
BAD_SEEDS = st.one_of(st.integers(max_value=-1),
                      st.sampled_from([1.5, "3", True, [1], float("nan"), np.float64(2.0)]))
DRAWS = st.integers(0, 2**32 - 1)  # seeds of the generators that pick random actions
#: several decisions in one rule, so that short sequences reach round ends and game ends
PLAYS = st.lists(DRAWS, min_size=1, max_size=10)


@st.composite
def deals(draw):
    """Two packs of any sizes 1-51 that together hold the 52 cards."""
    perm = draw(st.permutations(range(rules.N_CARDS)))
    k = draw(st.integers(1, rules.N_CARDS - 1))
    return [list(perm[:k]), list(perm[k:])]


@st.composite
def bad_deals(draw):
    """A deal that breaks one rule of check_deal."""
    pack0, pack1 = draw(deals())
    how = draw(st.sampled_from(["drop", "twice", "range", "empty", "one", "str", "float"]))
    if how == "drop":
        return [pack0, pack1[:-1]] if len(pack1) > 1 else [pack0[:-1], pack1]
    if how == "twice":
        return [pack0 + [pack1[0]], pack1]
    if how == "range":
        return [pack0, pack1[:-1] + [52]]
    if how == "empty":
        return [pack0 + pack1, []]
    if how == "one":
        return [pack0 + pack1]
    if how == "float":
        return [[float(c) for c in pack0], pack1]
    return "deal"


GOOD_OPTIONS = st.one_of(st.none(), st.just({}), st.just({"other": 1}), st.just({"deal": None}),
                         deals().map(lambda d: {"deal": d}))
BAD_OPTIONS = st.one_of(st.sampled_from(["deal", 5, [("deal", None)]]),
                        bad_deals().map(lambda d: {"deal": d}))
BAD_ACTIONS = st.one_of(st.integers(max_value=-1), st.integers(min_value=rules.N_ACTIONS),
                        st.sampled_from([1.0, "1", None, True, np.float32(2.0), np.array([1, 2]),
                                         [3]]))


def _random_action(mask, seed: int, legal: bool = True) -> int:
    """A random action id inside (or outside) a (23,) mask."""
    mask = np.asarray(mask, bool)
    return int(uniform_legal_actions(mask if legal else ~mask, np.random.default_rng(seed)))


def _stock_cards(snap: dict) -> list:
    return [[[card for card, _ in place] for place in snap["stocks"][p]] for p in range(2)]


def _dealt(deal) -> list:
    """The stock cards of a fresh game dealt from ``deal`` (D3)."""
    return [[list(place) for place in rules.layout(pack)[0]] for pack in deal]


class _Entropy:
    """Stands in for the operating system's entropy (``streams.os_seed``), which a first reset
    without a seed draws from: Hypothesis replays a test case to shrink it and needs the replay to
    be the same game, so the seeds it draws restart with every test case (each machine)."""

    def __init__(self):
        self.restart()

    def restart(self):
        self._rng = np.random.default_rng(2026)

    def __call__(self) -> int:
        return int(self._rng.integers(0, 2**63 - 1))


_ENTROPY = _Entropy()


@pytest.fixture(autouse=True)
def _replayable_entropy(monkeypatch):
    monkeypatch.setattr(streams, "os_seed", _ENTROPY)
    monkeypatch.setattr(vec_env, "os_seed", _ENTROPY)


# --- the machines --------------------------------------------------------------------------------
class Lifecycle(RuleBasedStateMachine):
    """What every machine shares: a call either succeeds as expected or is refused unchanged."""

    env = None

    def __init__(self):
        super().__init__()
        _ENTROPY.restart()

    def expect(self, ok: bool, call, match: str | None = None):
        """``call(env)``: it must succeed when ``ok``; otherwise raise ValueError (matching
        ``match``) and leave the env as it was (same tables, same future)."""
        twin = None if ok else copy.deepcopy(self.env)
        try:
            result = call(self.env)
        except ValueError as err:
            assert not ok, f"a valid call was refused: {err}"
            assert match is None or re.search(match, str(err)), f"{match!r} not in {err}"
            assert tables(self.env) == tables(twin), f"refused, yet the tables changed: {err}"
            assert future(self.env) == future(twin), f"refused, yet the future changed: {err}"
            return None
        assert ok, "a misuse was accepted"
        return result

    @rule(how=st.sampled_from(["pickle", "deepcopy"]))
    def copy_env(self, how):
        twin = (pickle.loads(pickle.dumps(self.env)) if how == "pickle"
                else copy.deepcopy(self.env))
        assert tables(twin) == tables(self.env)
        assert future(twin) == future(self.env)
        self.env = twin  # the machine goes on with the copy

    def close(self):
        self.expect(True, lambda e: e.close())  # releases nothing: the env stays usable


class SingleGame(Lifecycle):
    """Reset rules of the views of one game (ParallelEnv, AEC, Gymnasium)."""

    game = None  # (seed, game id) of the current game, None before the first reset

    def reset_call(self, env, seed, options):
        return env.reset(seed=seed, options=options)

    def seed_and_game(self) -> tuple[int, int]:
        return self.env.seed_and_game

    @rule(seed=SEEDS, options=GOOD_OPTIONS)
    def reset(self, seed, options):
        result = self.expect(True, lambda e: self.reset_call(e, seed, options))
        got = self.seed_and_game()
        if seed is not None:
            assert got == (seed, 0)
        elif self.game is not None:
            assert got == (self.game[0], self.game[1] + 1)  # the next game id
        else:
            assert got[1] == 0  # a seed from the operating system
        self.game = got
        snap = self.env.snapshot()
        # a fresh game (its clock may have run: a deal with no move to make stalls at once, D9)
        assert snap["phase"] == "play" and snap["round"] == 0 and snap["decisions"] == [0, 0]
        if options and options.get("deal"):
            assert _stock_cards(snap) == _dealt(options["deal"])
        self.after_reset(result)

    def after_reset(self, result):
        pass

    def read_calls(self, calls, also_close: bool) -> None:
        """Each read in ``calls`` works after a reset and is refused before one; render() gives
        None only before one (these views render "ansi"); then maybe close()."""
        started = self.game is not None
        for call in calls:
            self.expect(started, call, match="reset")
        assert (self.env.render() is None) == (not started)
        if also_close:
            self.close()

    @rule(data=st.data())
    def reset_bad(self, data):
        if data.draw(st.booleans()):
            seed, options, match = data.draw(BAD_SEEDS), data.draw(GOOD_OPTIONS), "seed"
        else:
            seed, options, match = data.draw(SEEDS), data.draw(BAD_OPTIONS), "options"
        self.expect(False, lambda e: self.reset_call(e, seed, options), match=match)


class ParallelLifecycle(SingleGame):
    @initialize(config=st.sampled_from(CONFIGS), render_mode=st.sampled_from([None, "ansi"]),
                start=st.booleans())
    def make(self, config, render_mode, start):
        self.config = config
        self.env = spit_env.parallel_env(config, render_mode)
        if start:  # half the sequences begin in a game, the others before the first reset
            self.reset(seed=0, options=None)

    @property
    def live(self) -> bool:
        return self.game is not None and bool(self.env.agents)

    def after_reset(self, result):
        obs, infos = result
        assert self.env.agents == AGENTS and self.env.last_events() == []
        clock = self.env.snapshot()["clock_ms"]
        assert infos == {a: {"clock_ms": clock, "illegal": False} for a in AGENTS}
        assert all(type(v) in (np.int64, np.bool_) for i in infos.values() for v in i.values())
        self.check_observations(obs, AGENTS)

    def check_observations(self, obs, agents):
        snap = self.env.snapshot()
        assert list(obs) == agents
        for seat, agent in enumerate(AGENTS):
            if agent in obs:
                assert self.env.observation_space(agent).contains(obs[agent])
                want = rules_mask(snap, seat, self.config)
                assert np.array_equal(obs[agent]["action_mask"].astype(bool), want)

    def check_step(self, result, before: list, illegal: dict):
        obs, rewards, terms, truncs, infos = result
        for d in result:
            assert list(d) == before
        assert sum(rewards.values()) == 0.0 and set(rewards.values()) <= {-1.0, 0.0, 1.0}
        term, trunc = terms[before[0]], truncs[before[0]]
        assert set(terms.values()) == {term} and set(truncs.values()) == {trunc}
        assert not (term and trunc)
        assert self.env.agents == ([] if term or trunc else AGENTS)
        events = self.env.last_events()
        flagged = {(e["player"], e["action"]) for e in events if e["type"] == "illegal"}
        assert flagged == {(AGENTS.index(a), act) for a, act in illegal.items()}
        assert {a for a in before if infos[a]["illegal"]} == set(illegal)
        assert all(set(infos[a]) == {"clock_ms", "illegal"} for a in before)
        self.check_observations(obs, before)

    @precondition(lambda self: self.live)
    @rule(draws=PLAYS)
    def step_legal(self, draws):
        for draw in draws:
            if not self.env.agents:
                break
            masks = self.env.action_masks()
            actions = {a: _random_action(masks[a], draw + i) for i, a in enumerate(self.env.agents)}
            before = list(self.env.agents)
            self.check_step(self.expect(True, lambda e, a=actions: e.step(a)), before, {})

    @precondition(lambda self: self.live)
    @rule(draw=DRAWS, who=st.sampled_from(AGENTS))
    def step_illegal(self, draw, who):
        masks = self.env.action_masks()
        actions = {a: _random_action(masks[a], draw + i) for i, a in enumerate(self.env.agents)}
        actions[who] = _random_action(masks[who], draw, legal=False)
        before = list(self.env.agents)
        if self.config.illegal_action == "raise":
            self.expect(False, lambda e: e.step(actions), match=rf"actions\['{who}'\].*not legal")
        else:
            result = self.expect(True, lambda e: e.step(actions))
            self.check_step(result, before, {who: actions[who]})

    @rule(data=st.data())
    def step_bad(self, data):
        kind = data.draw(st.sampled_from(["action", "missing", "extra", "not_dict"]))
        actions = dict.fromkeys(AGENTS, rules.WAIT)
        if kind == "action":
            who = data.draw(st.sampled_from(AGENTS))
            actions[who] = data.draw(BAD_ACTIONS)
            match = rf"actions\['{who}'\]"
        elif kind == "missing":
            del actions[data.draw(st.sampled_from(AGENTS))]
            match = "one action for each"
        elif kind == "extra":
            actions[data.draw(st.sampled_from(["player_2", 0, None]))] = 0
            match = "one action for each"
        else:
            actions, match = data.draw(st.sampled_from([[0, 0], None, "0", (0, 0)])), "dict"
        if self.game is None:
            match = "reset"
        elif not self.env.agents:
            match = "finished"
        self.expect(False, lambda e: e.step(actions), match=match)

    @precondition(lambda self: self.game is not None and not self.env.agents)
    @rule()
    def step_after_the_end(self):
        self.expect(False, lambda e: e.step(dict.fromkeys(AGENTS, 0)), match="finished")

    @rule(also_close=st.booleans())
    def read(self, also_close):
        started = self.game is not None
        for call in (lambda e: e.snapshot(), lambda e: e.state(), lambda e: e.action_masks(),
                     lambda e: e.core_state):
            self.expect(started, call, match="reset")
        text = self.env.render()
        assert (text is None) == (self.env.render_mode is None or not started)
        if started:
            json.dumps(self.env.snapshot())
            assert self.env.state_space.contains(self.env.state())
        if also_close:
            self.close()

    @rule(agent=st.sampled_from(AGENTS + ["player_2", 0, None, ("player_0",)]))
    def spaces(self, agent):
        ok = agent in AGENTS
        assert self.expect(ok, lambda e: e.observation_space(agent), match="agent") is (
            self.env.observation_spaces[agent] if ok else None)
        assert self.expect(ok, lambda e: e.action_space(agent), match="agent") is (
            self.env.action_spaces[agent] if ok else None)

    @invariant()
    def holds(self):
        if self.env is None:
            return
        if self.game is None:
            assert self.env.agents == []
            return
        check_invariants(self.env.core_state)
        over = self.env.snapshot()["phase"] == "over"
        assert self.env.agents == ([] if over else AGENTS)


class AECLifecycle(SingleGame):
    """The AEC env against a shadow ParallelEnv stepped with the same pairs of actions."""

    @initialize(config=st.sampled_from(CONFIGS), start=st.booleans())
    def make(self, config, start):
        self.config = config
        self.env = spit_env.env(config, "ansi")
        self.shadow = spit_env.parallel_env(config)
        self.pending: dict = {}
        if start:
            self.reset(seed=0, options=None)

    def reset_call(self, env, seed, options):
        out = env.reset(seed=seed, options=options)
        if env is self.env:  # keep the shadow on the same game
            if seed is None and self.game is None:
                seed = env.seed_and_game[0]
            self.shadow.reset(seed=seed, options=options)
            self.pending = {}
        return out

    def after_reset(self, result):
        assert result is None and self.env.agents == AGENTS
        assert self.env.agent_selection == "player_0"
        assert self.env.snapshot() == self.shadow.snapshot()

    @property
    def selected_done(self) -> bool:
        a = self.env.agent_selection
        return self.env.terminations[a] or self.env.truncations[a]

    @property
    def live(self) -> bool:
        return self.game is not None and bool(self.env.agents) and not self.selected_done

    def _submit(self, action):
        agent = self.env.agent_selection
        self.expect(True, lambda e: e.step(action))
        self.pending[agent] = action
        if agent == "player_1":
            obs, rewards, terms, truncs, _ = self.shadow.step(self.pending)
            self.pending = {}
            assert self.env.snapshot() == self.shadow.snapshot()
            assert self.env.rewards == rewards and self.env.terminations == terms
            assert self.env.truncations == truncs
            for a in AGENTS:
                assert np.array_equal(self.env.observe(a)["observation"], obs[a]["observation"])
        else:
            assert self.env.agent_selection == "player_1"

    @precondition(lambda self: self.live)
    @rule(draws=PLAYS)
    def step_legal(self, draws):
        for draw in draws:  # a whole decision epoch per draw: both agents choose
            for k in range(2):
                if not self.live or k and self.env.agent_selection == "player_0":
                    break
                mask = self.env.observe(self.env.agent_selection)["action_mask"]
                self._submit(_random_action(mask, draw + k))

    @precondition(lambda self: self.live)
    @rule(draw=DRAWS)
    def step_illegal(self, draw):
        agent = self.env.agent_selection
        action = _random_action(self.env.observe(agent)["action_mask"], draw, legal=False)
        if self.config.illegal_action == "raise":
            self.expect(False, lambda e: e.step(action), match=f"{agent}'s action.*not legal")
        else:
            self._submit(action)

    @rule(action=BAD_ACTIONS)
    def step_bad(self, action):
        if self.game is None:
            match = "reset"
        elif not self.env.agents:
            match = "finished"
        elif self.selected_done:
            match = "None"  # PettingZoo's rule for a done agent
        else:
            match = f"{self.env.agent_selection}'s action"
        if action is None and self.game is not None and self.env.agents and self.selected_done:
            return  # None is a done agent's valid dead step: rule dead_step
        self.expect(False, lambda e: e.step(action), match=match)

    @precondition(lambda self: self.game is not None and bool(self.env.agents)
                  and self.selected_done)
    @rule()
    def dead_step(self):
        agent = self.env.agent_selection
        self.expect(True, lambda e: e.step(None))
        assert agent not in self.env.agents

    @precondition(lambda self: self.game is not None and not self.env.agents)
    @rule(action=st.sampled_from([None, 0]))
    def step_after_the_end(self, action):
        self.expect(False, lambda e: e.step(action), match="finished")

    @rule()
    def last(self):
        ok = self.game is not None and bool(self.env.agents)
        out = self.expect(ok, lambda e: e.last(), match="reset" if self.game is None else "finished")
        if ok:
            agent = self.env.agent_selection
            assert out[0] is self.env.observe(agent)
            assert out[2:] == (self.env.terminations[agent], self.env.truncations[agent],
                               self.env.infos[agent])

    @rule(agent=st.sampled_from(AGENTS + ["player_2", 1, None]))
    def observe(self, agent):
        ok = self.game is not None and agent in AGENTS
        obs = self.expect(ok, lambda e: e.observe(agent),
                          match="reset" if self.game is None else "agent")
        if ok:
            assert self.env.observation_space(agent).contains(obs)

    @rule(also_close=st.booleans())
    def read(self, also_close):
        self.read_calls((lambda e: e.snapshot(), lambda e: e.state(), lambda e: e.core_state,
                         lambda e: e.seed_and_game), also_close)

    @invariant()
    def holds(self):
        if self.env is None or self.game is None:
            return
        check_invariants(self.env.core_state)
        if self.env.agents:
            assert self.env.agent_selection in self.env.agents


OPPONENTS = ["random", uniform_legal, "greedy@pro", "racer@novice"]


class GymLifecycle(SingleGame):
    @initialize(config=st.sampled_from(CONFIGS), opponent=st.sampled_from(OPPONENTS),
                learner_seat=st.sampled_from([0, 1, "random"]),
                reward=st.sampled_from(["game", "round"]), episode=st.sampled_from(["game", "round"]),
                shaping=st.sampled_from([0.0, 0.25]), start=st.booleans())
    def make(self, config, opponent, learner_seat, reward, episode, shaping, start):
        self.config = config
        self.env = SpitGymEnv(opponent=opponent, config=config, learner_seat=learner_seat,
                              reward=reward, episode=episode, shaping=shaping, render_mode="ansi")
        self.over = False
        if start:
            self.reset(seed=0, options=None)

    @rule(seed=SEEDS, options=GOOD_OPTIONS)
    def reset(self, seed, options):
        obs, info = self.expect(True, lambda e: e.reset(seed=seed, options=options))
        if seed is not None:
            self.game = (seed, 0)
        elif self.game is not None:
            self.game = (self.game[0], self.game[1] + 1)
        else:
            self.game = (None, 0)
        if options and options.get("deal"):
            assert _stock_cards(self.env.snapshot()) == _dealt(options["deal"])
        elif self.game[0] is not None:
            want = core.snapshot(core.init(self.env.config, 1, self.game[0],
                                           first_game=self.game[1]), 0)
            assert self.env.snapshot() == want
        self.over = False
        assert self.env.observation_space.contains(obs)
        self.check_info(info, illegal=False)
        assert self.env.last_events() == []

    def check_info(self, info, illegal=None):
        """The fixed-shape info of Spit-v0: the same keys, types and shapes at every step."""
        assert set(info) == {"action_mask", "learner_seat", "clock_ms", "illegal"}
        assert info["action_mask"].dtype == bool and info["action_mask"].shape == (rules.N_ACTIONS,)
        assert np.array_equal(info["action_mask"], self.env.action_masks())
        assert info["learner_seat"] == self.env.learner_seat
        assert type(info["clock_ms"]) is np.int64 and type(info["illegal"]) is np.bool_
        assert info["clock_ms"] == self.env.snapshot()["clock_ms"]
        if illegal is not None:
            assert bool(info["illegal"]) is illegal

    def check_step(self, result):
        obs, reward, term, trunc, info = result
        assert self.env.observation_space.contains(obs)
        assert isinstance(reward, float) and np.isfinite(reward)
        assert not (term and trunc)
        self.check_info(info)
        self.over = term or trunc
        busy = obs[rules.OBS["self_busy"].start]
        if not self.over:
            assert busy == 0.0, "the learner is busy after a step"
            assert np.array_equal(self.env.action_masks(), rules_mask(
                self.env.snapshot(), self.env.learner_seat, self.env.config))

    @precondition(lambda self: self.game is not None and not self.over)
    @rule(draws=PLAYS)
    def step_legal(self, draws):
        for draw in draws:
            if self.over:
                break
            action = _random_action(self.env.action_masks(), draw)
            self.check_step(self.expect(True, lambda e, a=action: e.step(a)))

    @precondition(lambda self: self.game is not None and not self.over)
    @rule(draw=DRAWS)
    def step_illegal(self, draw):
        action = _random_action(self.env.action_masks(), draw, legal=False)
        if self.config.illegal_action == "raise":
            self.expect(False, lambda e: e.step(action), match="action = .*not legal")
        else:
            result = self.expect(True, lambda e: e.step(action))
            assert result[4]["illegal"]
            flagged = [e for e in self.env.last_events() if e["type"] == "illegal"]
            assert flagged[0]["player"] == self.env.learner_seat
            assert flagged[0]["action"] == action
            self.check_step(result)

    @rule(action=BAD_ACTIONS)
    def step_bad(self, action):
        match = "reset" if self.game is None or self.over else "action"
        self.expect(False, lambda e: e.step(action), match=match)

    @precondition(lambda self: self.over)
    @rule()
    def step_after_the_end(self):
        self.expect(False, lambda e: e.step(rules.WAIT), match="ended")

    @rule(opponent=st.sampled_from(OPPONENTS + ["no_such_bot", "greedy@nowhere", 3, None]))
    def set_opponent(self, opponent):
        ok = opponent in OPPONENTS
        self.expect(ok, lambda e: e.set_opponent(opponent), match="polic|profile")

    @rule(also_close=st.booleans())
    def read(self, also_close):
        self.read_calls((lambda e: e.snapshot(), lambda e: e.action_masks()), also_close)

    @invariant()
    def holds(self):
        if self.env is None or self.game is None:
            return
        check_invariants(self.env.duel.state)
        assert (self.env.snapshot()["phase"] == "over") <= self.over


class VecLifecycle(Lifecycle):
    @initialize(num_envs=st.integers(1, 4), config=st.sampled_from(CONFIGS),
                opponent=st.sampled_from(OPPONENTS), learner_seat=st.sampled_from([0, 1, "random"]),
                seed=st.integers(0, 2**63 - 1), skip=st.sampled_from([0, 2]),
                render_mode=st.sampled_from([None, "ansi"]), start=st.booleans())
    def make(self, num_envs, config, opponent, learner_seat, seed, skip, render_mode, start):
        self.config = config
        self.env = SpitVecEnv(num_envs, opponent=opponent, config=config, seed=seed,
                              learner_seat=learner_seat, skip_forced_waits=skip,
                              render_mode=render_mode)
        self.n = num_envs
        self.started = False
        self.pending = False
        self.fresh_seed = seed  # the next reset starts game 0 of this seed (None: unknown ids)
        self.deals = [None] * num_envs
        if start:
            self.reset()

    # --- seeds and options ---
    @rule(seed=st.integers(0, 2**63 - 1))
    def seed(self, seed):
        assert self.expect(True, lambda e: e.seed(seed)) == [seed] * self.n
        self.fresh_seed = seed

    @rule(seed=BAD_SEEDS)
    def seed_bad(self, seed):
        self.expect(False, lambda e: e.seed(seed), match="seed")

    @rule(data=st.data())
    def set_options(self, data):
        if data.draw(st.booleans()):
            deal = data.draw(st.one_of(st.none(), deals()))
            options = None if deal is None else {"deal": deal}
            self.deals = [deal] * self.n
        else:
            per_env = data.draw(st.lists(st.one_of(st.none(), deals()), min_size=self.n,
                                         max_size=self.n))
            options = [None if d is None else {"deal": d} for d in per_env]
            self.deals = per_env
        self.expect(True, lambda e: e.set_options(options))

    @rule(data=st.data())
    def set_options_bad(self, data):
        options = data.draw(st.one_of(
            BAD_OPTIONS, st.just([{}] * (self.n + 1)),
            st.lists(st.one_of(st.none(), deals().map(lambda d: {"deal": d})),
                     min_size=self.n, max_size=self.n).flatmap(
                lambda good: st.integers(0, self.n - 1).flatmap(
                    lambda i: bad_deals().map(
                        lambda d: good[:i] + [{"deal": d}] + good[i + 1:])))))
        self.expect(False, lambda e: e.set_options(options), match="options")

    @rule()
    def reset(self):
        obs = self.expect(True, lambda e: e.reset())
        assert obs.shape == (self.n, rules.OBS_DIM) and obs.dtype == np.float32
        for i, snap in enumerate(tables(self.env)):
            if self.deals[i] is not None:
                assert _stock_cards(snap) == _dealt(self.deals[i])
            elif self.fresh_seed is not None:
                want = core.snapshot(core.init(self.config, 1, self.fresh_seed, first_game=i), 0)
                assert snap == want
        self.started, self.pending = True, False
        self.fresh_seed, self.deals = None, [None] * self.n

    # --- steps ---
    def check_step(self, result):
        obs, rewards, dones, infos = result
        assert obs.shape == (self.n, rules.OBS_DIM) and obs.dtype == np.float32
        assert rewards.shape == (self.n,) and rewards.dtype == np.float32
        assert dones.shape == (self.n,) and dones.dtype == np.bool_ and len(infos) == self.n
        for i in range(self.n):
            assert ("terminal_observation" in infos[i]) == bool(dones[i])
            assert self.env.observation_space.contains(obs[i])
        assert (obs[:, rules.OBS["self_busy"].start] == 0.0).all()
        self.pending = False

    def _actions(self, draw, legal=True):
        masks = self.env.action_masks()
        return uniform_legal_actions(masks if legal else ~masks, np.random.default_rng(draw))

    @precondition(lambda self: self.started)
    @rule(draws=PLAYS, split=st.booleans())
    def step_legal(self, draws, split):
        for draw in draws:
            actions = self._actions(draw)
            if split:
                self.expect(True, lambda e, a=actions: e.step_async(a))
                self.check_step(self.expect(True, lambda e: e.step_wait()))
            else:
                self.check_step(self.expect(True, lambda e, a=actions: e.step(a)))

    @precondition(lambda self: self.started)
    @rule(draw=DRAWS)
    def step_async_only(self, draw):
        actions = self._actions(draw)
        self.expect(True, lambda e: e.step_async(actions))
        self.pending = True

    @rule()
    def step_wait(self):
        result = self.expect(self.pending, lambda e: e.step_wait(), match="step_async")
        if result is not None:
            self.check_step(result)

    @precondition(lambda self: self.started)
    @rule(draw=DRAWS, row=st.integers(0, 3))
    def step_illegal(self, draw, row):
        row = row % self.n
        actions = self._actions(draw)
        actions[row] = self._actions(draw, legal=False)[row]
        if self.config.illegal_action == "raise":
            self.expect(False, lambda e: e.step(actions), match=rf"actions\[{row}\].*not legal")
        else:
            self.check_step(self.expect(True, lambda e: e.step(actions)))

    @rule(data=st.data(), split=st.booleans())
    def step_bad(self, data, split):
        actions = np.zeros(self.n, np.int64)
        kind = data.draw(st.sampled_from(["range", "dtype", "shape", "object"]))
        if kind == "range":
            actions[data.draw(st.integers(0, self.n - 1))] = data.draw(
                st.one_of(st.integers(-2**40, -1), st.integers(rules.N_ACTIONS, 2**40)))
        elif kind == "dtype":
            actions = actions.astype(data.draw(st.sampled_from([np.float32, np.float64, bool])))
        elif kind == "shape":
            actions = np.zeros(data.draw(st.sampled_from([(self.n + 1,), (self.n, 2), ()])),
                               np.int64)
        else:
            actions = data.draw(st.sampled_from([None, "abc", [None] * self.n]))
        match = "reset" if not self.started else "actions"
        call = (lambda e: e.step_async(actions)) if split else (lambda e: e.step(actions))
        self.expect(False, call, match=match)

    # --- the SB3 plumbing ---
    INDICES = st.one_of(st.none(), st.integers(-1, 4), st.lists(st.integers(-1, 4), max_size=3),
                        st.sampled_from(["0", 1.0, [True], {0: 1}]))

    def _rows(self, indices) -> list | None:
        """The rows ``indices`` address (None: every row), or None if they are not valid."""
        if indices is None:
            return list(range(self.n))
        items = [indices] if isinstance(indices, int) and not isinstance(indices, bool) else indices
        if isinstance(items, list) and all(isinstance(i, int) and not isinstance(i, bool)
                                           and 0 <= i < self.n for i in items):
            return items
        return None

    def _all_rows(self, indices) -> bool:
        rows = self._rows(indices)
        return rows is not None and sorted(set(rows)) == list(range(self.n))

    @rule(name=st.sampled_from(["render_mode", "num_envs", "opponent", "config",
                                "skip_forced_waits", "no_such_attribute"]), indices=INDICES)
    def get_attr(self, name, indices):
        rows = self._rows(indices)
        if rows is not None and name == "no_such_attribute":
            with pytest.raises(AttributeError):  # as SB3's VecEnvs (has_attr relies on it)
                self.env.get_attr(name, indices)
            return
        out = self.expect(rows is not None, lambda e: e.get_attr(name, indices), match="indices")
        if rows is not None:
            value = getattr(self.env, name)
            if name == "opponent" and isinstance(value, list):  # rows with opponents of their own
                assert out == [value[i] for i in rows]
            else:
                assert out == [value] * len(rows)

    @rule(data=st.data())
    def set_attr(self, data):
        name, value, ok = data.draw(st.sampled_from([
            ("opponent", "random", True), ("opponent", "greedy@pro", True),
            ("opponent", "no_such_bot", False), ("skip_forced_waits", 1, True),
            ("skip_forced_waits", -1, False), ("my_level", 3, True), ("num_envs", 9, False),
            ("render_mode", "human", False), ("step", None, False), ("_seed", 1, False),
        ]))
        indices = data.draw(st.one_of(st.none(), st.just(list(range(self.n))), self.INDICES))
        rows = self._rows(indices)
        # the opponent may be set for some rows; anything else acts on the whole VecEnv
        ok = ok and (rows is not None if name == "opponent" else self._all_rows(indices))
        self.expect(ok, lambda e: e.set_attr(name, value, indices))
        if ok and name == "opponent":
            assert all(v == value for v in self.env.get_attr(name, rows))
        elif ok:
            assert getattr(self.env, name) == value

    @rule(data=st.data())
    def env_method(self, data):
        name = data.draw(st.sampled_from(["action_masks", "snapshot", "render", "set_opponent"]))
        indices = data.draw(self.INDICES)
        args = ("random",) if name == "set_opponent" else data.draw(st.sampled_from([(), (1,)]))
        rows = self._rows(indices)
        if rows is None:
            ok = False
        elif name == "set_opponent":
            ok = True  # for the rows of indices
        else:
            ok = args == () and (self.started or name == "render" or name == "snapshot" and not rows)
        out = self.expect(ok, lambda e: e.env_method(name, *args, indices=indices))
        if ok and name == "action_masks":
            masks = self.env.action_masks()
            assert all(np.array_equal(m, masks[i]) for m, i in zip(out, rows, strict=True))
        if ok and name == "snapshot":
            assert out == [self.env.snapshot(i) for i in rows]

    @rule(indices=INDICES)
    def env_is_wrapped(self, indices):
        from stable_baselines3.common.monitor import Monitor

        ok = self._rows(indices) is not None
        out = self.expect(ok, lambda e: e.env_is_wrapped(Monitor, indices), match="indices")
        assert ok <= (out is not None and not any(out))

    @rule(index=st.one_of(st.integers(-1, 4), st.sampled_from([1.0, "0", True])))
    def snapshot(self, index):
        ok = self.started and isinstance(index, int) and not isinstance(index, bool) and \
            0 <= index < self.n
        self.expect(ok, lambda e: e.snapshot(index), match="index|reset")

    @rule(also_close=st.booleans())
    def read(self, also_close):
        self.expect(self.started, lambda e: e.action_masks(), match="reset")
        text = self.env.render()
        assert (text is None) == (self.env.render_mode is None or not self.started)
        self.expect(self.started, lambda e: e.get_images(), match="reset")
        if also_close:
            self.close()

    @invariant()
    def holds(self):
        if self.env is None or not self.started:
            return
        duel = self.env.duel
        check_invariants(duel.state)
        full = duel.masks()[np.arange(self.n), duel.seat]
        assert np.array_equal(self.env.action_masks(), full)
        assert (duel.learner_observe()[:, rules.OBS["self_busy"].start] == 0.0).all()


MACHINES = [ParallelLifecycle, AECLifecycle, GymLifecycle, VecLifecycle]
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.filter_too_much])
#: The default suite: a few short sequences per view, the same ones on every run.
FAST = settings(max_examples=25, stateful_step_count=40, derandomize=True, database=None,
                **_COMMON)


@pytest.mark.parametrize("machine", MACHINES, ids=[m.__name__ for m in MACHINES])
def test_lifecycle(machine):
    run_state_machine_as_test(machine, settings=FAST)


@pytest.mark.slow
@pytest.mark.parametrize("machine", MACHINES, ids=[m.__name__ for m in MACHINES])
def test_lifecycle_deep(machine):
    """200 random sequences of up to 80 calls (SPIT_SLOW_SCALE=ci: 20 of 50)."""
    ci = os.environ.get("SPIT_SLOW_SCALE") == "ci"
    deep = settings(max_examples=20 if ci else 200, stateful_step_count=50 if ci else 80,
                    **_COMMON)
    run_state_machine_as_test(machine, settings=deep)
