"""Lint for poisoned tool definitions: the ``security-*`` checks.

A tool's text reaches the model verbatim, so a definition can attack the agent that reads it (tool
poisoning): orders addressed to the model, requests to read secrets or send data out, orders about
other tools (shadowing), pleas to be chosen over every other tool, text a person reviewing the
catalog cannot see, and names that imitate another tool's. Each check reads every text of a tool —
its description, each parameter's description, title, default, enum values and examples, its
example requests — and says where it found what.

The patterns are written from the published attacks (tool poisoning and shadowing write-ups, line
jumping and ANSI escapes, ASCII smuggling with Unicode tag characters, preference manipulation,
tool squatting) and kept narrow enough that the same words used honestly ("confirm with the user",
"important: amounts in cents", "use X instead", an API key parameter, a path example) pass:
``benchmarks/security/`` holds an evaluation set of each, and ``toolsift security-bench`` measures
both and every shared dataset's real catalog.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from toolsift.catalog.models import Catalog, Tool
from toolsift.catalog.names import VERBS
from toolsift.wire import Severity

PREFIX = "security-"


@dataclass(frozen=True)
class Text:
    """One text of a tool and where it is (``description``, ``parameters.city.default`` ...)."""

    where: str
    value: str


@dataclass(frozen=True)
class Hit:
    code: str
    severity: Severity
    what: str
    where: str
    other: str | None = None
    """The other tool the problem involves (the name a look-alike imitates)."""


def texts_of(tool: Tool) -> Iterator[Text]:
    """Every text of ``tool`` a model may read."""
    yield Text("description", tool.description)
    yield from _schema_texts(tool.parameters, "parameters")
    for number, example in enumerate(tool.examples):
        yield Text(f"examples[{number}]", example)


def _schema_texts(schema: Any, where: str, depth: int = 0) -> Iterator[Text]:
    if depth > 20 or not isinstance(schema, dict):
        return
    for key in ("description", "title"):
        if isinstance(schema.get(key), str):
            yield Text(f"{where}.{key}", schema[key])
    for key in ("default", "const"):
        if key in schema:
            yield from _values(schema[key], f"{where}.{key}")
    for key in ("enum", "examples"):
        if isinstance(schema.get(key), list):
            for number, value in enumerate(schema[key]):
                yield from _values(value, f"{where}.{key}[{number}]")
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, inner in properties.items():
            yield Text(f"{where}.properties (a name)", str(name))
            yield from _schema_texts(inner, f"{where}.{name}", depth + 1)
    for key in ("items", "additionalProperties"):
        yield from _schema_texts(schema.get(key), f"{where}.{key}", depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for number, inner in enumerate(schema[key]):
                yield from _schema_texts(inner, f"{where}.{key}[{number}]", depth + 1)


def _values(value: Any, where: str) -> Iterator[Text]:
    if isinstance(value, str):
        yield Text(where, value)
    elif isinstance(value, list):
        for number, item in enumerate(value[:100]):
            yield from _values(item, f"{where}[{number}]")
    elif isinstance(value, dict):
        for key, item in list(value.items())[:100]:
            yield from _values(item, f"{where}.{key}")


# -- hidden text ------------------------------------------------------------------------------

_TAG_CHARACTERS = re.compile("[\U000e0000-\U000e007f]")
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
_INVISIBLE = re.compile("[\u200b\u2060\ufeff\u180e\u2061-\u2064]")
_JOINER_IN_LATIN = re.compile("(^|[\x00-\x7f])[\u200c\u200d]+([\x00-\x7f]|$)")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PADDING = re.compile(r"(?:[ \t\u00a0\u3000]{40,}|(?:[ \t]*\r?\n){8,})\s*\S")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){20,}(?![0-9A-Fa-f])")


def _hidden(text: str) -> Iterator[str]:
    if _TAG_CHARACTERS.search(text):
        yield "Unicode tag characters (invisible text a model still reads)"
    if _BIDI_CONTROLS.search(text):
        yield "bidirectional control characters (text shown in another order than a model reads it)"
    if _INVISIBLE.search(text) or _JOINER_IN_LATIN.search(text):
        yield "zero-width characters"
    if _CONTROL.search(text):
        yield "control characters (ANSI escapes hide or restyle text in a terminal)"
    if any(not _table_layout(text, match) for match in _PADDING.finditer(text)):
        yield "a long run of whitespace followed by more text (text pushed out of a reviewer's sight)"
    if any(_reads_as_words(decoded) for decoded in _decoded(text)):
        yield "an encoded payload that decodes to words"


def _table_layout(text: str, padding: re.Match[str]) -> bool:
    """Whitespace that pads a Markdown table's cell (a line that starts with ``|``, the run ending
    at the next ``|``): layout, not hiding."""
    line_start = text.rfind("\n", 0, padding.start()) + 1
    return text[line_start:].lstrip().startswith("|") and text[padding.end() - 1] == "|"


def _decoded(text: str) -> Iterator[bytes]:
    for token in _BASE64.findall(text):
        try:
            yield base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
    for token in _HEX.findall(text):
        yield bytes.fromhex(token)


def _reads_as_words(data: bytes) -> bool:
    """Mostly printable ASCII with spaces between letters: a hidden sentence, not a hash or key."""
    if len(data) < 20:
        return False
    printable = sum(32 <= byte < 127 for byte in data) / len(data)
    return printable > 0.95 and data.count(b" ") >= 3


# -- instructions to the model, secrecy, fake blocks ---------------------------------------------

_I = re.IGNORECASE
_INSTRUCTIONS = [
    re.compile(
        r"\b(ignore|disregard|forget|override|bypass|discard|drop|set aside|pay no attention to|stop following)\b"
        r"[^.\n]{0,40}?\b(previous|prior|above|earlier|all|any|your|the|the user'?s?|system|safety|original|given)\b"
        r"[^.\n]{0,25}?\b(instructions?|prompts?|rules|guidelines|directions|requests?|messages?|policies|what you "
        r"were told)\b",
        _I,
    ),
    re.compile(r"\byou are now (in|a|an|the)\b|\bfrom now on,? (you|answer|always|every|respond|reply)\b", _I),
    re.compile(r"\b(message|note|instructions?) (to|for) the (ai|assistant|model|llm|agent)\b", _I),
    re.compile(r"\b(the )?(assistant|ai|model|llm|agent) (must|should) (ignore|not|never|covertly|secretly)\b", _I),
    re.compile(
        r"\byou are instructed to\b|\bsafety rules do not apply\b|\byour new (task|goal|instructions?) (is|are)\b", _I
    ),
    re.compile(r"\bfollow only (the|this|these|my)\b|\bonly follow (the|this|these|my)\b", _I),
]
_SECRECY = [
    re.compile(
        r"\b(do not|don't|never|must not|should not|without)\b[^.\n]{0,30}?\b(tell|telling|inform|informing|mention|"
        r"mentioning|reveal|revealing|notify|notifying|let)\b[^.\n]{0,25}?\b(the user|users|anyone|them)\b",
        _I,
    ),
    re.compile(
        r"\btell (nobody|no one|no-one)\b|\bkeep (this|it|these)[^.\n]{0,20}\b(secret|hidden|confidential)\b", _I
    ),
    re.compile(
        r"\b(secretly|silently|covertly|quietly|discreetly) (forward|send|include|disable|copy|call|add|share)", _I
    ),
    re.compile(r"\bnever (reveal|disclose|mention) (these|this|the|your) (instructions|step|prompt)", _I),
    re.compile(
        r"\b(user|person|people|human|anyone)\b[^.\n]{0,30}\b(never|not|n't)\b[^.\n]{0,12}\b(find out|finds out|know|"
        r"knows|notice|notices|see|sees|learn|learns)\b",
        _I,
    ),
    re.compile(r"\bhide\b[^.\n]{0,40}\bfrom (the|your|this) (user|person|people|human|owner)\b", _I),
]
_FAKE_BLOCKS = re.compile(
    r"<\s*/?\s*(important|system|instructions?|admin|assistant|secret|hidden)\s*>|\[/?INST\]|<\|(im_start|im_end|system|"
    r"assistant|user)\|>|(^|\n)\s*#{1,6}\s*system\b|\bSYSTEM\s*:|\bASSISTANT\s*:",
    _I,
)


def _instructions(text: str) -> Iterator[tuple[str, str]]:
    if _FAKE_BLOCKS.search(text):
        yield "security-fake-system-block", "a fake system / <IMPORTANT> / [INST] block addressed to the model"
    if any(pattern.search(text) for pattern in _INSTRUCTIONS):
        yield "security-model-instructions", "instructions addressed to the model (ignore or override its instructions)"
    if any(pattern.search(text) for pattern in _SECRECY):
        yield "security-model-instructions", "an order to keep something from the user"


# -- secrets and data sent out --------------------------------------------------------------------

_SECRET_PATHS = (
    r"~?/?\.ssh\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|/etc/(passwd|shadow)\b|\.netrc\b|\.gnupg\b|"
    r"\bmcp\.json\b|\.cursor/|claude_desktop_config|(?<![\w.])\.env\b(?!\.\w)|\.git-credentials|\.kube/config|"
    r"\.docker/config\.json|\.npmrc\b|\.pypirc\b|~/\.[\w.-]+|\.pgpass\b|\.my\.cnf\b|\bkeychain\b|"
    r"\bwallet\.dat\b|\.bash_history\b|\bcookies\.sqlite\b"
)
_TAKE = (
    r"\b(read|cat|open|include|includ\w+|pass|send|attach|append|put|upload|copy|forward|extract|collect|load|dump|"
    r"paste|email|post|leak|share)\b"
)
_SECRET_ACTION = re.compile(rf"({_TAKE}[^.\n]{{0,80}}?({_SECRET_PATHS}))|(({_SECRET_PATHS})[^.\n]{{0,60}}?{_TAKE})", _I)
_SECRET_MATERIAL = re.compile(
    rf"{_TAKE}[^.\n]{{0,40}}?\b((the )?user'?s'? (password|api keys?|tokens?|private keys?|credentials|session "
    r"tokens?|email address|phone number|secrets?|address book|contacts|files)|(every|all|any) (api keys?|tokens?|"
    r"passwords?|secrets?|credentials)( you find)?)",
    _I,
)
_CONVERSATION_OUT = re.compile(
    r"\b(send|forward|post|upload|log|pass|copy|share|email)\b[^.\n]{0,40}?\b(the |this |full |entire |whole )*("
    r"conversation|chat (history|transcript|log)|transcript|dialogue|every message|all messages|user'?s messages)\b"
    r"[^.\n]{0,40}?\b(to|https?://)",
    _I,
)
_PLACEHOLDER_URL = re.compile(
    r"https?://[^\s)\"']*\{\{?\s*(conversation|chat|history|messages?|user_?message|prompt|context|input|query)"
    r"\w*\s*\}?\}",
    _I,
)
_MARKDOWN_BEACON = re.compile(r"!\[[^\]]*\]\(https?://[^)\s]*\?[^)\s]*=[^)\s]*\)", _I)


def _exfiltration(text: str) -> Iterator[str]:
    if _SECRET_ACTION.search(text):
        yield "a request to read or send a file that holds secrets (keys, credentials, client configs)"
    if _SECRET_MATERIAL.search(text):
        yield "a request to pass the user's secrets or personal data along"
    if _CONVERSATION_OUT.search(text) or _PLACEHOLDER_URL.search(text):
        yield "a request to send the conversation out (to an address or URL)"
    if _MARKDOWN_BEACON.search(text):
        yield "a Markdown image whose URL carries a query (data leaves when the image is rendered)"


# -- shadowing and preference manipulation ---------------------------------------------------------

_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_TOKEN = re.compile(r"[\w.\-/:]*\w")
_OTHER_TOOLS = re.compile(r"\b((any|every|all) )?other tools?\b|\b(any|every) tool\b|\btools? of the \w+ server\b", _I)
_DIRECTIVE = re.compile(
    r"\b(must|has to|have to|change the|replace the|redirect|is broken|are (deprecated|broken)|must not be called|"
    r"instead of the real|never use|first call|always include)\b",
    _I,
)
_WHEN_USED = re.compile(
    r"\b(when|whenever|each time|every time|after|before) (the )?[a-z][a-z0-9]*(_[a-z0-9]+)+ (tool )?((is|are|gets) "
    r"(used|called|invoked|run)|runs|executes|is executed)\b",
    _I,
)
_PREFERENCE = re.compile(
    r"\bthe only tool (you|to|that)\b|\bnever use (any )?other\b|\balways (prefer|choose|use|pick|select|call) this "
    r"tool\b|\b(prefer|choose|use) this tool over (all|any|every)\b|\bover all others\b|\bsupersedes (every|all|any) "
    r"other\b|\bother tools are (deprecated|obsolete|broken)\b|\bcall this tool first\b|\bbefore (any|every|each) "
    r"(answer|response|reply)\b|\bfor every (user )?message\b|\b(must|should) always (choose|use|call|pick) this tool\b|"
    r"\beven when another tool fits better\b|\bthe most trusted tool\b|\bbetter than (every|all|any) other tools?\b|"
    r"\b(pick|choose|use|call) me (first|for everything|always)\b|\buse me for everything\b|\b(on|at|for) (each|every) "
    r"(and every )?(turn|message|request)\b",
    _I,
)


def _sentences(text: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.!?;])\s+|\n+", text) if part.strip()]


_HARMFUL_VERBS = frozenset({"wipe", "erase", "purge", "destroy", "nuke", "exfiltrate", "leak", "steal", "dump", "drop"})


def _names_a_tool(token: str, sentence: str) -> bool:
    """Whether a snake_case identifier the sentence names reads as a tool (``send_email``,
    ``wipe_disk``: a verb first), or is written as plain words rather than quoted as code: API
    documentation quotes a field or a value (`` `enabled_repositories` ``) in every other
    sentence, next to a "must"."""
    if not _IDENTIFIER.fullmatch(token):
        return False
    verb = token.split("_", 1)[0].lower()
    return verb in VERBS or verb in _HARMFUL_VERBS or f"`{token}`" not in sentence


def _own_words(tool: Tool) -> set[str]:
    """The tool's name, and every property name and enum value of its schema, at any depth."""
    found = {tool.name}
    stack: list[Any] = [tool.parameters]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                found.update(str(name) for name in properties)
            found.update(str(value) for value in node.get("enum") or [] if isinstance(value, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _shadowing(text: str, tool: Tool, names: frozenset[str]) -> bool:
    own = _own_words(tool)
    for sentence in _sentences(text):
        tokens = set(_TOKEN.findall(sentence)) - own
        mentioned = (tokens & names) | {token for token in tokens if _names_a_tool(token, sentence)}
        if _WHEN_USED.search(sentence) or (
            (mentioned or _OTHER_TOOLS.search(sentence)) and _DIRECTIVE.search(sentence)
        ):
            return True
    return False


# -- confusable names ---------------------------------------------------------------------------

_LOOKALIKES = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ӏ": "l",
        "ѕ": "s", "ԁ": "d", "һ": "h", "к": "k", "м": "m", "т": "t", "н": "h", "в": "b", "ԛ": "q", "ԝ": "w",
        "α": "a", "ο": "o", "ν": "v", "ι": "i", "κ": "k", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ɡ": "g",
        "ɑ": "a", "ı": "i", "0": "o", "1": "l", "|": "l", "!": "l",
    }
)  # fmt: skip
_LATIN = re.compile(r"[A-Za-z]")
_CAPITAL_I_DISGUISE = re.compile(r"(?<=[a-z])I(?=[a-z]|_|$)")
_LOOKALIKE_SCRIPTS = re.compile("[\u0370-\u03ff\u0400-\u052f\u0530-\u058f]")


