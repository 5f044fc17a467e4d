"""Multi-intent requests: split a query into its parts, so each part's best tool gets a place.

"Check the ethics review comments for project 76. After that, retrieve the media plan for
campaign Vc4c. Finally, submit the design file for critique" needs three tools. Ranked as one
text, the query's vector sits between the three and the Top-K fills with near-duplicates of
whichever part dominates. Routed part by part, each part finds its own tool with confidence.

The merge keeps the whole query in charge: its best tool comes first, then the best tool of
each part (in the order the user asked) when that tool stands out clearly for its part
(``intent_min_score`` standard deviations above the catalog's average), then the rest of the
whole query's ranking. A part that only sets context ("We are a small bakery.") rarely has a
tool standing out that far, and a single-intent query gives one part, which changes nothing.

Splitting is purely textual: sentence ends (Latin and CJK punctuation, new lines), semicolons,
and sequencing connectives ("and then", "after that", "finally", "also"; Korean "그리고",
"그 다음에", "또한"). Fragments under three words are joined to their neighbour, so
abbreviations ("e.g.") and short lead-ins ("Please help.") do not become parts of their own.
Quoted text is what a tool acts on, not another request: 'reply "Running late. Also, start
without me"' is one part, whatever sentences the quote holds (a request all in quotes is split
as if it had none).
"""

from __future__ import annotations

import re

from toolsift.index.lexical import CJK_RUN
from toolsift.text import outside_quotes, quoted_spans

MAX_PARTS = 8
"""At most this many parts are routed apart (each costs a short query embedding)."""
MIN_PART_WORDS = 3
MIN_PART_CHARS_CJK = 6

_BOUNDARY = re.compile(
    r"(?<=[.!?])\s+"  # sentence end followed by space ('v1.2', 'file_1.png' stay whole)
    r"|(?<=[。？！])\s*"  # CJK sentence end, space optional
    r"|\s*[\n;]+\s*"  # new lines and semicolons
    r"|,?\s+(?=(?:and then|after that|afterwards|additionally|finally|lastly|also)\b)"
    r"|,\s*(?=then\b)"
    r"|\s+(?=(?:그리고|그 다음에|그다음에|그런 다음|그런 다음에|또한)\s)",
    re.IGNORECASE,
)
_LEADING_CONNECTIVE = re.compile(
    r"^(?:and then|and also|and|then|after that|afterwards|additionally|finally|lastly|next|also"
    r"|그리고|그 다음에|그다음에|그런 다음에|그런 다음|또한)\b[,:]?\s*",
    re.IGNORECASE,
)
_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|approx|incl|no|mr|mrs|ms|dr|st|a\.m|p\.m)\.$", re.IGNORECASE)
_TRAILING_CONJUNCTION = re.compile(r"(?:,\s*|\s+)(?:and|or)\s*$", re.IGNORECASE)
_WORD = re.compile(r"\w")
_HELD = re.compile("\ue000(\\d+)\ue001")  # a quoted span's stand-in while the query is split


def split_intents(query: str, max_parts: int = MAX_PARTS) -> list[str]:
    """The query's parts, in order; one part (the query itself) when it does not split. A quoted
    span is never split: a stand-in takes its place while the query is, and it is put back after."""
    spans: list[str] = []
    held = _held_quotes(query, spans)

    def restored(text: str) -> str:
        return _HELD.sub(lambda m: spans[int(m.group(1))], text)

    pieces = [piece.strip() for piece in _BOUNDARY.split(held)]
    parts: list[str] = []
    pending = ""  # a fragment too short to stand alone, waiting for the next piece
    for piece in pieces:
        if not piece:
            continue
        text = f"{pending} {piece}".strip() if pending else piece
        if _is_substantial(restored(_LEADING_CONNECTIVE.sub("", text))) and not _ABBREVIATION_END.search(text):
            parts.append(text)
            pending = ""
        else:
            pending = text
    if pending:
        if parts:
            parts[-1] = f"{parts[-1]} {pending}"
        else:
            parts.append(pending)
    if len(parts) < 2:
        return [query]
    return [restored(_clean(part)) for part in parts[:max_parts]]


def _held_quotes(query: str, spans: list[str]) -> str:
    """``query`` with each quoted span replaced by a stand-in, the spans put in the empty list
    ``spans``; ``query`` as it is when it is all quotes (the request itself quoted) or holds a
    stand-in's mark."""
    found = quoted_spans(query)
    between = outside_quotes(query, found)
    if not found or "\ue000" in query or not _WORD.search("".join(between)):
        return query
    spans.extend(query[start:end] for start, end in found)
    stand_ins = [f"\ue000{i}\ue001" for i in range(len(found))] + [""]
    return "".join(text + stand_in for text, stand_in in zip(between, stand_ins, strict=True))


def _clean(part: str) -> str:
    """Without the connective that opened it or the conjunction that led to the next part."""
    return _TRAILING_CONJUNCTION.sub("", _LEADING_CONNECTIVE.sub("", part)) or part


def _is_substantial(text: str) -> bool:
    if CJK_RUN.search(text):
        return len(text.replace(" ", "")) >= MIN_PART_CHARS_CJK
    return len(text.split()) >= MIN_PART_WORDS
