"""Types as a contract: make lint type-checks the package, and the types the checker relies on hold at run time.

mypy itself runs in ``make lint`` (a minute and more cold), not here; these tests pin what makes that check
mean something: that it runs, and that each game's declared types are the ones it really uses."""

from __future__ import annotations

import configparser
import re
import typing
from pathlib import Path

import pytest

from econarena.agents.settings import LLMSettings
from econarena.games import GAMES
from econarena.games.base import Game, GameParams
from econarena.hosts.bench import ModelSpec, played_by

ROOT = Path(__file__).resolve().parents[1]


def _recipe(makefile: str, target: str) -> list[str]:
    """The command lines of one Makefile target."""
    lines = makefile.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        out.append(line.strip())
    return out


def test_make_lint_runs_ruff_then_mypy_over_the_package() -> None:
    recipe = " ".join(_recipe((ROOT / "Makefile").read_text(encoding="utf-8"), "lint"))
    assert "ruff check ." in recipe
    assert re.search(r"bin/mypy --config-file \S*setup\.cfg .*-p econarena", recipe), recipe
    assert recipe.index("ruff check") < recipe.index("bin/mypy")


def test_ci_runs_make_lint_before_make_test() -> None:
    steps = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "make lint" in steps and "make test" in steps
    assert steps.index("make lint") < steps.index("make test")


def test_mypy_is_configured_and_in_the_dev_extra() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg", encoding="utf-8")
    assert cfg.has_section("mypy")
    # the package is the target: its tests, benchmarks and docs' extension are left out of the discovery
    exclude = re.compile(cfg["mypy"]["exclude"])
    for folder in ("tests", "bench", "docs", ".venv"):
        assert exclude.search(f"econarena/{folder}/"), folder
    assert not exclude.search("econarena/games/") and not exclude.search("econarena/analysis/")
    dev = [line.strip() for line in cfg["options.extras_require"]["dev"].splitlines()]
    assert any(re.fullmatch(r"mypy>=\d+(\.\d+)*", line) for line in dev), dev


def _declared_params(cls: type) -> type | None:
    """The parameter model a game class names in its bases (``Game[P, S]``, ``RepeatedGame[P]``, ...)."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            if isinstance(origin, type) and issubclass(origin, Game):
                for arg in typing.get_args(base):
                    if isinstance(arg, type) and issubclass(arg, GameParams):
                        return arg
    return None


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_game_declares_the_parameters_it_takes(name: str) -> None:
    """The type checker holds ``setup(params: P)`` to P: P must be the model the game validates with."""
    game = GAMES[name]
    assert _declared_params(type(game)) is game.Params, f"{name}: declares {_declared_params(type(game))}"


def test_a_client_gets_its_one_server() -> None:
    assert LLMSettings(base_url="http://127.0.0.1:9/v1").url == "http://127.0.0.1:9/v1"
    assert LLMSettings().url is None
    with pytest.raises(TypeError, match="several base_urls"):
        _ = LLMSettings(base_url=["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]).url


def test_played_by_names_the_model_asked_for() -> None:
    """An API model is named as asked; one given none (the checks refuse it before any run) is None, where
    reading a default from the provider's registry entry (which holds none) raised AttributeError."""
    assert played_by(ModelSpec("gpt", {"agent": "openai", "model": "gpt-x"}, "openai:gpt-x")) == {"model": "gpt-x"}
    assert played_by(ModelSpec("gpt", {"agent": "openai"}, "openai")) == {"model": None}


def test_every_type_ignore_in_the_package_names_its_code_and_reason() -> None:
    """An ignore says which error it silences and why, on its line: a bare one hides whatever comes next."""
    bare = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", "bench", "docs", "build", "runs", "site") or rel.parts[0].startswith("."):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "type: ignore" in line and not re.search(r"# type: ignore\[[a-z-]+(, [a-z-]+)*\]  # \S", line):
                bare.append(f"{rel}:{n}")
    assert not bare, bare
