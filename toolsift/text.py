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


PAYLOAD_CONTEXT_WORDS = 3
"""Words a request needs outside its quotes for what it quotes to be payload rather than the ask."""


def without_payload(text: str) -> str:
    """``text`` with what it quotes emptied, the marks kept, when at least ``PAYLOAD_CONTEXT_WORDS``
    words stand outside the quotes: what a request quotes (a message to send, a text to
    translate, code to run) is what the tool acts on, not which tool: 'send Dana a Slack message
    saying "can you book a table for four?"' ranks as 'send Dana a Slack message saying ""'. A
    request that is mostly its quote ('draw "a cat on a bicycle"') is kept whole, and so is one
    all in quotes."""
    spans = quoted_spans(text)
    if not spans:
        return text
    between = outside_quotes(text, spans)
    if len(_WORDS.findall(" ".join(between))) < PAYLOAD_CONTEXT_WORDS:
        return text
    marks = [text[start] + text[end - 1] for start, end in spans] + [""]
    return _SPACES.sub(" ", "".join(piece + mark for piece, mark in zip(between, marks, strict=True))).strip()


_WORDS = re.compile(r"[^\W\d_]+")
_SPACES = re.compile(r"\s+")


def _is_word(character: str) -> bool:
    return character.isalnum() or character == "_"
