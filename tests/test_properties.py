"""Invariants that must hold for any input (hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from toolsift import Router, TagRules
from toolsift.catalog import parse_catalog
from toolsift.embeddings import HashingEmbedder
from toolsift.errors import UnknownTag

from conftest import TINY_TOOLS

ROUTER = Router.build(parse_catalog(TINY_TOOLS), HashingEmbedder(64))
TAGS = sorted(ROUTER.catalog.tags)

names = st.from_regex(r"[A-Za-z][A-Za-z0-9_\-]{0,20}", fullmatch=True)
words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=0, max_size=40)
schemas = st.dictionaries(
    st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True),
    st.sampled_from(
        [
            {"type": "string"},
            {"type": "integer", "minimum": 0},
            {"type": "boolean"},
            {"type": "array", "items": {"type": "string"}},
        ]
    ),
    max_size=4,
).map(lambda props: {"type": "object", "properties": props} if props else {})
tools = st.builds(
    lambda name, description, tags, parameters: {
        "name": name,
        "description": description,
        "tags": tags,
        "parameters": parameters,
    },
    names,
    words,
    st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), max_size=3),
    schemas,
)
catalogs = st.lists(tools, max_size=12, unique_by=lambda tool: tool["name"])


@given(catalogs)
def test_catalog_dump_then_load_is_the_identity(entries: list[dict[str, object]]) -> None:
    catalog = parse_catalog(entries)
    again = parse_catalog(catalog.to_records())
    assert again.to_records() == catalog.to_records()
    assert again.fingerprint == catalog.fingerprint


@given(
    query=st.text(min_size=1, max_size=80).filter(lambda q: q.strip()),
    k=st.integers(1, 12),
    any_of=st.lists(st.sampled_from(TAGS), max_size=2),
    all_of=st.lists(st.sampled_from(TAGS), max_size=1),
    exclude=st.lists(st.sampled_from(TAGS), max_size=2),
)
def test_route_invariants(query: str, k: int, any_of: list[str], all_of: list[str], exclude: list[str]) -> None:
    rules = TagRules.parse(any_of, all_of, exclude)
    result = ROUTER.route(query, k, rules)
    assert len(result.matches) == min(k, result.eligible)
    scores = [m.score for m in result.matches]
    assert scores == sorted(scores, reverse=True)
    for match in result.matches:
        tags = set(match.tool.tags)
        assert not any_of or tags & set(any_of)
        assert set(all_of) <= tags
        assert not tags & set(exclude)
    assert [t.name for t in result.tools] == sorted(result.names)


@given(st.text(min_size=1, max_size=12).filter(lambda tag: tag.strip() and tag.strip() not in TAGS and "," not in tag))
def test_any_unknown_tag_is_refused(tag: str) -> None:
    try:
        ROUTER.route("x", rules=TagRules.parse(exclude=[tag]))
    except UnknownTag as error:
        assert error.tag == tag.strip()
    else:
        raise AssertionError("an unknown tag was accepted")


@settings(max_examples=10, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=40).filter(str.strip), min_size=1, max_size=5))
def test_saved_index_gives_identical_results(queries: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        loaded = Router.load(ROUTER.save(Path(folder) / "idx"), HashingEmbedder(64))
        for query in queries:
            before, after = ROUTER.route(query, 4), loaded.route(query, 4)
            assert before.names == after.names and before.fingerprint == after.fingerprint
