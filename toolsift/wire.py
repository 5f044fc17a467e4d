"""The wire shapes of toolsift's HTTP API: every request and response body, and the words they
use (formats, delivery modes, access rules, limits). The service validates requests and
documents responses with these models (OpenAPI at ``/docs``); ``toolsift.client`` parses the
answers with the same ones. Pydantic only: importing this module loads neither numpy, FAISS,
FastAPI nor a model, so a client install stays light.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

OutputFormat = Literal["toolsift", "openai", "responses", "anthropic", "mcp", "gemini"]
"""``openai``: Chat Completions (``{"type": "function", "function": {...}}``); ``responses``: the
OpenAI Responses API's flat function tool (``{"type": "function", "name", ...}``); ``gemini``: a
function of Gemini's Interactions API (``{"type": "function", "name", "description", "parameters"}``)."""
OUTPUT_FORMATS: tuple[OutputFormat, ...] = get_args(OutputFormat)
Delivery = Literal["subset", "allowed_tools", "tool_reference", "tool_search_output", "function_result"]
DELIVERY_MODES: tuple[str, ...] = get_args(Delivery)
Access = Literal["any", "read_only", "non_destructive"]
ACCESS_POLICIES: tuple[str, ...] = get_args(Access)
SessionPolicy = Literal["all", "outranking"]
SESSION_POLICIES: tuple[str, ...] = get_args(SessionPolicy)
DeferredFormat = Literal["anthropic", "openai", "gemini"]
DEFERRED_FORMATS: tuple[str, ...] = get_args(DeferredFormat)
Dialect = Literal["auto", "toolsift", "openai", "anthropic", "mcp"]
DIALECTS: tuple[str, ...] = get_args(Dialect)
Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)

DEFAULT_K = 5
MAX_K = 256
MAX_PINNED = 64
MAX_QUERY_CHARS = 8192
SESSION_ID_PATTERN = r"^[A-Za-z0-9._:@-]+$"
SEARCH_TOOL_NAME = "toolsift_search"
"""The name of the search tool of deferred loading (``GET /deferred``)."""


class WireModel(BaseModel):
    """Every wire shape: its validator is built when first used, not at import (a client that
    only routes never pays for the admin or curation shapes)."""

    model_config = ConfigDict(defer_build=True)


def _has_text(query: str) -> str:
    if not any(char.isprintable() and not char.isspace() for char in query):
        raise ValueError("has no text (only spaces or control characters); send the user's request")
    return query


class TagRulesIn(WireModel):
    model_config = ConfigDict(defer_build=False, extra="forbid", strict=True)

    any: list[str] = Field(default_factory=list, description="A tool needs at least one of these tags")
    all: list[str] = Field(default_factory=list, description="A tool needs every one of these tags")
    exclude: list[str] = Field(default_factory=list, description="A tool must carry none of these tags")


