"""How PPO starts (experiments.ppo.warm_start, experiments.ppo.pull, train_ppo's start flags).

The warm start records every teacher move (or says why it cannot), the discounted returns of its
games fit the critic (its loss drops on held-out games), the pull term is MaskablePPO's loss
when its coefficient is 0 and holds the policy near its anchor when positive, and a model file
given to ``--init-model`` or ``--pull-model`` must read the flags' input.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
torch = pytest.importorskip("torch")

from agents.network import input_options  # noqa: E402
from agents.ppo_model import new_model, save_model  # noqa: E402
from experiments.cli.checks import ArgumentError  # noqa: E402
from experiments.ppo.args import Args  # noqa: E402
from experiments.ppo.checks import validate  # noqa: E402
from experiments.ppo.envs import make_training_env  # noqa: E402
from experiments.ppo.pull import (  # noqa: E402
    PulledMaskablePPO,
    frozen_actor,
    pull_divergence,
    with_pull,
)
from experiments.ppo.warm_start import (  # noqa: E402
    collect_teacher_data,
    discounted_returns,
    fit_critic,
    held_out_idx,
    held_out_rows,
    lambda_returns,
)
from spit_env.policy import make_policy  # noqa: E402
from spit_env.rules import WAIT  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _env(num_envs=16, seed=1, opponent="greedy"):
    return make_training_env(num_envs=num_envs, groups=1, opponent=opponent, seed=seed,
                             learner_seat="random", reward="round", episode="game", shaping=0.0,
                             skip_forced_waits=True, truncation_reward=0.0)[2]


def _model(env, mask_wait=False, net_arch=(32,), **kwargs):
    kw = dict(n_steps=16, batch_size=64, n_epochs=2, seed=0, device="cpu", gamma=0.99)
    return new_model(env, net_arch=net_arch, options={"mask_wait": mask_wait},
                     **{**kw, **kwargs})


# --- the teacher's data ---------------------------------------------------------------------------
def test_every_teacher_move_is_recorded_waits_on_purpose_included():
    env = _env()
    data = collect_teacher_data(env, make_policy("racer"), 1500, {"mask_wait": False},
                                gamma=0.99)
    n = len(data.actions)
    assert n == data.played >= 1500 and data.forbidden == 0
    assert data.masks[np.arange(n), data.actions].all()
    chose_wait = (data.actions == WAIT) & data.masks[:, WAIT + 1:].any(axis=1)
    assert chose_wait.any(), "racer never waited on purpose: the test shows nothing"
    assert data.summary()["samples"] == n
    env.close()


def test_a_mask_that_forbids_teacher_moves_is_an_error_or_counted():
    env = _env()
    with pytest.raises(ValueError, match="mask_wait"):
        collect_teacher_data(env, make_policy("racer"), 1500, {"mask_wait": True})
    data = collect_teacher_data(env, make_policy("racer"), 1500, {"mask_wait": True},
                                on_forbidden="skip")
    assert data.forbidden > 0 and data.played == len(data.actions) + data.forbidden
    assert data.summary()["forbidden"] == data.forbidden
    with pytest.raises(ValueError, match="on_forbidden"):
        collect_teacher_data(env, make_policy("racer"), 10, {}, on_forbidden="drop")
    env.close()


def test_discounted_returns_follow_each_episode():
    rewards = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [2.0, 0.0]])
    dones = np.array([[False, True], [True, False], [False, True], [False, False]])
    g = discounted_returns(rewards, dones, 0.5)
    assert g[1, 0] == 1.0 and g[0, 0] == 0.5  # the first episode of row 0 ends at step 1
    assert np.isnan(g[2, 0]) and np.isnan(g[3, 0])  # row 0's second one never ends
    assert g[0, 1] == 1.0 and g[2, 1] == -1.0 and g[1, 1] == -0.5
    assert np.isnan(g[3, 1])
    with pytest.raises(ValueError, match="rewards and dones"):
        discounted_returns(rewards, dones[:2], 0.5)


def test_lambda_returns_are_ppos_targets():
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(6, 3))
    dones = rng.random((6, 3)) < 0.3
    dones[-1] = True  # every row's last episode ends: lambda 1 gives the discounted returns
    values = rng.normal(size=(6, 3))
    g = lambda_returns(values, rng.normal(size=3), rewards, dones, 0.9, 1.0)
    assert np.allclose(g, discounted_returns(rewards, dones, 0.9))
    # lambda 0: one step of reward, then the next value (none after an episode's end)
    g0 = lambda_returns(values, np.zeros(3), rewards, dones, 0.9, 0.0)
    following = np.vstack([values[1:], np.zeros((1, 3))])
    assert np.allclose(g0, rewards + 0.9 * following * ~dones)


# --- the critic's warm start -----------------------------------------------------------------------
def test_the_held_out_games_are_every_tenth_row():
    fitted, held = held_out_idx(25)
    np.testing.assert_array_equal(held, [0, 10, 20])
    np.testing.assert_array_equal(np.sort(np.concatenate([fitted, held])), np.arange(25))
    assert fitted.dtype.kind == held.dtype.kind == "i"
    with pytest.warns(DeprecationWarning, match="held_out_rows is deprecated"):
        old = held_out_rows(25, 4)
    for a, b in zip(old, held_out_idx(25, 4), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_critic_fit_explains_held_out_games_and_leaves_the_actor():
    env = _env(num_envs=20)
    model = _model(env)
    data = collect_teacher_data(env, make_policy("racer"), 6000, input_options(model), gamma=0.99)
    actor = [p.detach().clone() for p in model.policy.mlp_extractor.policy_net.parameters()]
    out = fit_critic(model, data, gamma=0.99, gae_lambda=0.95, steps=300, batch_size=128,
                     learning_rate=1e-3, seed=0, rounds=3, held_out=4)
    assert out["held_out_samples"] > 0 and out["samples"] > out["held_out_samples"]
    assert out["best_round"] > 0, "no round of the fit did better than the untrained critic"
    assert out["held_out_explained_variance"] > max(out["held_out_explained_variance_before"], 0)
    for p, q in zip(actor, model.policy.mlp_extractor.policy_net.parameters(), strict=True):
        assert torch.equal(p, q), "the critic's fit changed the actor"
    with pytest.raises(ValueError, match="held_out"):
        fit_critic(model, data, gamma=0.99, gae_lambda=0.95, steps=1, batch_size=8,
                   learning_rate=1e-3, seed=0, held_out=1)
    skipped = collect_teacher_data(env, make_policy("racer"), 500, {"mask_wait": True},
                                   on_forbidden="skip")
    with pytest.raises(ValueError, match="every decision"):
        fit_critic(model, skipped, gamma=0.99, gae_lambda=0.95, steps=1, batch_size=8,
                   learning_rate=1e-3, seed=0)
    env.close()


# --- the pull ----------------------------------------------------------------------------------------
def _filled(model):
    """``model`` after one rollout (its buffer full, no update made yet)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Stop(BaseCallback):
        def _on_step(self):
            return True

    model._setup_learn(model.n_steps * model.n_envs, None)
    callback = Stop()
    callback.init_callback(model)
    model.collect_rollouts(model.env, callback, model.rollout_buffer,
                           n_rollout_steps=model.n_steps)
    return model