def skeleton(name: str) -> str:
    """What ``name`` looks like: compatibility forms folded, marks dropped, look-alike letters and
    digits mapped to the Latin letter they imitate (``send_emaiӏ`` and ``send_emai1`` -> ``send_email``)."""
    folded = unicodedata.normalize("NFKD", name)
    folded = "".join(char for char in folded if not unicodedata.combining(char))
    folded = folded.replace("I", "l").lower().translate(_LOOKALIKES)
    return folded.replace("rn", "m").replace("vv", "w")


def confusable_names(names: Iterable[str]) -> dict[str, tuple[str, str | None]]:
    """Each name that imitates another of ``names``, or mixes Latin with look-alike letters: why,
    and the name it imitates (None when it imitates none of ``names``)."""
    names = list(names)
    by_skeleton: dict[str, list[str]] = {}
    for name in names:
        by_skeleton.setdefault(skeleton(name), []).append(name)
    found: dict[str, tuple[str, str | None]] = {}
    for name in names:
        twins = [other for other in by_skeleton[skeleton(name)] if other != name]
        if twins and _imitates(name):
            found[name] = f"its name looks like '{twins[0]}' (look-alike letters or digits)", twins[0]
        elif _LATIN.search(name) and _LOOKALIKE_SCRIPTS.search(name):
            found[name] = "its name mixes Latin letters with Cyrillic, Greek or Armenian look-alikes", None
        elif "_" in name and _CAPITAL_I_DISGUISE.search(name) and name.replace("I", "").islower():
            found[name] = "its name hides a capital I among lowercase letters (it reads as l)", None
    return found


