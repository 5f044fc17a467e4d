"""Who asks (``Caller``) and what they ask (``RouteQuery``): the two values every entrance (the
HTTP API, the MCP server, the CLI) hands to ``toolsift.router.door.answer``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from toolsift.catalog import Catalog
from toolsift.router.formats import OutputFormat
from toolsift.router.rules import TagRules
from toolsift.router.scope import Scope
from toolsift.router.sessions import SessionPolicy
from toolsift.wire import DEFAULT_K as DEFAULT_K
from toolsift.wire import DELIVERY_MODES as DELIVERY_MODES
from toolsift.wire import Delivery as Delivery


@dataclass(frozen=True)
class Caller:
    """Who is asking: what they may see (``scope``), whose feedback ranks for them (``pool``: a
    tenant's name, ``""`` without tenants) and where their sessions live (``namespace``: tenants
    never share a session id)."""

    scope: Scope
    pool: str = ""
    namespace: str = ""
    rules: TagRules = field(default_factory=TagRules)
    """The operator's rules this caller is held to (already in ``scope``; kept to say why a
    call is refused)."""
    reach: Scope | None = None
    """What the caller's key reaches before the operator's rules (None: the same as ``scope``):
    a tool there that the rules leave out may be named, with the rule, in a refusal."""

    @classmethod
    def anyone(cls, catalog: Catalog) -> Caller:
        """The caller of a service without tenants (or of the library): every tool, shared feedback."""
        return cls(Scope.everything(catalog))

    def under(self, rules: TagRules, allowed: Scope) -> Caller:
        """This caller held to the operator's ``rules`` too (``allowed``: what they let through)."""
        return replace(self, scope=self.scope & allowed, rules=rules, reach=self.scope)

    def session_key(self, session_id: str) -> str:
        return f"{self.namespace}\x1f{session_id}" if self.namespace else session_id


@dataclass(frozen=True)
class RouteQuery:
    """Everything one route request asks for (the fields of ``POST /route``)."""

    query: str
    k: int = DEFAULT_K
    rules: TagRules = field(default_factory=TagRules)
    output_format: OutputFormat = "toolsift"
    delivery: Delivery = "subset"
    min_score: float | None = None
    min_confidence: float | None = None
    """None: the server's setting (``RankingConfig.min_confidence``); 0 never abstains."""
    pinned: tuple[str, ...] = ()
    split_intents: bool | None = None
    session_id: str | None = None
    session_policy: SessionPolicy = "all"
    call_id: str | None = None
    repeat_references: bool = False
    namespaces: bool = False
    """With ``tool_search_output``: the found tools in their groups' namespaces."""
    turn_key: str | None = None
    """With a session: the caller's key for this request; a retry with the same key gets the same
    answer, never a second turn (``toolsift.router.sessions.next_turn``)."""