class RouteRequest(WireModel):
    model_config = ConfigDict(
        defer_build=False,  # FastAPI builds it at start-up anyway
        extra="forbid",
        strict=True,  # "k": "3" or true is a mistake to report, not to guess at
        json_schema_extra={"examples": [{"query": "what's the weather in Paris tomorrow", "k": 3}]},
    )

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The user's request")

    @field_validator("query")
    @classmethod
    def _has_text(cls, query: str) -> str:
        return _has_text(query)

    k: int = Field(default=5, ge=1, le=MAX_K, description="How many tools to return at most")
    tags: TagRulesIn | list[str] | None = Field(
        default=None, description="Tag rules applied before ranking; a plain list means 'any of'"
    )
    format: OutputFormat = Field(default="toolsift", description="Shape of the returned tool definitions")
    min_score: float | None = Field(
        default=None,
        allow_inf_nan=False,
        ge=-100.0,
        le=100.0,
        description="Drop tools whose ranking score (in standard deviations) is below this",
    )
    min_confidence: float | None = Field(
        default=None,
        allow_inf_nan=False,
        ge=0.0,
        le=1.0,
        description="Abstain (no tools, abstained: true) when the best match is less likely than this to serve "
        "the request; null: the server's setting (TOOLSIFT_MIN_CONFIDENCE); 0: never abstain",
    )
    split_intents: bool | None = Field(
        default=None,
        description="Route each part of a multi-part request too (see README, Ranking); null: the server's "
        "setting (TOOLSIFT_SPLIT_INTENTS, on by default)",
    )
    access: Access = Field(
        default="any",
        description="read_only: only tools annotated readOnlyHint; non_destructive: also those "
        "annotated destructiveHint false; any: no annotation rule",
    )
    pinned: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list,
        max_length=MAX_PINNED,
        description="Tools always delivered, first, whatever the query; they do not count toward k",
    )
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=SESSION_ID_PATTERN,
        description="Makes the tool list sticky: tools given earlier keep their place, new ones are appended",
    )
    session_policy: SessionPolicy = Field(
        default="all",
        description="all: append every new tool; outranking: only new tools ranked above the session's best "
        "(more turns leave the prompt unchanged, at some recall)",
    )
    delivery: Delivery = Field(
        default="subset",
        description="allowed_tools (with format=openai): a stable superset in tools, masked by tool_choice; "
        "tool_reference (Anthropic) / tool_search_output (OpenAI) / function_result (Gemini): the answer to a "
        "deferred-loading search call (see GET /deferred)",
    )
    call_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="With delivery=tool_search_output or function_result: the id of the model's tool search call",
    )
    turn_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="With a session_id: a key for this request (the Python client sends a fresh one per call). "
        "A retry with the same key gets the same answer, never a second turn",
    )
    repeat_references: bool = Field(
        default=False,
        description="With a deferred delivery and a session: reference every match again, also those "
        "referenced on earlier turns",
    )
    namespaces: bool = Field(
        default=False,
        description="With delivery=tool_search_output: put the found tools in their groups' namespaces, as "
        "GET /deferred?format=openai&namespaces=true sends them",
    )


class ToolsIn(WireModel):
    """The body of ``POST /admin/tools``."""

    model_config = ConfigDict(defer_build=False, extra="forbid", strict=True)

    tools: list[dict[str, Any]] = Field(min_length=1, max_length=1000, description="Tool definitions, any dialect")
    dialect: Dialect = "auto"
    keep_flagged: bool = Field(
        default=False,
        description="Add tools the security-* screen finds poisoned too (refused, 400, by default)",
    )


class MatchOut(WireModel):
    name: str
    score: float = Field(description="Ranking score, in standard deviations: dense_part + lexical_part")
    rank: int
    similarity: float = Field(description="Cosine similarity between query and tool")
    lexical: float = Field(description="BM25 score over the tool text, scaled to [0, 1] per query")
    dense_part: float = Field(description="The cosine standardised over the catalog for this query")
    lexical_part: float = Field(description="BM25 standardised likewise, times the lexical weight")
    intent: str | None = Field(
        default=None,
        description="For a multi-part request, the part this tool was selected for (the scores are that part's); "
        "null when selected for the whole query",
    )
    confidence: float = Field(
        default=1.0, description="Probability that this tool serves the request, calibrated for the catalog"
    )


class SessionOut(WireModel):
    id: str
    turn: int = Field(description="1 on the session's first request")
    prefix_changed: bool = Field(description="False when the previous turn's tools are an exact prefix of these")
    appended: list[str] = Field(description="Tools added at the end on this turn")
    removed: list[str] = Field(description="Tools dropped: gone from the catalog, or by a reset")
    replaced: list[str] = Field(description="Tools whose definition changed in the catalog")
    reset: bool = Field(description="The session cap was reached; the list restarted with this turn's tools")
    held_back: list[str] = Field(description="New matches not appended (session_policy=outranking)")
    withheld: list[str] = Field(
        description="Session tools this request's rules (tags, access, tenant) forbid: taken out of the list"
    )
    size: int


