"""``econarena report`` and ``econarena compare`` end to end, with the report rendered by headless Chromium.

The corpus covers every figure: a 20-session melee (payoffs, Table 1, win rates, rule breaks; 3 runs per
session so the scripted player's replies cycle), a second configuration group, and a rational environment
with history (violins, action paths).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from econarena.cli import main  # noqa: E402

ECONARENA = str(Path(sys.executable).with_name("econarena"))
FIGURES = ["fig1_melee_payoff", "fig2_rational_deviation", "fig3_groups", "fig4_action_paths",
           "fig5_rule_breaking", "fig6_sessions", "fig7_win_rates"]

MELEE = """
[experiment]
name = "{name}"
game = "beauty_contest"
sessions = {sessions}
runs = 3
seed = 11

[game]
upper_bound = {{ uniform = [{lo}, {hi}] }}

[[players]]
agent = "level_k"
label = "level-1 thinker with a long label"
k = 1

[[players]]
agent = "level_k"
label = "level-2"
k = 2

[[players]]
agent = "random"

[[players]]
agent = "scripted"
label = "flaky"
responses = ['{{"answer": 5}}', 'I am not sure', '{{"answer": 1e9}}']
"""

RATIONAL_HISTORY = """
[experiment]
name = "spa-rational-history"
game = "second_price_auction"
environment = "rational"
players_per_game = 4
sessions = 3
runs = 3
history = "full"
seed = 2

[game]
private_value = { normal = [50, 10] }
assets = 100

[[players]]
agent = "random"

