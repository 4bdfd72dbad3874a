"""Every game a trainer plays gets the settings its flags give, on every path.

One tiny run of each trainer, in this process, with every game it sets up recorded (the
environments it builds, the planner's rollouts, the evaluations' matches), at settings that differ
from the defaults; each test then holds one path to the flags, so a path that silently built its
games with the defaults fails its test.
"""

from __future__ import annotations

import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("tyro")

import agents.arena  # noqa: E402
from spit_env import core  # noqa: E402
from spit_env.config import SpitConfig  # noqa: E402
from spit_env.envs.vec import SpitVecEnv  # noqa: E402
from spit_env.latency import Latency  # noqa: E402

LATENCY, MAX_GAME_MS = "pro", 20_000  # not SpitConfig's defaults (club, 30 min)


def _game_config() -> SpitConfig:
    return SpitConfig(latency=Latency.parse(LATENCY), max_game_ms=MAX_GAME_MS)


class _Recorder:
    """Spies on the places games are set up: envs built, opponents set, matches, rollouts."""

    def __init__(self, monkeypatch, *env_modules):
        self.envs: list[tuple[dict, SpitVecEnv]] = []
        self.opponents: list[tuple[SpitVecEnv, object]] = []
        self.matches: list[dict] = []
        self.rollouts: list[SpitConfig] = []
        recorder = self

        class RecordedVecEnv(SpitVecEnv):
            def __init__(self, num_envs, *args, **kwargs):
                super().__init__(num_envs, *args, **kwargs)
                recorder.envs.append(({"num_envs": num_envs, **kwargs}, self))

            def set_opponent(self, opponent, *args, **kwargs):
                recorder.opponents.append((self, opponent))
                return super().set_opponent(opponent, *args, **kwargs)

        for module in env_modules:
            monkeypatch.setattr(module, "SpitVecEnv", RecordedVecEnv)
        play_pairings, copy_rows = agents.arena.play_pairings, core.copy_rows

        def recorded_pairings(pairings, deals, *, config, seed, **kwargs):
            recorder.matches.append({"seed": seed, "config": config, "pairings": len(pairings)})
            return play_pairings(pairings, deals, config=config, seed=seed, **kwargs)

        def recorded_copy_rows(state, *args, **kwargs):
            recorder.rollouts.append(state.config)
            return copy_rows(state, *args, **kwargs)

        monkeypatch.setattr(agents.arena, "play_pairings", recorded_pairings)
        monkeypatch.setattr(core, "copy_rows", recorded_copy_rows)
        self.play_pairings = recorded_pairings


# --- train_ppo ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    """A tiny train_ppo run with self-play, a warm start and evaluations during training."""
    import experiments.ppo.envs as envs
    import experiments.ppo.evaluation as evaluation
    from experiments.ppo.args import Args
    from experiments.ppo.run import train

    args = Args(
        total_timesteps=1024, num_envs=8, n_steps=64, batch_size=256, n_epochs=1, net_arch=(16,),
        opponent="greedy", self_play=True, self_play_every=256, mix_groups=2,
        reward="game", episode="round", shaping=0.05, learner_seat="1", skip_forced_waits=False,
        truncation_reward=-0.5, bc_steps=5, bc_samples=100, bc_batch_size=32,
        eval_games=2, eval_games_during=2, eval_freq=512, eval_opponents=("random",),
        eval_latency=LATENCY, eval_max_game_ms=MAX_GAME_MS, keep_best=True,
        checkpoint_freq=0, progress_bar=False, tensorboard=False,
        out=tmp_path_factory.mktemp("ppo_config_paths"))
    with pytest.MonkeyPatch.context() as mp:
        recorder = _Recorder(mp, envs)
        mp.setattr(evaluation, "play_pairings", recorder.play_pairings)
        recorder.truncation_rewards = []

        class RecordedTruncation(envs.TruncationReward):
            def __init__(self, venv, reward):
                super().__init__(venv, reward)
                recorder.truncation_rewards.append(self.reward)

        mp.setattr(envs, "TruncationReward", RecordedTruncation)
        result = train(args)
    return args, recorder, result


def _ppo_env(recorder, seed_is_training: bool, args):
    envs = [(kw, env) for kw, env in recorder.envs if (kw.get("seed") == args.seed)
            == seed_is_training]
    assert len(envs) == 1, [kw for kw, _ in recorder.envs]
    return envs[0]


def _assert_training_settings(kwargs: dict, env: SpitVecEnv, args) -> None:
    assert kwargs["num_envs"] == args.num_envs
    assert (kwargs["reward"], kwargs["episode"], kwargs["shaping"]) == (
        args.reward, args.episode, args.shaping)
    assert kwargs["learner_seat"] == int(args.learner_seat)
    assert kwargs["skip_forced_waits"] == 0  # --no-skip-forced-waits
    assert env.config == SpitConfig()  # train_ppo's training games: the default rules and time


