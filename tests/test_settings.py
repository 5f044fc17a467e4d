"""Settings: read from an injectable mapping, defaults from the library, every value checked."""

from __future__ import annotations

import pytest

from toolsift.router import RankingConfig


def test_settings_turn_splitting_off_and_reject_a_bad_value() -> None:
    from toolsift.errors import ToolsiftError
    from toolsift.settings import Settings

    assert Settings.from_env({}).ranking().split_intents is True
    assert Settings.from_env({}).ranking() == RankingConfig()  # the service's defaults are the library's
    ranking = Settings.from_env({"TOOLSIFT_SPLIT_INTENTS": "off", "TOOLSIFT_INTENT_MIN_SCORE": "3.5"}).ranking()
    assert (ranking.split_intents, ranking.intent_min_score) == (False, 3.5)
    with pytest.raises(ToolsiftError, match="TOOLSIFT_SPLIT_INTENTS='maybe'.*true or false"):
        Settings.from_env({"TOOLSIFT_SPLIT_INTENTS": "maybe"})