[[players]]
agent = "scripted"
label = "overbidder"
responses = ['{"bid": 90}', '{"bid": 70}', '{"bid": 55}']
"""


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([ECONARENA, *args], env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _run(toml: str, tmp: Path, name: str) -> Path:
    cfg = tmp / f"{name}.toml"
    cfg.write_text(toml, encoding="utf-8")
    out = tmp / "runs" / name
    assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("corpus")
    return [
        _run(MELEE.format(name="bc-melee-L", sessions=20, lo=10, hi=100), tmp, "bc-melee-L"),
        _run(MELEE.format(name="bc-melee-H", sessions=3, lo=1000, hi=10000), tmp, "bc-melee-H"),
        _run(RATIONAL_HISTORY, tmp, "spa-rational-history"),
    ]


@pytest.fixture(scope="module")
def report(corpus: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    r = cli("report", *map(str, corpus), "--out", str(out), "--boot", "200")
    assert r.returncode == 0, r.stderr
    assert "report.html" in r.stdout and "not shown" not in r.stdout
    return out


def test_report_files(report: Path) -> None:
    for name in ("report.html", "metrics.csv", "decisions.parquet", "runs.parquet", "players.parquet"):
        assert (report / name).is_file(), name
    for key in FIGURES:
        png = (report / "figures" / f"{key}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
        assert (report / "figures" / f"{key}.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")
    metrics = pd.read_csv(report / "metrics.csv")
    assert {"experiment", "game", "environment", "history", "prompt", "group", "label", "metric", "value",
            "ci_low", "ci_high", "sessions"} <= set(metrics.columns)
    assert set(metrics["group"]) == {"L", "H"}
    flaky = metrics[(metrics["label"] == "flaky") & (metrics["metric"] == "rule_break_rate_pct")
                    & (metrics["experiment"] == "bc-melee-L")]
    assert flaky["value"].iloc[0] == pytest.approx(100.0 * 2 / 3, abs=0.01)  # 2 of every 3 replies break a rule


def test_report_html_is_self_contained(report: Path, corpus: list[Path]) -> None:
    html = (report / "report.html").read_text(encoding="utf-8")
    imgs = re.findall(r"<img src='data:image/png;base64,([A-Za-z0-9+/=]+)'[^>]*data-figure='(\w+)'", html)
    assert [key for _, key in imgs] == FIGURES
    for data, _ in imgs:
        assert base64.b64decode(data).startswith(b"\x89PNG")
    assert not re.search(r"(src|href)=['\"]https?://", html)  # nothing fetched from the network
    for d in corpus:  # every figure caption names its run directories
        assert d.name in html
    assert "Not shown" not in html
    assert "after 20 sessions" in html  # Table 1
    assert "Rule breaking, % of player-runs" in html  # Table 2


def test_report_skips_missing_figures_with_a_note(corpus: list[Path], tmp_path: Path) -> None:
    r = cli("report", str(corpus[2]), "--out", str(tmp_path), "--boot", "50")
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Not shown: Mean payoff per player in the melee environment" in html
    assert "Not shown: Payoff by configuration group" in html
    assert "data-figure='fig2_rational_deviation'" in html


def test_report_and_compare_errors(corpus: list[Path], tmp_path: Path) -> None:
    """Bad input is exit 2 with one line naming the argument; a typo'd folder beside a good one is not
    skipped in silence."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "exp.toml").write_text("[experiment]\n", encoding="utf-8")
    cases = [(("report", str(tmp_path / "missing")), "missing: no such file or directory"),
             (("report", str(tmp_path / "exp.toml")), "exp.toml: is a file, not a run directory"),
             (("report", str(corpus[0]), str(tmp_path / "empty")), "empty: holds no run directory"),
             (("compare", str(tmp_path / "empty"), str(corpus[0])), "empty: holds no run directory")]
    for args, expected in cases:
        r = cli(*args)
        assert r.returncode == 2 and expected in r.stderr, (args, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_compare_prints_side_by_side(corpus: list[Path], tmp_path: Path) -> None:
    csv = tmp_path / "cmp.csv"
    r = cli("compare", str(corpus[0]), str(corpus[1]), "--boot", "200", "--csv", str(csv))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "A: bc-melee-L" in out and "B: bc-melee-H" in out and "A - B" in out
    for label in ("level-2", "flaky", "random"):
        assert label in out
    assert "payoff ratio" in out and "rule breaking" in out and "independent samples" in out
    table = pd.read_csv(csv)
    assert {"label", "metric", "a_value", "b_value", "diff_value", "diff_low", "diff_high"} <= set(table.columns)


# ---------------------------------------------------------------------------------------- real browser

def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _browser(binary: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp / 'profile'}"]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=90)


def test_report_renders_in_chromium(report: Path, tmp_path: Path) -> None:
    binary = _chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, and CI must render the report (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    url = (report / "report.html").as_uri()
    dom = _browser(binary, tmp_path, "--virtual-time-budget=10000", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body, dom.stdout[:500]
    # the page's own load handler counted the decoded images
    assert f'data-images-total="{len(FIGURES)}"' in body.group(0)
    assert f'data-images-loaded="{len(FIGURES)}"' in body.group(0)
    for key in FIGURES:
        assert f'data-figure="{key}"' in dom.stdout
    assert "Uncaught" not in dom.stderr and "ERR_FILE_NOT_FOUND" not in dom.stderr

    shot = tmp_path / "report.png"
    r = _browser(binary, tmp_path, "--hide-scrollbars", "--window-size=1280,2400", f"--screenshot={shot}", url)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[0] == 2400 and pixels.shape[1] == 1280
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05  # not blank
    assert (rgb < 0.5).any(axis=-1).mean() > 0.01  # there is ink: text and figures


def test_report_of_a_directory_without_complete_runs(corpus: list[Path], tmp_path: Path) -> None:
    """Every run incomplete: the report still builds, with a note per missing figure and no crash."""
    from econarena.analysis.report import build_report

    d = tmp_path / "runs" / "broken"
    shutil.copytree(corpus[1], d)
    runs = [json.loads(line) for line in (d / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    (d / "runs.jsonl").write_text("".join(json.dumps({**r, "complete": False}) + "\n" for r in runs),
                                  encoding="utf-8")
    rep = build_report([d], tmp_path / "rep", n_boot=20)
    assert rep.figures == [] and len(rep.skipped) == len(FIGURES)
    html = rep.html.read_text(encoding="utf-8")
    assert "incomplete run(s) are left out" in html


def test_usage_table_costs_from_a_price_file(tmp_path: Path) -> None:
    from econarena.analysis.load import Frames
    from econarena.analysis.report import load_prices, usage_table

    prices = tmp_path / "prices.toml"
    prices.write_text('["gpt-x"]\ninput_per_mtok = 2.0\noutput_per_mtok = 8.0\n', encoding="utf-8")
    dec = pd.DataFrame({
        "label": ["api", "api", "local", "unpriced"], "agent": ["openai", "openai", "hf", "anthropic"],
        "model": ["gpt-x", "gpt-x", None, "claude-y"], "role": "player", "tokens_in": [600.0, 400.0, 50.0, 10.0],
        "tokens_out": [300.0, 200.0, 20.0, 5.0], "latency_s": [1.0, 3.0, 0.5, 0.1],
        "cached": [False, True, False, False], "error": [None, None, None, None], "run": 0})
    empty = pd.DataFrame()
    t = usage_table(Frames(empty, empty, dec, empty), load_prices(prices)).set_index("label")
    assert t.loc["api", "cost (USD)"] == f"{(1000 * 2.0 + 500 * 8.0) / 1e6:.4f}"
    assert t.loc["api", "tokens in"] == "1,000" and t.loc["api", "cached %"] == "50.0"
    assert t.loc["local", "cost (USD)"] == "0 (local)"
    assert t.loc["unpriced", "cost (USD)"] == "-"


def test_bad_prices_file_is_a_clear_error(corpus: list[Path], tmp_path: Path, capsys) -> None:
    # A missing or malformed --prices file used to end in a traceback (for `suite`: after every run).
    bad = tmp_path / "prices.toml"
    bad.write_text("[x\n")
    for prices in (str(tmp_path / "missing.toml"), str(bad)):
        assert main(["report", str(corpus[0]), "--out", str(tmp_path / "rep"), "--prices", prices]) == 2
        assert "--prices" in capsys.readouterr().err
    assert main(["suite", str(tmp_path), "--prices", str(bad)]) == 2


def test_a_label_that_reads_as_tex_is_drawn_as_text(tmp_path: Path, capsys) -> None:
    """Model names from other people's files (here NegotiationArena logs) go into every figure: "$\\frac{"
    made matplotlib's mathtext raise, and the whole report stopped with a traceback (exit 1)."""
    from test_na_import import gift, ult, write_logs

    names = ("$\\frac{1}{$ x", "a$b$_^{c")
    write_logs(tmp_path / "logs", {f"u/{i}": ult(names, ("NONE", gift(30 + i), "x"), ("ACCEPT", "NONE", "ok"))
                                   for i in range(2)})
    assert main(["import", "negotiationarena", str(tmp_path / "logs"), "--out", str(tmp_path / "na")]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "na"), "--out", str(tmp_path / "rep"), "--boot", "20",
                 "--transcripts", "0"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    svgs = [p.read_text(encoding="utf-8") for p in (tmp_path / "rep" / "figures").glob("*.svg")]
    assert svgs and any("frac{1}{$ x" in s for s in svgs)  # the name as typed (svg.fonttype none keeps text)
