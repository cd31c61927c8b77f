"""The command line: help, version, and bad values that name their flag."""

import subprocess
import sys

import pytest

from mcpbrowser.config import Config, ConfigError

pytestmark = pytest.mark.e2e

CMD = [sys.executable, "-m", "mcpbrowser"]


@pytest.mark.parametrize("args, flag", [
    (["--max-sessions", "0"], "--max-sessions"),
    (["--max-sessions", "ten"], "--max-sessions"),
    (["--session-timeout", "-5"], "--session-timeout"),
    (["--browser", "netscape"], "--browser"),
    (["--log-level", "loud"], "--log-level"),
    (["--action-timeout", "1.5"], "--action-timeout"),
    (["--no-such-flag"], "--no-such-flag"),
])
def test_bad_value_exits_non_zero_naming_the_flag(args, flag):
    proc = subprocess.run([*CMD, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert proc.returncode == 2
    assert flag in proc.stderr and proc.stdout == ""


def test_help_explains_every_flag():
    proc = subprocess.run([*CMD, "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    for flag in ("--browser", "--headless", "--session-timeout", "--max-sessions",
                 "--executable-path", "--log-level", "--action-timeout", "--navigation-timeout"):
        assert flag in proc.stdout
    assert "mcpbrowser export SESSION_ID" in proc.stdout


def test_export_help_names_its_options():
    proc = subprocess.run([*CMD, "export", "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "SESSION_ID" in proc.stdout and "--storage-state" in proc.stdout


def test_version():
    proc = subprocess.run([*CMD, "--version"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.startswith("mcpbrowser ")


def test_config_defaults_and_validation_for_embedders():
    config = Config()
    assert (config.browser, config.headless, config.session_timeout, config.max_sessions) == \
        ("chromium", False, 300_000, 10)
    assert Config(headless="true", max_sessions="3").max_sessions == 3
    with pytest.raises(ConfigError, match="--max-sessions"):
        Config(max_sessions=True)


def test_unusable_database_exits_with_a_clear_message(tmp_path):
    import sqlite3

    from mcpbrowser.core.store import SCHEMA_VERSION, Store

    db = str(tmp_path / "future.db")
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 5,))
    proc = subprocess.run([*CMD, "--headless", "--db", db], capture_output=True, text=True,
                          stdin=subprocess.PIPE, timeout=30)
    assert proc.returncode == 1
    assert "upgrade mcpbrowser" in proc.stderr and proc.stdout == ""
