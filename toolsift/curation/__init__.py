"""Catalog curation: lint findings with suggestions, for the CLI and the web page."""

from toolsift.curation.lint import SEVERITIES, Finding, LintReport, Severity, lint_catalog

__all__ = ["SEVERITIES", "Finding", "LintReport", "Severity", "lint_catalog"]