def _imitates(name: str) -> bool:
    """Whether ``name`` is the copy of a look-alike pair: it reads differently from its skeleton
    (``read_fi1e``, ``send_emaiӏ``), where the name it imitates reads as itself."""
    return unicodedata.normalize("NFKC", name).lower() != skeleton(name)


# -- the check ----------------------------------------------------------------------------------


def scan_tool(tool: Tool, names: frozenset[str] = frozenset()) -> list[Hit]:
    """The ``security-*`` problems of one tool's texts (``names``: the catalog's other tools)."""
    return _unique(hit for text in texts_of(tool) for hit in _scan_text(text, tool, names))


def _scan_text(text: Text, tool: Tool, names: frozenset[str]) -> list[Hit]:
    value = text.value
    hits = [Hit("security-hidden-text", "error", what, text.where) for what in _hidden(value)]
    visible = _visible(value)
    hits += [Hit(code, "error", what, text.where) for code, what in _instructions(visible)]
    hits += [Hit("security-exfiltration", "error", what, text.where) for what in _exfiltration(visible)]
    if _shadowing(visible, tool, names):
        hits.append(Hit("security-shadowing", "error", "orders about other tools or servers", text.where))
    if _PREFERENCE.search(visible):
        what = "a plea to be chosen over every other tool (preference manipulation)"
        hits.append(Hit("security-preference-manipulation", "error", what, text.where))
    return hits