class RouteResponse(WireModel):
    tools: list[dict[str, Any]] = Field(
        description="Tool definitions to send: pinned then matches, each by name; with a session, "
        "the session's append-only list; with allowed_tools, the stable superset"
    )
    matches: list[MatchOut] = Field(description="This turn's ranked tools, best first, with scores")
    pinned: list[str]
    fingerprint: str = Field(description="sha256 of the tools array exactly as returned, order included")
    selected_fingerprint: str = Field(description="sha256 of this turn's selection as a set")
    catalog_fingerprint: str
    eligible: int = Field(description="Tools left after tag and access rules")
    k: int
    abstained: bool = Field(
        default=False,
        description="No tool was likely enough to serve the request (min_confidence): no matches; pinned tools "
        "still come, and a session's tools are left as they were",
    )
    reason: str | None = Field(default=None, description="Why the answer abstained; present only when it did")
    format: OutputFormat
    delivery: Delivery
    session: SessionOut | None = None
    tool_choice: dict[str, Any] | str | None = Field(
        default=None,
        description='With delivery=allowed_tools: OpenAI tool_choice masking tools to this turn\'s; "none" when '
        "the answer abstained",
    )
    content: list[dict[str, Any]] | None = Field(
        default=None,
        description="With delivery=tool_reference: tool_reference blocks, the content of the tool_result "
        "answering the model's search call",
    )
    output_item: dict[str, Any] | None = Field(
        default=None,
        description="With delivery=tool_search_output: the OpenAI Responses tool_search_output item to append; "
        "with function_result: the Gemini Interactions function_result step",
    )
    names: dict[str, str] | None = Field(
        default=None,
        description="Sent name -> catalog name, for tools whose catalog names providers refuse "
        "(they must match ^[a-zA-Z0-9_-]{1,64}$); present only when a sent tool was renamed",
    )


class AdminChange(WireModel):
    """What an admin edit did to the catalog."""

    tools: int
    catalog_fingerprint: str
    added: list[str]
    removed: list[str]
    changed: list[str]
    embedded: int | None = Field(description="Tools embedded for this change (new or edited text)")
    reused: int | None = Field(description="Tools whose vectors were kept")


class ErrorBody(WireModel):
    type: str = Field(description="The error class, e.g. InvalidQuery, UnknownTag, Unauthorized")
    message: str = Field(description="What is wrong and how to fix it")
    problems: list[dict[str, str]] | None = Field(
        default=None, description="For InvalidRequest: each invalid field and why"
    )


class ErrorResponse(WireModel):
    error: ErrorBody


class FeedbackRequest(WireModel):
    model_config = ConfigDict(
        defer_build=False,
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"query": "what's the weather in Paris tomorrow", "tool": "get_weather"}]},
    )

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The user's request, as routed")
    tool: str = Field(min_length=1, max_length=256, description="The tool the model actually called for it")
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=SESSION_ID_PATTERN,
        description="The conversation it came from: one session contributes at most 16 requests per tool",
    )

    @field_validator("query")
    @classmethod
    def _has_text(cls, query: str) -> str:
        return _has_text(query)


class CallRequest(WireModel):
    model_config = ConfigDict(
        defer_build=False,
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"tool": "read_text_file", "arguments": {"path": "/data/notes.txt"}}]},
    )

    tool: str = Field(min_length=1, max_length=256, description="The tool's exact name (as /route returned it)")
    arguments: dict[str, Any] | None = Field(default=None, description="Its arguments, matching its inputSchema")
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=SESSION_ID_PATTERN,
        description="The conversation the call belongs to (logged with the call)",
    )


class CallResult(WireModel):
    """An MCP ``CallToolResult``: the owning server's answer as it came, or a tool error (``isError``)
    whose text says why the call was refused or failed."""

    model_config = ConfigDict(defer_build=True, extra="allow", populate_by_name=True)

    content: list[dict[str, Any]] = Field(description="MCP content blocks: text, image, audio, resource links...")
    structured_content: dict[str, Any] | None = Field(default=None, alias="structuredContent")
    is_error: bool = Field(default=False, alias="isError")

    @property
    def text(self) -> str:
        """The text blocks, joined (what a model would read)."""
        return "\n".join(block.get("text", "") for block in self.content if block.get("type") == "text")

    def anthropic_content(self) -> list[dict[str, Any]]:
        """The content as Anthropic ``tool_result`` content: text and images as they are, any
        other block (audio, a resource, ``structuredContent`` alone) as its JSON in a text block."""
        blocks = [_anthropic_block(block) for block in self.content]
        if not blocks and self.structured_content is not None:
            blocks = [{"type": "text", "text": _json(self.structured_content)}]
        return blocks

    def openai_output(self) -> str | list[dict[str, Any]]:
        """The content as an OpenAI ``function_call_output``'s ``output``: the text when there is
        only text, else ``input_text`` / ``input_image`` items."""
        if all(block.get("type") == "text" for block in self.content):
            return self.text if self.content or self.structured_content is None else _json(self.structured_content)
        return [_openai_item(block) for block in self.content]

    def gemini_result(self) -> list[dict[str, Any]]:
        """The content as a Gemini ``function_result``'s ``result``: text and images as their
        Interactions content, any other block (or ``structuredContent`` alone) as its JSON text."""
        if not self.content and self.structured_content is not None:
            return [{"type": "text", "text": _json(self.structured_content)}]
        return [_gemini_item(block) for block in self.content]


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()


