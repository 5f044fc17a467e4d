"""Tag rules, ranking, sessions, delivery and the Router that ties them together."""

from toolsift.router.caller import DEFAULT_K, DELIVERY_MODES, Caller, Delivery, RouteQuery
from toolsift.router.delivery import Delivered, deliver
from toolsift.router.door import answer, tool_to_call
from toolsift.router.formats import OUTPUT_FORMATS, OutputFormat, format_tool
from toolsift.router.ranking import RankingConfig
from toolsift.router.router import MAX_K, MAX_QUERY_CHARS, Match, Router, RouteResult, within_query_limit
from toolsift.router.rules import ACCESS_POLICIES, Access, TagIndex, TagRules
from toolsift.router.scope import Scope
from toolsift.router.sessions import SESSION_POLICIES, SessionPolicy, SessionStore, SessionTurn

__all__ = [
    "ACCESS_POLICIES",
    "DEFAULT_K",
    "DELIVERY_MODES",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "OUTPUT_FORMATS",
    "SESSION_POLICIES",
    "Access",
    "Caller",
    "Delivered",
    "Delivery",
    "Match",
    "OutputFormat",
    "RankingConfig",
    "RouteQuery",
    "RouteResult",
    "Router",
    "Scope",
    "SessionPolicy",
    "SessionStore",
    "SessionTurn",
    "TagIndex",
    "TagRules",
    "answer",
    "tool_to_call",
    "deliver",
    "within_query_limit",
    "format_tool",
]
