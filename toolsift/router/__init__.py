"""Tag rules, ranking and the Router that ties them together."""

from toolsift.router.formats import OUTPUT_FORMATS, OutputFormat, format_tool
from toolsift.router.ranking import RankingConfig
from toolsift.router.router import DEFAULT_K, MAX_K, Match, Router, RouteResult, check_format
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
    "check_format",
    "format_tool",
]
