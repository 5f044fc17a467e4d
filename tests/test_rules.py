from __future__ import annotations

import pytest

from toolsift import Catalog, TagRules
from toolsift.errors import UnknownTag
from toolsift.router import TagIndex


def allowed_names(catalog: Catalog, rules: TagRules) -> set[str] | None:
    allowed = TagIndex(catalog).allowed(rules)
    return None if allowed is None else {catalog[int(i)].name for i in allowed}


def test_empty_rules_allow_everything(tiny_catalog: Catalog) -> None:
    assert allowed_names(tiny_catalog, TagRules()) is None


def test_any_all_and_exclude(tiny_catalog: Catalog) -> None:
    assert allowed_names(tiny_catalog, TagRules.parse(any_of=["email", "weather"])) == {
        "send_email", "search_emails", "get_weather", "get_forecast",
    }
    assert allowed_names(tiny_catalog, TagRules.parse(all_of=["read", "weather"])) == {"get_weather", "get_forecast"}
    assert allowed_names(tiny_catalog, TagRules.parse(exclude="write,finance")) == {
        "search_emails", "get_weather", "get_forecast", "list_events",
    }
    combined = TagRules.parse(any_of="email,calendar,files", all_of="write", exclude="admin")
    assert allowed_names(tiny_catalog, combined) == {"send_email", "create_event"}


def test_rules_that_exclude_everything_give_an_empty_set(tiny_catalog: Catalog) -> None:
    assert allowed_names(tiny_catalog, TagRules.parse(all_of="email,weather")) == set()


def test_unknown_tag_suggests_the_close_one(tiny_catalog: Catalog) -> None:
    with pytest.raises(UnknownTag, match="unknown tag 'wether'. Did you mean 'weather'"):
        TagIndex(tiny_catalog).allowed(TagRules.parse(exclude=["wether"]))


def test_parse_accepts_strings_and_drops_blanks() -> None:
    assert TagRules.parse(any_of=" a, b,,a ") == TagRules(any_of=("a", "b"))
    assert TagRules.parse().empty
