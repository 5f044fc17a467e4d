"""Tag rules, ranking and the Router that ties them together."""

from toolsift.router.formats import OUTPUT_FORMATS, OutputFormat, format_tool
from toolsift.router.ranking import RankingConfig
from toolsift.router.router import DEFAULT_K, MAX_K, Match, Router, RouteResult
from toolsift.router.rules import TagIndex, TagRules

__all__ = [
    "DEFAULT_K",
    "MAX_K",
    "OUTPUT_FORMATS",
    "Match",
    "OutputFormat",
    "RankingConfig",
    "RouteResult",
    "Router",
    "TagIndex",
    "TagRules",
    "format_tool",
]
