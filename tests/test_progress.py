"""The one progress helper (spit_env/progress.py) and the scripts that use it: a bar on a terminal,
plain lines with rate and ETA in a log file, paused time left out of the rate. Time is a fake
clock's: nothing here sleeps."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spit_env.progress import Progress, format_duration, format_rate, is_terminal

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_at_each_tenth_with_rate_elapsed_and_eta():
    clock, out = Clock(), io.StringIO()
    p = Progress(1000, "final evaluation vs greedy", unit="games", stream=out, clock=clock)
    for _ in range(100):
        clock.t += 0.5
        p.update(10)  # 20 games/s
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10, lines  # nine tenths, then the end
    assert lines[0] == ("final evaluation vs greedy: 100/1,000 games (10%) | 20.0 games/s "
                        "| elapsed 00:05 | ETA 00:45")
    assert lines[-1].startswith("final evaluation vs greedy: 1,000/1,000 games (100%)")
    assert lines[-1].endswith("ETA 00:00")
    p.update(5)
    assert len(out.getvalue().splitlines()) == 10, "nothing after close"


def test_a_line_at_least_every_interval_and_none_within_the_minimum_gap():
    clock, out = Clock(), io.StringIO()
    p = Progress(10_000, "warm start", unit="samples", stream=out, clock=clock, every_s=30)
    for _ in range(7):  # 1% every 10 s: no tenth reached, but a line every 30 s
        clock.t += 10
        p.update(100)
    assert [ln.split(" | ")[0] for ln in out.getvalue().splitlines()] == [
        "warm start: 300/10,000 samples (3%)", "warm start: 600/10,000 samples (6%)"]
    quick, out2 = Progress(100, "quick", stream=io.StringIO(), clock=clock), None
    out2 = quick.stream
    for _ in range(100):  # all in 1 s: no line before the last one
        clock.t += 0.01
        quick.update(1)
    quick.close()
    assert len(out2.getvalue().splitlines()) == 1


def test_paused_time_is_left_out_of_the_rate_and_named_beside_it():
    clock, out = Clock(), io.StringIO()
    p = Progress(4000, "training", stream=out, clock=clock, paused_label="evaluations", lines=4)
    clock.t += 10
    p.update(1000)  # 100 steps/s
    with p.paused():
        clock.t += 30  # an evaluation
        assert p.working_s == pytest.approx(10)
    clock.t += 10
    p.update(1000)
    line = out.getvalue().splitlines()[-1]
    assert "2,000/4,000 steps (50%) | 100 steps/s without evaluations (00:30 of them; 40.0 with)" \
        in line
    assert "elapsed 00:50" in line and "ETA 00:50" in line  # the wall rate: pauses recur
    assert p.paused_s == pytest.approx(30)
    with p.paused():
        clock.t += 3950  # a long one: the wall rate drops below one a second
    p.update(1)
    assert "(1:06:20 of them; 2.0 s per step with)" in p.text()


def test_a_pause_before_any_work_is_left_out_of_the_eta_and_percentages_round_down():
    clock, out = Clock(), io.StringIO()
    p = Progress(200, "training", stream=out, clock=clock, paused_label="evaluations")
    with p.paused():  # the evaluation at step 0: once, not per step
        clock.t += 600
    clock.t += 10
    p.update(100)
    with p.paused():  # one during the work: they recur, the ETA counts them
        clock.t += 10
    p.update(99)
    text = p.text()
    assert text.startswith("199/200 steps (99%) | 19.9 steps/s without evaluations (10:10 of them")
    assert text.endswith("ETA 00:00")  # 1 step at 20 s per 199 steps: 0.1 s
    assert "ETA 00:00" not in Progress(200, "x", stream=out, clock=clock).text()  # nothing done


def test_unknown_total_counts_without_percentage_or_eta_and_slow_rates_read_per_item():
    clock, out = Clock(), io.StringIO()
    p = Progress(None, "playing game 0 of seed 7", stream=out, clock=clock)
    clock.t += 4
    p.update(2)
    p.close()
    assert out.getvalue().strip() == "playing game 0 of seed 7: 2 steps | 2.0 s per step | elapsed 00:04"
    assert format_rate(1, 3.4, "iterations") == "3.4 s per iteration"
    assert format_rate(1321, 1, "steps") == "1,321 steps/s"
    assert format_rate(0, 1, "games") == "? games/s"
    assert format_duration(3725) == "1:02:05" and format_duration(None) == "?"


def test_a_terminal_gets_a_bar_a_disabled_progress_writes_nothing():
    tty = Tty()
    assert is_terminal(tty) and not is_terminal(io.StringIO()) and not is_terminal(object())
    p = Progress(50, "tournament (1 pairing)", unit="games", stream=tty)
    for _ in range(50):
        p(1)  # the match library's callback form
    p.close()
    text = tty.getvalue()
    assert "\r" in text and "50/50 games (100%)" in text and "|" in text
    off = io.StringIO()
    q = Progress(5, "quiet", stream=off, enabled=False)
    q.update(5)
    q.close()
    assert off.getvalue() == "" and q.n == 5
    with pytest.raises(ValueError, match="lines"):
        Progress(5, "x", lines=0)
    with pytest.raises(ValueError, match="total"):
        Progress(-1, "x")


def test_after_close_the_figures_are_those_of_the_last_line():
    clock = Clock()
    out = io.StringIO()
    p = Progress(1000, "training", stream=out, clock=clock, paused_label="evaluations")
    with p.paused():
        clock.t += 40.0
    clock.t += 12.5
    p.update(1000)
    p.close()
    working, elapsed = p.working_s, p.elapsed_s
    clock.t += 30.0  # later readings, a summary's: the same figures, not the clock's
    assert (p.working_s, p.elapsed_s) == (working, elapsed) == (12.5, 52.5)
    assert f"| {format_rate(p.n, p.working_s, 'steps')} without" in out.getvalue().splitlines()[-1]


def test_results_written_beside_the_progress_go_where_they_are_sent_even_when_quiet(capsys):
    out = io.StringIO()
    p = Progress(2, "study", stream=out)
    p.write("a progress note")
    p.write("a result line", file=sys.stdout, always=True)
    quiet = Progress(2, "study", stream=out, enabled=False)
    quiet.write("not shown")
    quiet.write("a result under --quiet", file=sys.stdout, always=True)
    assert out.getvalue() == "a progress note\n"
    assert capsys.readouterr().out == "a result line\na result under --quiet\n"


def test_the_match_library_reports_games_done_of_the_pairings_games():
    from agents import arena

    out = io.StringIO()
    p = Progress(2 * 3, "pairing", unit="games", stream=out)
    from spit_env.config import SpitConfig

    # games capped at 60 s of simulated time (a truncation is a draw): the count is the point
    res = arena.play_pairing("greedy", "racer", 3, progress=p,
                             config=SpitConfig(max_game_ms=60_000))
    p.close()
    assert p.n == res.games == 6
    assert out.getvalue().splitlines()[-1].startswith("pairing: 6/6 games (100%)")


def _script(module, *args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("module", "args", "line"), [
    ("experiments.tournament", ["--players", "greedy,racer", "--games", "1"],
     r"^tournament \(1 pairing\): 2/2 games \(100%\) \| [\d.,]+ (games/s|s per game) "
     r"\| elapsed \d\d:\d\d \| ETA 00:00$"),
    ("experiments.replay", ["--players", "greedy,racer", "--json", "{tmp}/g.json"],
     r"^playing game 0 of seed 0: [\d,]+ steps \| .+ \| elapsed \d\d:\d\d$"),
    ("experiments.game_stats", ["--players", "greedy", "--games", "1"],
     r"^game statistics: 1/1 games \(100%\) \| .+ \| ETA 00:00$"),
])
def test_scripts_write_plain_progress_lines_to_a_log(module, args, line, tmp_path):
    proc = _script(module, *[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "\r" not in proc.stderr + proc.stdout, "a progress bar wrote to the log"
    lines = [ln for ln in proc.stderr.splitlines() if re.match(line, ln)]
    assert len(lines) == 1, proc.stderr  # the last line, once


def test_eta_is_the_work_left_over_the_rate_of_work_with_groups_of_unequal_cost():
    import io

    from spit_env.progress import Progress

    clock = [0.0]
    out = io.StringIO()
    # 90 cheap games (cost 1) and 10 slow ones (cost 100): 1,090 units of work
    bar = Progress(None, "tournament", unit="games", stream=out, bar=False, lines=100,
                   min_gap_s=0, groups=[(90, 1.0), (10, 100.0)], clock=lambda: clock[0])
    assert bar.total == 100 and bar.total_work == 1090
    clock[0] = 9.0
    bar.update(90, group=0)  # 90 of 100 games, but 90 of 1,090 units of work
    line = bar.text()
    assert line.startswith("90/100 games (8%)")  # the share of the work
    assert "ETA 01:40" in line  # 1,000 units at 10 units/s = 100 s; games alone would say 00:01
    clock[0] = 59.0
    bar.update(5, group=1)
    assert "ETA 00:50" in bar.text()  # 500 units left at 590 / 59 = 10 units/s
    with pytest.raises(ValueError, match="group"):
        bar.update(1)
    with pytest.raises(ValueError, match="total"):
        Progress(99, "x", groups=[(90, 1.0), (10, 2.0)])
    with pytest.raises(ValueError, match="cost"):
        Progress(None, "x", groups=[(1, 0.0)])