def _state(model):
    return ({k: v.clone() for k, v in model.policy.state_dict().items()},
            model.policy.optimizer.state_dict())


def _restore(model, state):
    import copy

    model.policy.load_state_dict(state[0])
    model.policy.optimizer.load_state_dict(copy.deepcopy(state[1]))


def _train(model, seed=0):
    np.random.seed(seed)  # noqa: NPY002 - the rollout buffer's minibatches are drawn from NumPy's global RNG
    model.train()
    return {k: v.clone() for k, v in model.policy.state_dict().items()}


def test_zero_pull_is_maskable_ppos_own_update():
    from sb3_contrib import MaskablePPO

    env = _env()
    model = _filled(_model(env))
    start = _state(model)
    plain = _train(model)  # MaskablePPO.train
    assert type(model) is MaskablePPO
    _restore(model, start)
    pulled = with_pull(model, None, 0.0)
    assert isinstance(pulled, PulledMaskablePPO)
    same = _train(pulled)
    assert any(not torch.equal(start[0][k], plain[k]) for k in plain), "no update was made"
    for k in plain:
        assert torch.equal(plain[k], same[k]), k
    assert pulled.update_log[-1]["pull_kl"] is None
    env.close()


def test_a_positive_pull_holds_the_policy_near_its_anchor():
    env = _env()
    model = _filled(_model(env, learning_rate=3e-3, n_epochs=4))
    anchor = frozen_actor(model.policy)
    with torch.no_grad():  # another policy (a fresh one is near-uniform): the pull has work
        anchor.action_net.bias.copy_(torch.linspace(-2.0, 2.0, 23))
    obs = torch.as_tensor(model.rollout_buffer.observations.reshape(-1, model.observation_space
                                                                    .shape[0]))
    masks = torch.as_tensor(model.rollout_buffer.action_masks.reshape(-1, 23))
    before = float(pull_divergence(anchor, model.policy, obs, masks).detach())
    start = _state(model)
    after = {}
    for coef in (0.0, 5.0):
        _restore(model, start)
        pulled = with_pull(model, anchor if coef else None, coef)
        _train(pulled)
        after[coef] = float(pull_divergence(anchor, model.policy, obs, masks).detach())
    assert before > 0
    assert after[5.0] < before and after[5.0] < after[0.0]
    assert pulled.update_log[-1]["pull_kl"] > 0
    assert float(pull_divergence(anchor, anchor, obs, masks)) == pytest.approx(0, abs=1e-6)
    env.close()


