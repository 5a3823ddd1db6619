"""The sentences that open summary and report (analysis/findings.py), against expectations written by hand
for three studies, plus the report and summary of a real run opening with them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from econarena.analysis import findings as F


def rows(setting: dict[str, str], table: dict[str, dict[str, tuple]], sessions: int = 8) -> list[dict]:
    """Long metric-table rows (metrics.csv's shape): label -> metric -> (value, low, high, n)."""
    out = []
    for label, metrics in table.items():
        for metric, (value, low, high, n) in metrics.items():
            out.append({"run_dir": setting["experiment"], "game": "g", "prompt": "default", "group": "", **setting,
                        "label": label, "metric": metric, "value": value, "ci_low": low, "ci_high": high, "n": n,
                        "sessions": sessions})
    return out


def test_study_1_is_my_model_rational_the_demo() -> None:
    """The demo's shape: a model that breaks rules, level-2 far above its equilibrium share, rational at 0."""
    table = rows({"experiment": "quickstart", "environment": "melee", "history": "actions"}, {
        "SmolLM2": {"payoff_ratio": (0.0, 0.0, 0.0, 16), "rule_break_rate_pct": (100.0, 100.0, 100.0, 16),
                    "parse_error_pct": (0.0, 0.0, 0.0, 16), "rule_violation_pct": (75.0, 60.0, 90.0, 16)},
        "level-2": {"payoff_ratio": (4.06, 2.5, 5.0, 16), "mean_deviation": (0.22, 0.22, 0.22, 16),
                    "rule_break_rate_pct": (0.0, 0.0, 0.0, 16)},
        "rational": {"payoff_ratio": (0.0, 0.0, 0.0, 16), "mean_deviation": (0.0, 0.0, 0.0, 16),
                     "rule_break_rate_pct": (0.0, 0.0, 0.0, 16)},
    })
    [(title, said), (empty, [closing])] = F.report_findings(table)
    assert empty == ""
    assert title == "quickstart / history actions (melee)"
    assert said == [  # SmolLM2 has no deviation (no valid move): a ranking of the other two would mislead
        "SmolLM2 gave no usable reply (no valid move to measure). No ranking by distance to the equilibrium is "
        "given: it would rank only the others.",
        "SmolLM2 broke a rule in 100% [100, 100] of 16 runs, mostly moves the rules forbid; level-2 and rational "
        "broke none. A run with a rule break scores 0, whatever the game paid.",
        "A payoff ratio above 1 means earning more than the equilibrium pays, at the expense of players who left "
        "it: level-2 4.06 [2.50, 5.00]. The intervals lie above 1.",
        "rational played the equilibrium yet earned 0.00 [0.00, 0.00] times the equilibrium payoff: in a melee "
        "whose other players leave the equilibrium, it is no longer the best reply, so a low ratio (even 0) is "
        "no mistake of its own.",
        "SmolLM2: ratio 0 because every run broke a rule.",
    ]
    assert closing == "[brackets]: 95% bootstrap intervals over sessions, 8 per setting (few sessions: the " \
                      "intervals are wide)."


def test_study_2_melee_vs_rational_overlapping_intervals() -> None:
    """Two settings of one model; within the rational table two players cannot be told apart."""
    melee = rows({"experiment": "bc-melee", "environment": "melee", "history": "none"}, {
        "gpt": {"payoff_ratio": (0.8, 0.5, 1.1, 40), "mean_deviation": (0.30, 0.20, 0.40, 40),
                "rule_break_rate_pct": (5.0, 0.0, 12.5, 40), "parse_error_pct": (2.0, 0.0, 5.0, 40),
                "schema_error_pct": (3.0, 0.0, 6.0, 40)},
        "random": {"payoff_ratio": (1.3, 0.9, 1.8, 40), "mean_deviation": (0.45, 0.35, 0.55, 40),
                   "rule_break_rate_pct": (0.0, 0.0, 0.0, 40)},
    }, sessions=40)
    rational = rows({"experiment": "bc-rational", "environment": "rational", "history": "none"}, {
        "gpt": {"payoff_ratio": (0.6, 0.4, 0.8, 40), "mean_deviation": (0.12, 0.05, 0.20, 40),
                "rule_break_rate_pct": (0.0, 0.0, 0.0, 40)},
        "claude": {"payoff_ratio": (0.7, 0.5, 0.9, 40), "mean_deviation": (0.15, 0.08, 0.22, 40),
                   "rule_break_rate_pct": (0.0, 0.0, 0.0, 40)},
    }, sessions=40)
    got = F.report_findings(melee + rational)
    assert [t for t, _ in got] == ["bc-melee (melee)", "bc-rational (rational)", ""]
    assert got[0][1] == [
        "Closest to the equilibrium: gpt (mean deviation 0.300 [0.200, 0.400]); furthest: random "
        "(0.450 [0.350, 0.550]). gpt and random cannot be told apart at this sample size: their 95% intervals "
        "overlap.",
        "gpt broke a rule in 5% [0, 12] of 40 runs, mostly replies of the wrong shape; random broke none. A run "
        "with a rule break scores 0, whatever the game paid.",
        "A payoff ratio above 1 means earning more than the equilibrium pays, at the expense of players who left "
        "it: random 1.30 [0.90, 1.80]. For random the interval reaches down to 1: it may be chance.",
    ]
    assert got[1][1] == [
        "Closest to the equilibrium: gpt (mean deviation 0.120 [0.050, 0.200]); furthest: claude "
        "(0.150 [0.080, 0.220]). gpt and claude cannot be told apart at this sample size: their 95% intervals "
        "overlap.",
        "No player broke a rule.",
    ]
    assert got[2][1] == ["[brackets]: 95% bootstrap intervals over sessions, 40 per setting."]


def test_study_3_a_summary_without_intervals_and_no_equilibrium() -> None:
    """One run directory's summary (no intervals): a game without a declared equilibrium says nothing of one."""
    summary = {"run_dir": "runs/history", "labels": {
        "with-history": {"player_runs": 30, "payoff_ratio": None, "mean_deviation": None,
                         "rule_break_rate_pct": 10.0, "violations": {"parse_error": 3, "schema_error": 0,
                                                                     "rule_violation": 1}},
        "without": {"player_runs": 30, "payoff_ratio": None, "mean_deviation": None, "rule_break_rate_pct": 0.0,
                    "violations": {"parse_error": 0, "schema_error": 0, "rule_violation": 0}},
    }}
    assert F.summary_findings(summary) == [
        "with-history broke a rule in 10% of 30 runs, mostly unreadable replies (parse errors); without broke "
        "none. A run with a rule break scores 0, whatever the game paid.",
        "Means over 30+ player-runs per label, without intervals: `econarena report` adds 95% intervals and says "
        "which differences are clear of the noise.",
    ]
    assert F.summary_findings({"labels": {}}) == []


def test_a_tie_and_a_single_label() -> None:
    both = rows({"experiment": "x", "environment": "self", "history": "none"}, {
        "a": {"mean_deviation": (0.0, 0.0, 0.0, 4)}, "b": {"mean_deviation": (0.0, 0.0, 0.0, 4)}})
    assert F.report_findings(both)[0][1][0].endswith("a and b are level (2 players).")
    one = rows({"experiment": "x", "environment": "self", "history": "none"}, {"a": {"mean_deviation": (0.5, 0.4,
                                                                                                       0.6, 4)}})
    assert F.report_findings(one)[0][1][0] == "a's mean deviation from the equilibrium is 0.500 [0.400, 0.600]."


def test_summary_and_report_of_a_real_run_open_with_the_findings(tmp_path: Path) -> None:
    exe = str(Path(sys.executable).with_name("econarena"))
    (tmp_path / "bc.toml").write_text("""[experiment]
name = "bc"
game = "beauty_contest"
sessions = 4
runs = 1
seed = 7

[[players]]
agent = "rational"

[[players]]
agent = "scripted"
label = "babbler"
responses = ["no idea"]
""", encoding="utf-8")
    subprocess.run([exe, "run", "bc.toml", "--out", "runs/bc", "--quiet"], cwd=tmp_path, check=True,
                   capture_output=True)
    out = subprocess.run([exe, "summary", "runs/bc"], cwd=tmp_path, check=True, capture_output=True,
                         text=True).stdout
    # two seats, the babbler never valid: the rational player wins the whole prize of 100 every time, twice
    # the equilibrium's 100 / 2 (ratio 2.00); the babbler scores 0 with parse errors in all 4 runs
    summary = json.loads((tmp_path / "runs/bc/summary.json").read_text())
    assert summary["labels"]["rational"]["payoff_ratio"] == 2.0
    first = " ".join(out.split("\n\n")[0].split())
    # the worst news first: all 4 of the babbler's replies were parse errors; rational alone is no ranking,
    # so its own deviation is still said
    assert first.startswith("== runs/bc babbler gave no usable reply (100% of 4 replies invalid). rational's "
                            "mean deviation from the equilibrium is 0.000 (it played the")
    assert "babbler broke a rule in 100% of 4 runs, mostly unreadable replies (parse errors)" in " ".join(
        out.split())
    assert out.index("label ") > out.index("babbler broke a rule")  # sentences first, then the table
    assert "ratio: mean payoff / the equilibrium's payoff" in out
    subprocess.run([exe, "report", "runs/bc", "--out", "rep"], cwd=tmp_path, check=True, capture_output=True)
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert page.index("What the numbers say") < page.index("<table")
    assert "at the expense of players who left it: rational 2.00 [2.00, 2.00]. The intervals lie above 1." in page


def test_bench_scorecard_sentences_by_hand() -> None:
    """A bench result (bench.json's shape) against its baselines: the overall score, each baseline's verdict,
    the best and weakest family, and rule breaks."""
    result = {"model": {"label": "my-model"}, "complete": True,
              "overall": {"score": 55.0, "low": 50.0, "high": 60.0},
              "subscores": {"econarena": {"title": "EconArena", "score": 70.0, "low": 65.0, "high": 75.0},
                            "glee": {"title": "GLEE", "score": 40.0, "low": None, "high": None}},
              "games": [{"id": "beauty_contest", "rule_break_pct": 0.0},
                        {"id": "bargaining", "rule_break_pct": 12.5}, {"id": "persuasion", "rule_break_pct": 25.0}]}
    baselines = [{"model": {"label": "random"}, "overall": {"score": 30.0, "low": 28.0, "high": 32.0}},
                 {"model": {"label": "rational"}, "overall": {"score": 58.0, "low": 55.0, "high": 61.0}}]
    assert F.bench_findings(result, baselines) == [
        "my-model scores 55.0 [50.0, 60.0] out of 100.",
        "The random baseline scores 30.0 [28.0, 32.0]; my-model is above it, and the intervals do not overlap.",
        "The rational baseline scores 58.0 [55.0, 61.0]; my-model is not clearly apart from it: its score lies "
        "in the model's interval.",
        "Best family: EconArena (70.0 [65.0, 75.0]); weakest: GLEE (40.0).",
        "It broke a rule in 2 of 3 games, most in persuasion (25% of its runs); a run with a rule break scores 0.",
    ]
    unfinished = {**result, "complete": False, "games": []}
    assert F.bench_findings(unfinished)[0] == "my-model scores 55.0 [50.0, 60.0] out of 100 so far (incomplete: " \
                                              "not ranked)."


def test_each_meaning_is_explained_once_per_page() -> None:
    """Two settings that both need the ratio and rule-break explanations: the second names the players only."""
    table = {"winner": {"payoff_ratio": (2.0, 1.5, 2.5, 10), "rule_break_rate_pct": (0.0, 0.0, 0.0, 10)},
             "breaker": {"payoff_ratio": (0.0, 0.0, 0.0, 10), "rule_break_rate_pct": (100.0, 100.0, 100.0, 10)}}
    got = F.report_findings(rows({"experiment": "a", "environment": "melee", "history": "none"}, table)
                            + rows({"experiment": "b", "environment": "melee", "history": "none"}, table))
    first, second = got[0][1], got[1][1]
    assert first[0] == "breaker broke a rule in 100% [100, 100] of 10 runs; winner broke none. A run with a rule " \
                       "break scores 0, whatever the game paid."
    assert second[0] == "breaker broke a rule in 100% [100, 100] of 10 runs; winner broke none."
    assert first[1].startswith("A payoff ratio above 1 means earning more than the equilibrium pays")
    assert second[1] == "Payoff ratio above 1: winner 2.00 [1.50, 2.50]. The intervals lie above 1."


def test_figure_labels_never_collide_and_a_figure_of_zeros_is_a_sentence(tmp_path: Path) -> None:
    """The demo's labels (SmolLM2-135M among short ones) collided in Figure 1: the crowded-label check
    looked for a formatter matplotlib 3.11 no longer uses. Measured here on the saved figure's layout; and
    a rule-break heat map with nothing but zeros is replaced by its sentence."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure as MplFigure

    from econarena.analysis import figures

    fig = MplFigure(figsize=(6.5, 3.4), layout="constrained")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    ax = fig.subplots()
    labels = ["level-2", "random", "SmolLM2-135M", "level-1", "rational"]
    ax.bar(range(5), [4.4, 0.6, 0, 0, 0])
    figures._xticks(ax, labels, range(5))
    ax.legend(handles=[], title="quickstart (history: actions) and a long experiment name", loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    fig.canvas.draw()
    assert figures._labels_overlap(ax)  # side by side in the final layout they collide...
    figures._save(fig, tmp_path, "labels", [])
    assert all(t.get_rotation() == 30 for t in ax.get_xticklabels())  # ...so the saved figure rotates them

    exe = str(Path(sys.executable).with_name("econarena"))
    (tmp_path / "clean.toml").write_text("""[experiment]
name = "clean"
game = "beauty_contest"
sessions = 3
runs = 1
seed = 1

[[players]]
agent = "rational"

[[players]]
agent = "random"
""", encoding="utf-8")
    subprocess.run([exe, "run", "clean.toml", "--out", "runs/clean", "--quiet"], cwd=tmp_path, check=True,
                   capture_output=True)
    subprocess.run([exe, "report", "runs/clean", "--out", "rep"], cwd=tmp_path, check=True, capture_output=True)
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert not (tmp_path / "rep" / "figures" / "fig5_rule_breaking.png").exists()
    assert "no player broke a rule: every player-run of random, rational gave only valid replies" in page


def test_the_worst_news_leads_a_model_whose_replies_were_all_cut() -> None:
    """The bundled model at 512 tokens: 16 of 16 replies cut, no rule break recorded. The first sentence says
    so, the ranking of the baselines without it is left out, and "no rule broken" is not read as good news."""
    summary = {"labels": {
        "my-model": {"player_runs": 16, "decisions": 16, "payoff_ratio": 0.0, "rule_break_rate_pct": 0.0,
                     "truncated_replies": 16, "violations": {"parse_error": 0, "schema_error": 0,
                                                             "rule_violation": 0}},
        "rational": {"player_runs": 16, "decisions": 16, "payoff_ratio": 0.5, "mean_deviation": 0.0,
                     "rule_break_rate_pct": 0.0, "violations": {}},
        "level-2": {"player_runs": 16, "decisions": 16, "payoff_ratio": 1.5, "mean_deviation": 0.25,
                    "rule_break_rate_pct": 0.0, "violations": {}},
    }}
    got = F.summary_findings(summary, "melee")
    assert got[0] == ("my-model gave no usable reply (100% of 16 replies cut at max_tokens). No ranking by distance "
                      "to the equilibrium is given: it would rank only the others. Raise max_tokens, or set "
                      "structured = \"format\".")
    assert got[1] == "No player broke a rule (a reply cut at max_tokens counts as no break)."
    assert not any("Closest to the equilibrium" in x for x in got)


def test_most_replies_unusable_leads_but_the_ranking_stays() -> None:
    """12 of 16 replies unusable (8 cut = 50%, 4 invalid = 25%): 75% > half, said first; the model still has
    a deviation from its 4 usable moves, so the ranking is given after it."""
    summary = {"labels": {
        "m": {"player_runs": 16, "decisions": 16, "payoff_ratio": 0.2, "mean_deviation": 0.4,
              "rule_break_rate_pct": 25.0, "truncated_replies": 8,
              "violations": {"parse_error": 4, "schema_error": 0, "rule_violation": 0}},
        "rational": {"player_runs": 16, "decisions": 16, "payoff_ratio": 0.5, "mean_deviation": 0.0,
                     "rule_break_rate_pct": 0.0, "violations": {}},
    }}
    got = F.summary_findings(summary)
    assert got[0] == ("Most of m's replies were unusable (50% of 16 replies cut at max_tokens and 25% invalid): its "
                      "numbers rest on the few that were.")
    assert got[1].startswith("Closest to the equilibrium: rational (mean deviation 0.000); furthest: m (0.400).")
    half = {"labels": {**summary["labels"], "m": {**summary["labels"]["m"], "truncated_replies": 4}}}
    assert F.summary_findings(half)[0].startswith("Closest to the equilibrium")  # 4 + 4 of 16: half, not most


def test_report_rows_name_a_player_that_was_all_invalid() -> None:
    """From the long table: violations_per_decision_pct 100 is no usable reply, even with a deviation column
    missing from none of the others."""
    table = rows({"experiment": "e", "environment": "melee", "history": "none"}, {
        "bad": {"payoff_ratio": (0.0, 0.0, 0.0, 8), "rule_break_rate_pct": (100.0, 100.0, 100.0, 8),
                "violations_per_decision_pct": (100.0, 100.0, 100.0, 8), "parse_error_pct": (100.0, 100.0, 100.0, 8)},
        "a": {"payoff_ratio": (1.0, 1.0, 1.0, 8), "mean_deviation": (0.1, 0.05, 0.15, 8),
              "rule_break_rate_pct": (0.0, 0.0, 0.0, 8), "violations_per_decision_pct": (0.0, 0.0, 0.0, 8)},
        "b": {"payoff_ratio": (1.0, 1.0, 1.0, 8), "mean_deviation": (0.3, 0.25, 0.35, 8),
              "rule_break_rate_pct": (0.0, 0.0, 0.0, 8), "violations_per_decision_pct": (0.0, 0.0, 0.0, 8)},
    })
    (_, said), _ = F.report_findings(table)
    assert said[0] == ("bad gave no usable reply (100% [100, 100] of 8 replies invalid). No ranking by distance to "
                       "the equilibrium is given: it would rank only the others.")
    assert said[1].startswith("bad broke a rule in 100% [100, 100] of 8 runs, mostly unreadable replies")