def test_ppo_training_env_gets_the_flags(ppo_run):
    args, recorder, result = ppo_run
    kwargs, env = _ppo_env(recorder, True, args)
    _assert_training_settings(kwargs, env, args)
    # the model reads its mask under the rules of the games it trains in
    from agents.network import load_model

    options = load_model(args.out / "model.zip").policy.spit_options
    assert (options["auto_flip"], options["wrap_ranks"]) == (env.config.auto_flip,
                                                             env.config.wrap_ranks)


def test_ppo_training_and_warm_start_games_score_a_truncation_as_the_flag_says(ppo_run):
    args, recorder, _ = ppo_run
    assert recorder.truncation_rewards == [args.truncation_reward] * 2


def test_ppo_warm_start_games_get_the_training_flags(ppo_run):
    args, recorder, result = ppo_run
    assert result["config"]["behaviour_cloning"]["samples"] >= args.bc_samples
    kwargs, env = _ppo_env(recorder, False, args)  # the warm start's games: their own seed
    _assert_training_settings(kwargs, env, args)


def test_ppo_self_play_pool_plays_in_the_training_games(ppo_run):
    from agents.network import NetworkPolicy

    args, recorder, _ = ppo_run
    _, training = _ppo_env(recorder, True, args)
    snapshots = [(env, o) for env, o in recorder.opponents if isinstance(o, NetworkPolicy)]
    assert snapshots, "no snapshot joined the pool"
    assert all(env is training for env, _ in snapshots)


def test_ppo_evaluations_during_training_get_the_eval_flags(ppo_run):
    args, recorder, result = ppo_run
    during = [m for m in recorder.matches if m["seed"] == args.eval_during_seed]
    # at 0 (with the bots' levels in its batch), at 512, and the last model (--keep-best)
    assert len(during) == len(result["history"]) == 3
    assert during[0]["pairings"] > len(args.eval_opponents), "no levels in the first batch"
    assert all(m["config"] == _game_config() for m in during)


def test_ppo_final_evaluation_gets_the_eval_flags(ppo_run):
    args, recorder, result = ppo_run
    final = [m for m in recorder.matches if m["seed"] == args.eval_seed]
    assert len(final) == 1 and final[0]["config"] == _game_config()
    assert result["final"]["latency"] == LATENCY
    assert len(recorder.matches) == 4  # no other evaluation


# --- expert_iteration -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory):
    """A tiny expert-iteration run: round 0 (racer's labels) and one planner round."""
    import experiments.expert.network as network
    import experiments.expert.positions as positions
    from experiments.expert_iteration import main

    out = tmp_path_factory.mktemp("expert_config_paths") / "run"
    argv = ["--rounds", "1", "--out", str(out), "--num-envs", "8", "--labels", "24",
            "--bc-labels", "48", "--fit-steps", "5", "--bc-fit-steps", "5", "--fit-batch-size",
            "8", "--rollouts", "2", "--horizon-ms", "400", "--eval-deals", "2", "--net-arch",
            "16", "--eval-latency", LATENCY, "--max-game-ms", str(MAX_GAME_MS), "--quiet",
            "--opponents", "racer:1,self:1"]
    with pytest.MonkeyPatch.context() as mp:
        recorder = _Recorder(mp, positions, network)
        assert main(argv) == 0
    return out, recorder


def test_expert_labelling_games_get_the_flags(expert_run):
    _, recorder = expert_run
    games = [env for kw, env in recorder.envs if kw.get("reward") == "game"
             and "seed" in kw]
    assert len(games) == 2  # round 0's and round 1's
    assert all(env.config == _game_config() for env in games)


def test_expert_planner_rollouts_play_under_the_flags(expert_run):
    _, recorder = expert_run
    assert recorder.rollouts, "the planner made no rollout"
    assert all(config == _game_config() for config in recorder.rollouts)


def test_expert_network_reads_the_rules_of_its_games(expert_run):
    out, recorder = expert_run
    built = [env for kw, env in recorder.envs if "seed" not in kw]  # new_network's
    assert len(built) == 1 and built[0].config == _game_config()
    from agents.network import load_model

    options = load_model(out / "model.zip").policy.spit_options
    assert (options["auto_flip"], options["wrap_ranks"]) == (_game_config().auto_flip,
                                                             _game_config().wrap_ranks)


def test_expert_evaluations_get_the_flags(expert_run):
    _, recorder = expert_run
    assert len(recorder.matches) == 2  # one per round
    assert all(m["config"] == _game_config() for m in recorder.matches)