def _anthropic_block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    if block.get("type") == "image" and block.get("mimeType") in ("image/jpeg", "image/png", "image/gif", "image/webp"):
        return {"type": "image", "source": {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}}
    return {"type": "text", "text": _json(block)}


def _openai_item(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "image" and isinstance(block.get("data"), str):
        return {"type": "input_image", "image_url": f"data:{block.get('mimeType', 'image/png')};base64,{block['data']}"}
    text = block.get("text", "") if block.get("type") == "text" else _json(block)
    return {"type": "input_text", "text": text}


def _gemini_item(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "image" and isinstance(block.get("data"), str):
        return {"type": "image", "data": block["data"], "mime_type": block.get("mimeType", "image/png")}
    text = block.get("text", "") if block.get("type") == "text" else _json(block)
    return {"type": "text", "text": text}


class FeedbackAccepted(WireModel):
    accepted: bool = True
    tool: str = Field(description="The tool's catalog name")
    examples: int = Field(description="Requests now retained for this tool (for the caller's tenant)")


class FeedbackTool(WireModel):
    tool: str
    requests: list[str] = Field(description="Retained requests, oldest first")
    contributors: list[str] = Field(
        default_factory=list, description="Who sent each request (its credential: tenant:<name>, admin, ...)"
    )


class FeedbackSummary(WireModel):
    tenant: str | None
    retained: int
    tools: list[FeedbackTool]


class FeedbackReset(WireModel):
    forgotten: int


class DeferredTools(WireModel):
    """``GET /deferred``: the tools array to send on every turn, and its fingerprint."""

    format: DeferredFormat
    tools: list[dict[str, Any]] = Field(description="The search tool, then every tool the caller may see, deferred")
    count: int
    fingerprint: str = Field(description="Changes only when the tools the caller may see change (the ETag)")


class GroupOut(WireModel):
    tools: int = Field(description="The group's tools the caller may see")
    description: str = Field(description="What the group is for (the catalog's groups section, or its first tools)")


class ToolPage(WireModel):
    """``GET /tools``: one page of the catalog the caller may see."""

    total: int = Field(description="Tools matching the filters")
    offset: int
    limit: int
    tools: list[dict[str, Any]] = Field(description="This page's definitions, by name, in the requested format")
    tags: dict[str, int] = Field(description="Each tag the caller's tools carry, with its count")
    groups: dict[str, GroupOut] = Field(
        default_factory=dict, description="Each group of the caller's tools: its count and what it is for"
    )
    catalog_fingerprint: str = Field(description="The fingerprint of the catalog as the caller sees it")
    names: dict[str, str] | None = Field(
        default=None, description="Sent name -> catalog name, for this page's tools that were renamed"
    )


class FindingOut(WireModel):
    code: str = Field(description="The check, e.g. confusable-pair, no-description")
    severity: Severity
    tools: list[str]
    message: str
    suggestion: str
    details: dict[str, Any] = Field(default_factory=dict)


class ToolDetail(WireModel):
    """``GET /tools/{name}``: one tool as the curation page shows it."""

    name: str
    tags: list[str]
    group: str | None = Field(default=None, description="The tool's group, when it has one")
    examples: list[str]
    formats: dict[str, dict[str, Any]] = Field(description="The definition in each output format")
    tokens: dict[str, int] = Field(description="Tokens each format's definition costs")
    findings: list[FindingOut]
    neighbours: list[dict[str, Any]] = Field(description="The closest tools by vector: name and cosine")
    feedback: dict[str, Any] = Field(description="How many retained requests name it, and the latest few")
    accuracy: dict[str, float] | None = Field(description="Its recall on TOOLSIFT_LINT_QUERIES, when set")


class LintPage(WireModel):
    """``GET /lint``: a page of the lint report's findings."""

    catalog: str
    tools: int
    counts: dict[str, int] = Field(description="Findings by severity")
    checks: dict[str, int] = Field(description="Findings by check")
    total: int = Field(description="Findings matching the filters")
    offset: int
    limit: int
    findings: list[FindingOut]
    schema_tokens: dict[str, int]
    per_tool_accuracy: dict[str, dict[str, float]] | None


class CatalogMap(WireModel):
    """``GET /catalog/map``: the tools on two axes, with their costs, recall and feedback."""

    axes: str
    columns: list[str]
    tools: list[list[Any]] = Field(description="One row per tool, in the order of columns")
    pairs: list[list[str]] = Field(description="Confusable pairs among the visible tools")


class Health(WireModel):
    """``GET /healthz``; with tenants, only status and version (it needs no key)."""

    status: Literal["ok"]
    version: str
    tools: int | None = None
    model: str | None = None
    index_kind: str | None = None
    catalog_fingerprint: str | None = None
    admin: bool | None = Field(default=None, description="True when the request carried the admin token")


class ApproveRequest(WireModel):
    """The body of ``POST /admin/approve``: which of the MCP servers' current definitions to pin."""

    model_config = ConfigDict(defer_build=False, extra="forbid", strict=True)

    server: str | None = Field(default=None, max_length=64, description="One server (omit: every server)")
    tools: list[Annotated[str, Field(min_length=1, max_length=256)]] | None = Field(
        default=None, max_length=10_000, description="Tools by the names toolsift serves (omit: all the server lists)"
    )


class ApproveResult(WireModel):
    approved: dict[str, list[str]] = Field(description="Per server, the tools (its own names) now pinned")


class ReloadResult(WireModel):
    """``POST /admin/reload``: what a reload did."""

    model_config = ConfigDict(extra="allow")  # a live catalog adds its servers' outcomes

    source: str = Field(description="mcp, or the index folder read")
    changed: bool | None = None
    tools: int | None = None
    catalog_fingerprint: str | None = None


class CatalogVersion(WireModel):
    fingerprint: str
    published_at: str = Field(description="When this process started serving it")
    tools: int


class CatalogChanges(WireModel):
    """``GET /admin/changes``: the versions this process served; with ``since``, what changed from
    that one to the serving one."""

    versions: list[CatalogVersion] = Field(description="Oldest first; the last is the one serving")
    before: str | None = None
    after: str | None = None
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: dict[str, list[str]] = Field(default_factory=dict, description="Tool -> the fields that changed")
    queries: int = Field(default=0, description="Labelled requests compared (TOOLSIFT_LINT_QUERIES)")
    k: int = 5
    rerouted: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each request whose top k changed: before, after, and whether each found a tool it names",
    )
    fixed: int = 0
    broken: int = 0


class AdminStatus(WireModel):
    """``GET /admin/status``: the catalog served and, with MCP servers, each server's state."""

    tools: int
    catalog_fingerprint: str
    sessions: int
    live: dict[str, Any] | None = Field(description="Each MCP server's state and the reload history; null without")


class TuneRequest(WireModel):
    """``POST /admin/tune``: fine-tune the index's model in a process of its own (``toolsift tune``)."""

    model_config = ConfigDict(defer_build=False, extra="forbid")

    kind: Literal["auto", "full", "adapter"] = Field("auto", description="full, adapter, or auto: each, keep the best")
    time_limit: float = Field(900, ge=1, le=24 * 3600, description="Seconds of training per kind")
    hold_out: float = Field(0.2, ge=0.05, le=0.5, description="Share of the requests held back to judge it")
    epochs: int = Field(1, ge=1, le=20)
    shadow: bool = Field(
        False, description="Stage the model that passes instead of serving it (toolsift tune --shadow)"
    )
