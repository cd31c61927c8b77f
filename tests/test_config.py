"""Settings from defaults, a --config file, MCPBROWSER_* variables and flags, in that order."""

import json
import os
import subprocess
import sys

import pytest

from mcpbrowser.config import Config, ConfigError

pytestmark = pytest.mark.unit

CMD = [sys.executable, "-m", "mcpbrowser"]


def test_precedence_defaults_file_env_cli(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"max-sessions": 4, "session_timeout": 1000, "log_level": "debug"}))
    env = {"MCPBROWSER_SESSION_TIMEOUT": "2000", "MCPBROWSER_LOG_LEVEL": "warning"}
    config, _ = Config.load(["--config", str(path), "--log-level", "error"], env)
    assert config.max_sessions == 4            # file over default
    assert config.session_timeout == 2000      # env over file
    assert config.log_level == "error"         # flag over env
    assert config.pool_size == 1               # untouched default
    via_env, _ = Config.load([], {"MCPBROWSER_CONFIG": str(path)})
    assert via_env.max_sessions == 4


@pytest.mark.parametrize("content, env, named", [
    ('{"max_sessions": 0}', {}, "'max_sessions'"),
    ('{"no_such": 1}', {}, "'no_such' is not a setting"),
    ("[1, 2]", {}, "must be a JSON object"),
    ("{oops", {}, "not valid JSON"),
    ("{}", {"MCPBROWSER_MAX_SESSIONS": "lots"}, "MCPBROWSER_MAX_SESSIONS"),
    ("{}", {"MCPBROWSER_NOPE": "1"}, "MCPBROWSER_NOPE is not a setting"),
])
def test_bad_settings_name_their_source(tmp_path, content, env, named):
    path = tmp_path / "settings.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as raised:
        Config.load(["--config", str(path)], env)
    assert named in str(raised.value)


@pytest.mark.parametrize("setting, value, flags", [
    ("caps", "bogus", []),
    ("http_tokens", "ci:short", []),
    ("endpoint_headers", "no-colon", []),
    ("http_max_unauthenticated", "600", []),  # checked against another setting: --http-max-connections
    ("http", "0.0.0.0:8000", []),  # ...against the tokens
    ("secrets", "/no/such/file", []),
    ("caps", "bogus", ["--caps", "bogus"]),  # the flag overrides the variable: the flag is named
])
def test_a_bad_value_names_the_variable_file_key_or_flag_that_carried_it(tmp_path, setting, value, flags):
    # Issue 48: the settings checked together with others named the flag whatever carried the value.
    variable = "MCPBROWSER_" + setting.upper()
    flag = "--" + setting.replace("_", "-")
    with pytest.raises(ConfigError) as raised:
        Config.load(["--db", ":memory:", *flags], {variable: value})
    wanted, unwanted = (flag, variable) if flags else (variable, flag + " ")
    assert str(raised.value).startswith(wanted) and unwanted not in str(raised.value), str(raised.value)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({setting.replace("_", "-"): value.split(",") if setting in (
        "caps", "http_tokens", "endpoint_headers") else value}))
    with pytest.raises(ConfigError) as raised:
        Config.load(["--db", ":memory:", "--config", str(path)], {})
    assert str(raised.value).startswith(f"{path}: '{setting.replace('_', '-')}'"), str(raised.value)


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read it"):
        Config.load(["--config", str(tmp_path / "none.json")], {})


