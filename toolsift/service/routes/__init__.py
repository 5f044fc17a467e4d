"""The HTTP endpoints, one router per area."""
