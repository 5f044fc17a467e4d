"""Tag rules, ranking, sessions, delivery and the Router that ties them together."""

from toolsift.router.delivery import DELIVERY_MODES, Delivered, Delivery, deliver
from toolsift.router.formats import OUTPUT_FORMATS, OutputFormat, format_tool
from toolsift.router.ranking import RankingConfig
from toolsift.router.router import DEFAULT_K, MAX_K, MAX_QUERY_CHARS, Match, Router, RouteResult, within_query_limit
from toolsift.router.rules import ACCESS_POLICIES, Access, TagIndex, TagRules
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
    "Delivered",
    "Delivery",
    "Match",
    "OutputFormat",
    "RankingConfig",
    "RouteResult",
    "Router",
    "SessionPolicy",
    "SessionStore",
    "SessionTurn",
    "TagIndex",
    "TagRules",
    "deliver",
    "within_query_limit",
    "format_tool",
]