def test_print_config_masks_secrets(tmp_path):
    proc = subprocess.run([*CMD, "--print-config", "--ws-endpoint", "ws://grid:3000/",
                           "--endpoint-headers", "Authorization: Bearer TOPSECRET, X-Team: qa"],
                          capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "MCPBROWSER_MAX_SESSIONS": "3", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["max_sessions"] == 3 and shown["ws_endpoint"] == [{"url": "ws://grid:3000/", "headers": [],
                                                                    "capacity": None}]
    assert shown["endpoint_headers"] == ["Authorization: ***", "X-Team: ***"]
    assert "TOPSECRET" not in proc.stdout


def test_endpoint_settings_are_checked():
    with pytest.raises(ConfigError, match="Name: value"):
        Config(endpoint_headers="no-colon-here", db=":memory:")
    assert Config(endpoint_headers="A: 1, B: two", db=":memory:").headers() == {"A": "1", "B": "two"}


def test_an_empty_variable_leaves_its_setting_unset():
    names = ("db", "db_key_file", "http", "view", "ws_endpoint", "selenium_capabilities", "endpoint_capacity",
             "executable_path")
    config, _ = Config.load([], {f"MCPBROWSER_{name.upper()}": "" for name in names})
    assert [getattr(config, name) for name in names[1:]] == [None, None, None, (), None, None, None]
    assert config.db.endswith("history.db")  # the default path, not ""


def test_caps_and_where_files_go(tmp_path):
    assert Config.load(["--caps", "vision,PDF"])[0].caps == ("vision", "pdf")
    with pytest.raises(ConfigError, match="--caps knows extra, logins, emulation, vision, pdf, tracing, export, "
                                          "performance, site, webmcp, all, not audio"):
        Config(caps=("audio",))
    assert Config(caps=("all",)).caps == ("extra", "logins", "emulation", "vision", "pdf", "tracing", "export",
                                          "performance", "site", "webmcp")
    assert Config(output_dir=str(tmp_path / "out")).files_dir() == str((tmp_path / "out").resolve())
    assert Config(db=str(tmp_path / "h.db")).files_dir() == str(tmp_path.resolve() / "files")



def _key_file(path, content, mode=0o600):
    path.write_bytes(content)
    os.chmod(path, mode)
    return str(path)


def test_a_shared_key_file_comes_from_the_flag_the_variable_or_the_file_and_holds_keys(tmp_path):
    new, old = os.urandom(32), os.urandom(32)
    hexed = _key_file(tmp_path / "db.key", f"# rotated\n{new.hex()}\n\n{old.hex().upper()}\n".encode())
    assert Config.load(["--db", ":memory:", "--db-key-file", hexed], {})[0].db_keys() == [new, old]
    assert Config.load(["--db", ":memory:"], {"MCPBROWSER_DB_KEY_FILE": hexed})[0].db_keys() == [new, old]
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"db-key-file": hexed}))
    assert Config.load(["--db", ":memory:", "--config", str(settings)], {})[0].db_keys() == [new, old]
    raw = _key_file(tmp_path / "raw.key", new)  # `head -c 32 /dev/urandom`, or a key file the server made
    assert Config(db=":memory:", db_key_file=raw).db_keys() == [new]
    assert Config(db=":memory:").db_keys() is None  # none given: the server keeps its own


@pytest.mark.parametrize("content, mode, said", [
    (None, 0o600, "cannot read it (No such file or directory); make one"),
    ("KEY", 0o640, "readable or writable by others (mode 0640): chmod 600 it"),
    ("KEY", 0o604, "readable or writable by others (mode 0604): chmod 600 it"),
    ("KEY", 0o620, "readable or writable by others (mode 0620): chmod 600 it"),
    ("KEY\nKEY0", 0o600, "line 2 is not 64 hex digits"),  # a key cut or mistyped: never echoed
    ("", 0o600, "holds no key"),
    ("# only a comment\n", 0o600, "holds no key"),
])
def test_a_bad_key_file_is_refused_naming_what_carried_it_and_never_showing_a_key(tmp_path, content, mode, said):
    key = os.urandom(32).hex()
    path = tmp_path / "db.key"
    if content is not None:
        _key_file(path, content.replace("KEY", key).encode(), mode)
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"db-key-file": str(path)}))
    for argv, env, named in ((["--db-key-file", str(path)], {}, "--db-key-file"),
                             ([], {"MCPBROWSER_DB_KEY_FILE": str(path)}, "MCPBROWSER_DB_KEY_FILE"),
                             (["--config", str(settings)], {}, f"{settings}: 'db-key-file'")):
        with pytest.raises(ConfigError) as raised:
            Config.load(["--db", ":memory:", *argv], env)
        message = str(raised.value)
        assert message.startswith(f"{named} {path}: ") and said in message, message
        assert key not in message.lower() and key[:16] not in message.lower()


def test_each_setting_is_refused_just_past_its_bound_and_a_switch_reads_every_spelling_of_yes_and_no():
    """configuration.md: each value is checked where it came from; a switch's variable may say 1, true, yes, on
    (0, false, no, off); a token is 16 characters or more; a port at most 65535; a message at least 1024 bytes."""
    for yes, no in (("1", "0"), ("true", "false"), ("YES", "No"), ("on", "off")):
        assert Config.load(["--db", ":memory:"], {"MCPBROWSER_HEADLESS": yes})[0].headless is True
        assert Config.load(["--db", ":memory:"], {"MCPBROWSER_HEADLESS": no})[0].headless is False
    with pytest.raises(ConfigError, match="MCPBROWSER_HEADLESS must be true or false"):
        Config.load(["--db", ":memory:"], {"MCPBROWSER_HEADLESS": "maybe"})
    assert Config(db=":memory:", http_tokens="ci:" + "t" * 16).http_credentials() == {"t" * 16: "ci"}
    with pytest.raises(ConfigError, match="16 characters"):
        Config(db=":memory:", http_tokens="ci:" + "t" * 15)
    assert Config(db=":memory:", http="127.0.0.1:65535").http == "127.0.0.1:65535"
    with pytest.raises(ConfigError, match="--http must look like HOST:PORT"):
        Config(db=":memory:", http="127.0.0.1:65536")
    assert Config(db=":memory:", max_message_bytes=1024).max_message_bytes == 1024
    with pytest.raises(ConfigError, match="--max-message-bytes must be at least 1024, got 1023"):
        Config(db=":memory:", max_message_bytes=1023)
