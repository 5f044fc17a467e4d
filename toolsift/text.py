"""Text helpers shared by the tool text (embeddings) and the BM25 tokenizer (index)."""

from __future__ import annotations

import re

CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
"""Where a camelCase or PascalCase identifier changes word: ``getUserID`` -> get | User | ID."""


def split_camel(word: str) -> list[str]:
    """``getUserIDs`` -> ``["get", "User", "IDs"]``; a word without a case change stays whole."""
    return [part for part in CAMEL_BOUNDARY.split(word) if part]


_CLOSERS = {
    '"': re.compile('"'),
    "“": re.compile("”"),
    "‘": re.compile("’"),
    "„": re.compile("[“”]"),
    "«": re.compile("»"),
    "「": re.compile("」"),
    "『": re.compile("』"),
    "'": re.compile(r"'(?!\w)"),  # a single quote closes before no letter: "don't" goes on
}
_OPENING = re.compile("[" + "".join(_CLOSERS) + "]")


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` quotes something, as (start, end) slices, quote marks included: "...",
    “...”, ‘...’, „...“, «...», 「...」, 『...』, and '...' (opening after no letter, so an
    apostrophe opens none). Unclosed quotes quote nothing. One pass: a mark found unclosed once is
    not looked for again, so hostile text of ten thousand opening marks costs no more than prose."""
    spans: list[tuple[int, int]] = []
    unclosed: set[str] = set()
    at = 0
    while (opening := _OPENING.search(text, at)) is not None:
        at, mark = opening.start(), opening.group()
        found = None
        if mark not in unclosed and not (mark == "'" and at and _is_word(text[at - 1])):
            found = _CLOSERS[mark].search(text, at + 1)
            if found is None:
                unclosed.add(mark)
        if found is None:
            at += 1
            continue
        if found.start() > at + 1:  # an empty quote quotes nothing
            spans.append((at, found.end()))
        at = found.end()
    return spans


def outside_quotes(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """The pieces of ``text`` around its quoted ``spans`` (from ``quoted_spans``): one more than them."""
    edges = [0, *(edge for span in spans for edge in span), len(text)]
    return [text[edges[i] : edges[i + 1]] for i in range(0, len(edges), 2)]


def _is_word(character: str) -> bool:
    return character.isalnum() or character == "_"