def test_with_pull_refuses_bad_values_and_the_anchor_is_not_saved(tmp_path):
    from agents.network import load_model

    env = _env(num_envs=4)
    model = _model(env)
    for coef in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="pull_coef"):
            with_pull(model, frozen_actor(model.policy), coef)
    with pytest.raises(ValueError, match="anchor"):
        with_pull(model, None, 0.5)
    pulled = with_pull(model, frozen_actor(model.policy), 0.5)
    save_model(pulled, tmp_path / "m.zip")
    loaded = load_model(tmp_path / "m.zip")
    assert not hasattr(loaded, "anchor") or loaded.anchor is None
    env.close()


# --- the start flags ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    env = _env(num_envs=4)
    path = tmp_path_factory.mktemp("init") / "model.zip"
    save_model(new_model(env, net_arch=(32, 32), options={"mask_wait": False}, n_steps=8,
                         batch_size=32, seed=0, device="cpu"), path)
    env.close()
    return path


def test_a_matching_model_file_passes(saved_model):
    validate(Args(init_model=saved_model, net_arch=(32, 32)))
    validate(Args(pull_model=saved_model, pull_coef=0.1))  # the pull's file: any hidden layers


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        (dict(obs_mask=False), "--obs-mask"),
        (dict(racer_features=False), "--racer-features"),
        (dict(mask_wait=True, bc_steps=0), "--mask-wait"),
        (dict(obs_leave_out=("opp_idle",)), "--obs-leave-out"),
        (dict(net_arch=(64, 64)), "--net-arch"),
    ],
)
def test_a_model_file_that_reads_another_input_is_refused(saved_model, changes, named):
    args = Args(**{"net_arch": (32, 32), **changes, "init_model": saved_model})
    with pytest.raises(ArgumentError, match=named) as err:
        validate(args)
    assert str(err.value).startswith("--init-model")


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        (dict(critic_steps=-1), "--critic-steps"),
        (dict(critic_steps=10, num_envs=1, batch_size=32), "--critic-steps"),
        (dict(pull_coef=-0.5), "--pull-coef"),
        (dict(pull_coef=float("nan")), "--pull-coef"),
        (dict(pull_model="x.zip"), "--pull-model"),  # without --pull-coef
        (dict(pull_coef=0.1, pull_model="nowhere.zip"), "--pull-model"),
        (dict(init_model="nowhere.zip"), "--init-model"),
        (dict(init_model="a.zip", resume="b.zip"), "--resume"),
        (dict(mask_wait=True), "--no-mask-wait"),  # with the default warm start
    ],
)
def test_bad_start_flags_are_refused_naming_them(changes, named):
    with pytest.raises(ArgumentError, match=named):
        validate(Args(**changes))


def test_mask_wait_is_allowed_without_a_cloning_warm_start(saved_model):
    validate(Args(mask_wait=True, bc_steps=0))
    with pytest.raises(ArgumentError, match="--init-model"):  # the file has no mask_wait
        validate(Args(mask_wait=True, init_model=saved_model, net_arch=(32, 32)))
