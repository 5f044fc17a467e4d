"""Settings: read from an injectable mapping, defaults from the library, every value checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolsift.cli import main
from toolsift.embeddings import AUTO_MODEL
from toolsift.errors import SettingsError
from toolsift.index import INDEX_KINDS
from toolsift.router import RankingConfig
from toolsift.router.ranking import DEFAULT_INTENT_MIN_SCORE, DEFAULT_LEXICAL_WEIGHT
from toolsift.router.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_CAP, DEFAULT_SESSION_TTL_SECONDS
from toolsift.settings import Settings


def test_settings_turn_splitting_off_and_reject_a_bad_value() -> None:
    from toolsift.errors import ToolsiftError
    from toolsift.settings import Settings

    assert Settings.from_env({}).ranking().split_intents is True
    assert Settings.from_env({}).ranking() == RankingConfig()  # the service's defaults are the library's
    ranking = Settings.from_env({"TOOLSIFT_SPLIT_INTENTS": "off", "TOOLSIFT_INTENT_MIN_SCORE": "3.5"}).ranking()
    assert (ranking.split_intents, ranking.intent_min_score) == (False, 3.5)
    with pytest.raises(ToolsiftError, match="TOOLSIFT_SPLIT_INTENTS='maybe'.*true or false"):
        Settings.from_env({"TOOLSIFT_SPLIT_INTENTS": "maybe"})


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("TOOLSIFT_LEXICAL_WEIGHT", "heavy", "a number from 0"),
        ("TOOLSIFT_LEXICAL_WEIGHT", "-1", "a number from 0"),
        ("TOOLSIFT_LEXICAL_WEIGHT", "nan", "a number from 0"),
        ("TOOLSIFT_INDEX_KIND", "ivf", "one of auto, flat, hnsw"),
        ("TOOLSIFT_PORT", "70000", "a port number"),
        ("TOOLSIFT_SESSION_CAP", "0", "from 1"),
        ("TOOLSIFT_LOG_FORMAT", "xml", "json or text"),
        ("TOOLSIFT_RELOAD_INTERVAL", "soon", "seconds"),
        ("TOOLSIFT_EMBEDDING_BACKEND", "tensorflow", "onnx or torch"),
        ("TOOLSIFT_QUERY_BATCH", "0", "from 1 (no batching)"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable_and_the_fix(variable: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({variable: value})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{variable}=") and expected in message
    assert f"unset {variable}" in message


def test_arguments_are_checked_like_the_environment() -> None:
    with pytest.raises(SettingsError, match="TOOLSIFT_LEXICAL_WEIGHT=11.0"):
        Settings(lexical_weight=11.0)
    with pytest.raises(SettingsError, match="TOOLSIFT_INDEX_KIND='ivf'"):
        Settings.from_env({}, index_kind="ivf")


def test_defaults_are_the_librarys_constants() -> None:
    settings = Settings()
    assert settings.lexical_weight == DEFAULT_LEXICAL_WEIGHT and settings.intent_min_score == DEFAULT_INTENT_MIN_SCORE
    assert (settings.session_cap, settings.max_sessions, settings.session_ttl) == (
        DEFAULT_SESSION_CAP,
        DEFAULT_MAX_SESSIONS,
        DEFAULT_SESSION_TTL_SECONDS,
    )
    assert settings.model == AUTO_MODEL and settings.index_kind in INDEX_KINDS


def test_arguments_win_over_the_environment_which_wins_over_defaults() -> None:
    environ = {"TOOLSIFT_PORT": "9001", "TOOLSIFT_LEXICAL_WEIGHT": "0.5"}
    settings = Settings.from_env(environ, port=9002)
    assert (settings.port, settings.lexical_weight, settings.host) == (9002, 0.5, Settings().host)


def test_no_shell_setting_reaches_a_test() -> None:
    assert not [name for name in os.environ if name.startswith("TOOLSIFT_")]
    assert Settings.from_env() == Settings()


@pytest.mark.parametrize("command", ["route", "serve", "build", "mcp"])
def test_cli_commands_refuse_a_bad_setting_in_one_line(command: str, tmp_path: Path) -> None:
    arguments = [command, "x"] if command == "route" else [command]
    result = CliRunner().invoke(
        main,
        arguments,
        env={"TOOLSIFT_LEXICAL_WEIGHT": "heavy", "TOOLSIFT_INDEX_KIND": "ivf", "TOOLSIFT_INDEX_PATH": str(tmp_path)},
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("Error: TOOLSIFT_") and "is not valid" in result.output


def test_a_bad_redis_url_is_refused_with_the_forms_it_takes() -> None:
    with pytest.raises(SettingsError, match="TOOLSIFT_REDIS_URL.*redis://host:6379/0"):
        Settings.from_env({"TOOLSIFT_REDIS_URL": "localhost:6379"})
    assert Settings.from_env({"TOOLSIFT_REDIS_URL": "redis://127.0.0.1:6379/0"}).redis_url == "redis://127.0.0.1:6379/0"
