from __future__ import annotations

import pytest

from toolsift import Catalog, Router, TagRules
from toolsift.catalog import parse_catalog
from toolsift.errors import InvalidQuery, UnknownTag
from toolsift.router import TagIndex

from conftest import TINY_TOOLS


def allowed_names(catalog: Catalog, rules: TagRules) -> set[str] | None:
    allowed = TagIndex(catalog).allowed(rules)
    return None if allowed is None else {catalog[int(i)].name for i in allowed}


def test_empty_rules_allow_everything(tiny_catalog: Catalog) -> None:
    assert allowed_names(tiny_catalog, TagRules()) is None


def test_any_all_and_exclude(tiny_catalog: Catalog) -> None:
    assert allowed_names(tiny_catalog, TagRules.parse(any_of=["email", "weather"])) == {
        "send_email",
        "search_emails",
        "get_weather",
        "get_forecast",
    }
    assert allowed_names(tiny_catalog, TagRules.parse(all_of=["read", "weather"])) == {"get_weather", "get_forecast"}
    assert allowed_names(tiny_catalog, TagRules.parse(exclude="write,finance")) == {
        "search_emails",
        "get_weather",
        "get_forecast",
        "list_events",
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


def test_access_policy_uses_annotations(tiny_catalog: Catalog, hashing_embedder) -> None:  # type: ignore[no-untyped-def]
    records = [dict(t) for t in TINY_TOOLS]
    for record in records:
        if record["name"] in ("search_emails", "get_weather"):
            record["annotations"] = {"readOnlyHint": True}
        if record["name"] == "create_event":
            record["annotations"] = {"destructiveHint": False}
    router = Router.build(parse_catalog(records, source="annotated"), hashing_embedder)
    read_only = router.route("anything", 8, TagRules(access="read_only"))
    assert sorted(read_only.names) == ["get_weather", "search_emails"]
    safe = router.route("anything", 8, TagRules(access="non_destructive"))
    assert sorted(safe.names) == ["create_event", "get_weather", "search_emails"]
    assert read_only.eligible == 2 and safe.eligible == 3
    with pytest.raises(InvalidQuery, match="access"):
        TagRules(access="readonly")  # type: ignore[arg-type]
