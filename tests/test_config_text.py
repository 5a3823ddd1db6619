"""A file a person writes (config.toml, a bench suite, a folder's experiment files) is read by one helper,
so each is refused in the same words: the file named, and what was wrong with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from econarena.formats.benchsuite import SuiteError, load_suite
from econarena.formats.files import CONFIG_BYTES, TOML_UTF8, FileRefused, read_config_text
from econarena.hosts.config import ConfigError, read_toml


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "adir").mkdir()
    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe = 1\n")
    (tmp_path / "big.toml").write_bytes(b"#" * (CONFIG_BYTES + 1))
    (tmp_path / "ok.toml").write_text("x = 1\n", encoding="utf-8")
    return {"dir": tmp_path / "adir", "bad": tmp_path / "bad.toml", "none": tmp_path / "none.toml",
            "big": tmp_path / "big.toml", "ok": tmp_path / "ok.toml"}


def test_the_helper_names_the_file_and_the_fault(files: dict[str, Path]) -> None:
    assert read_config_text(files["ok"]) == "x = 1\n"
    said = {}
    for key in ("dir", "bad", "none", "big"):
        with pytest.raises(FileRefused) as exc:
            read_config_text(files[key], "a suite TOML file", TOML_UTF8)
        said[key] = str(exc.value)
    assert said["dir"] == f"{files['dir']}: is a directory, expected a suite TOML file"
    assert said["bad"] == f"{files['bad']}: not UTF-8 text (byte 0); TOML files must be UTF-8"
    assert said["none"] == f"{files['none']}: no such file"
    assert said["big"].startswith(f"{files['big']}: is 8,388,609 bytes, more than the 8,388,608")


def test_config_and_suite_keep_their_words(files: dict[str, Path]) -> None:
    """The two readers that share the helper say what they said before it."""
    with pytest.raises(ConfigError, match="is a directory, expected a TOML file$"):
        read_toml(files["dir"])
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 0\); TOML files must be UTF-8$"):
        read_toml(files["bad"])
    with pytest.raises(SuiteError, match="is a directory, expected a suite TOML file$"):
        load_suite(files["dir"])
    with pytest.raises(SuiteError, match=r"not UTF-8 text \(byte 0\)$"):
        load_suite(files["bad"])
    with pytest.raises(SuiteError, match="none.toml: no such file$"):
        load_suite(files["none"])