def _visible(text: str) -> str:
    """The text with hidden characters removed and smuggled tag characters turned back into
    letters, so the other checks read what the model reads."""
    revealed = "".join(chr(ord(char) - 0xE0000) if 0xE0020 <= ord(char) <= 0xE007E else char for char in text)
    return _CONTROL.sub(" ", _INVISIBLE.sub("", _BIDI_CONTROLS.sub("", revealed)))


def _unique(hits: Iterable[Hit]) -> list[Hit]:
    seen: dict[tuple[str, str], Hit] = {}
    for hit in hits:
        seen.setdefault((hit.code, hit.what), hit)
    return list(seen.values())


def scan_catalog(catalog: Catalog) -> dict[str, list[Hit]]:
    """Every tool with a ``security-*`` problem, and its problems."""
    names = frozenset(catalog.names)
    found: dict[str, list[Hit]] = {}
    described = catalog.group_descriptions
    for tool in catalog:
        hits = scan_tool(tool, names)
        if tool.group is not None and tool.group in described:  # sent with its tools (a namespace)
            text = Text(f"groups.{tool.group}.description", described[tool.group])
            hits = _unique([*hits, *_scan_text(text, tool, names)])
        if hits:
            found[tool.name] = hits
    for name, (why, twin) in confusable_names(catalog.names).items():
        found.setdefault(name, []).append(Hit("security-confusable-name", "error", why, "name", twin))
    return found


def poisoned(catalog: Catalog) -> dict[str, list[str]]:
    """Each tool with a ``security-*`` error, and what each says (the screen lint, live servers
    and the catalog's writers share)."""
    found = {
        name: [f"{hit.what}, in {hit.where}" for hit in hits if hit.severity == "error"]
        for name, hits in scan_catalog(catalog).items()
    }
    return {name: problems for name, problems in found.items() if problems}


def without_poisoned(catalog: Catalog) -> tuple[Catalog, dict[str, list[str]]]:
    """``catalog`` without its poisoned tools, and those withheld with what they said."""
    found = poisoned(catalog)
    return (catalog.with_tools(tool for tool in catalog if tool.name not in found) if found else catalog), found
