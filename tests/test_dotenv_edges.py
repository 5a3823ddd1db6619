"""Odd ``.env`` files (agents/preflight.py load_dotenv): a NUL byte, a folder, a FIFO, a huge file. Each is
skipped with a warning naming the file (and the line), never its values, and the rest still loads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from econarena.agents.llm import load_dotenv

SECRET = "sk-dotenv-edge-secret"


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EA_NUL", "EA_AFTER", "EA_BIG"):
        monkeypatch.delenv(name, raising=False)


def test_a_nul_byte_skips_its_line_and_keeps_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / ".env"
    env.write_bytes(f"EA_NUL={SECRET}\0tail\nEA_AFTER=ok\n".encode())
    assert load_dotenv(env) == ["EA_AFTER"]
    assert os.environ["EA_AFTER"] == "ok" and "EA_NUL" not in os.environ
    said = capsys.readouterr().err
    assert f"{env}:1: a NUL byte" in said and SECRET not in said


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_folder_or_a_fifo_is_named_and_never_opened(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, fifo = tmp_path / "d.env", tmp_path / "f.env"
    folder.mkdir()
    os.mkfifo(fifo)  # opening it would block until a writer comes
    assert load_dotenv(folder) == [] and load_dotenv(fifo) == []
    said = capsys.readouterr().err
    assert f"{folder}: not read (not a regular file)" in said and f"{fifo}: not read (not a regular file)" in said
    assert load_dotenv(tmp_path / "missing.env") == [] and capsys.readouterr().err == ""  # no file: silent


def test_a_huge_file_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / ".env"
    env.write_text(f"EA_BIG={SECRET}\n" + "#" * (1 << 20) + "\n", encoding="utf-8")
    assert load_dotenv(env) == [] and "EA_BIG" not in os.environ
    said = capsys.readouterr().err
    assert f"{env}: not read (over 1048576 bytes" in said and SECRET not in said
