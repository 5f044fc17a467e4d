"""The one home of the request and response shapes of the HTTP API (and of the MCP server's and
the CLI's ``--json`` output, which give the same ``/route`` body).

Requests are validated by these models; responses are built from them (``route_body``), so the
OpenAPI document at ``/docs`` describes exactly what is sent.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolsift.catalog.loader import Dialect
from toolsift.router import (
    MAX_K,
    MAX_QUERY_CHARS,
    Access,
    Delivered,
    Delivery,
    Match,
    OutputFormat,
    RouteQuery,
    SessionPolicy,
    TagRules,
)
from toolsift.router.router import MAX_PINNED
from toolsift.router.sessions import SessionTurn

Format = OutputFormat
SESSION_ID_PATTERN = r"^[A-Za-z0-9._:@-]+$"


class TagRulesIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    any: list[str] = Field(default_factory=list, description="A tool needs at least one of these tags")
    all: list[str] = Field(default_factory=list, description="A tool needs every one of these tags")
    exclude: list[str] = Field(default_factory=list, description="A tool must carry none of these tags")


class RouteRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # "k": "3" or true is a mistake to report, not to guess at
        json_schema_extra={"examples": [{"query": "what's the weather in Paris tomorrow", "k": 3}]},
    )

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The user's request")

    @field_validator("query")
    @classmethod
    def _has_text(cls, query: str) -> str:
        if not any(char.isprintable() and not char.isspace() for char in query):
            raise ValueError("has no text (only spaces or control characters); send the user's request")
        return query

    k: int = Field(default=5, ge=1, le=MAX_K, description="How many tools to return at most")
    tags: TagRulesIn | list[str] | None = Field(
        default=None, description="Tag rules applied before ranking; a plain list means 'any of'"
    )
    format: Format = Field(default="toolsift", description="Shape of the returned tool definitions")
    min_score: float | None = Field(
        default=None,
        allow_inf_nan=False,
        ge=-100.0,
        le=100.0,
        description="Drop tools whose ranking score (in standard deviations) is below this",
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
        "tool_reference / tool_search_output: the answer to a deferred-loading search call (see GET /deferred)",
    )
    call_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="With delivery=tool_search_output: the call_id of the model's tool search call",
    )
    repeat_references: bool = Field(
        default=False,
        description="With a deferred delivery and a session: reference every match again, also those "
        "referenced on earlier turns",
    )

    def rules(self) -> TagRules:
        return TagRules.from_spec(self.tags, self.access)

    def to_query(self) -> RouteQuery:
        return RouteQuery(
            self.query,
            self.k,
            self.rules(),
            output_format=self.format,
            delivery=self.delivery,
            min_score=self.min_score,
            pinned=tuple(self.pinned),
            split_intents=self.split_intents,
            session_id=self.session_id,
            session_policy=self.session_policy,
            call_id=self.call_id,
            repeat_references=self.repeat_references,
        )


class ToolsIn(BaseModel):
    """The body of ``POST /admin/tools``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tools: list[dict[str, Any]] = Field(min_length=1, max_length=1000, description="Tool definitions, any dialect")
    dialect: Dialect = "auto"


class MatchOut(BaseModel):
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

    @classmethod
    def of(cls, match: Match) -> MatchOut:
        return cls.model_construct(
            name=match.name,
            score=match.score,
            rank=match.rank,
            similarity=match.similarity,
            lexical=match.lexical,
            dense_part=match.dense_part,
            lexical_part=match.lexical_part,
            intent=match.intent,
        )


class SessionOut(BaseModel):
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

    @classmethod
    def of(cls, turn: SessionTurn) -> SessionOut:
        return cls.model_construct(
            id=turn.session_id,
            turn=turn.turn,
            prefix_changed=turn.prefix_changed,
            appended=list(turn.appended),
            removed=list(turn.removed),
            replaced=list(turn.replaced),
            reset=turn.reset,
            held_back=list(turn.held_back),
            withheld=list(turn.withheld),
            size=len(turn.tools),
        )


class RouteResponse(BaseModel):
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
    format: Format
    delivery: Delivery
    session: SessionOut | None = None
    tool_choice: dict[str, Any] | None = Field(
        default=None, description="With delivery=allowed_tools: OpenAI tool_choice masking tools to this turn's"
    )
    content: list[dict[str, Any]] | None = Field(
        default=None,
        description="With delivery=tool_reference: tool_reference blocks, the content of the tool_result "
        "answering the model's search call",
    )
    output_item: dict[str, Any] | None = Field(
        default=None,
        description="With delivery=tool_search_output: the OpenAI Responses tool_search_output item to append",
    )
    names: dict[str, str] | None = Field(
        default=None,
        description="Sent name -> catalog name, for tools whose catalog names providers refuse "
        "(they must match ^[a-zA-Z0-9_-]{1,64}$); present only when a sent tool was renamed",
    )

    @classmethod
    def of(cls, delivered: Delivered) -> RouteResponse:
        result = delivered.result
        return cls.model_construct(
            tools=delivered.definitions(),
            matches=[MatchOut.of(match) for match in result.matches],
            pinned=sorted(tool.name for tool in result.pinned),
            fingerprint=delivered.fingerprint,
            selected_fingerprint=result.fingerprint,
            catalog_fingerprint=result.catalog_fingerprint,
            eligible=result.eligible,
            k=result.k,
            format=delivered.output_format,
            delivery=delivered.delivery,
            session=SessionOut.of(delivered.session) if delivered.session else None,
            tool_choice=delivered.tool_choice,
            names=delivered.renamed or None,
            content=delivered.tool_reference_content() if delivered.delivery == "tool_reference" else None,
            output_item=delivered.tool_search_output() if delivered.delivery == "tool_search_output" else None,
        )


def route_body(delivered: Delivered) -> dict[str, Any]:
    """The ``/route`` response body; ``session``, ``tool_choice``, ``names``, ``content`` and
    ``output_item`` only where they apply."""
    response = RouteResponse.of(delivered)
    optional = ("session", "tool_choice", "names", "content", "output_item")
    absent = {name for name in optional if getattr(response, name) is None}
    return response.model_dump(exclude=absent)


class AdminChange(BaseModel):
    """What an admin edit did to the catalog."""

    tools: int
    catalog_fingerprint: str
    added: list[str]
    removed: list[str]
    changed: list[str]
    embedded: int | None = Field(description="Tools embedded for this change (new or edited text)")
    reused: int | None = Field(description="Tools whose vectors were kept")


class ErrorBody(BaseModel):
    type: str = Field(description="The error class, e.g. InvalidQuery, UnknownTag, Unauthorized")
    message: str = Field(description="What is wrong and how to fix it")
    problems: list[dict[str, str]] | None = Field(
        default=None, description="For InvalidRequest: each invalid field and why"
    )


class ErrorResponse(BaseModel):
    error: ErrorBody


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(
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
        return RouteRequest._has_text(query)


class FeedbackAccepted(BaseModel):
    accepted: bool = True
    tool: str = Field(description="The tool's catalog name")
    examples: int = Field(description="Requests now retained for this tool (for the caller's tenant)")


class FeedbackTool(BaseModel):
    tool: str
    requests: list[str] = Field(description="Retained requests, oldest first")


class FeedbackSummary(BaseModel):
    tenant: str | None
    retained: int
    tools: list[FeedbackTool]


class FeedbackReset(BaseModel):
    forgotten: int
