"""What a request quotes is what its tool acts on, not which tool: ranked without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolsift import Router
from toolsift.bench.metrics import recall_at
from toolsift.text import without_payload

PAYLOAD_REQUESTS = Path(__file__).resolve().parents[1] / "benchmarks" / "abstention" / "payload_requests.tsv"


@pytest.mark.parametrize(
    ("text", "ranked_as"),
    [
        (
            'send Dana a Slack message saying "Running late. Book a table for four."',
            'send Dana a Slack message saying ""',
        ),
        ("translate 'the meeting moved to Thursday' into German please", "translate '' into German please"),
        ('draw "a cat on a bicycle"', 'draw "a cat on a bicycle"'),  # mostly its quote: kept whole
        ('"what is the weather in Paris"', '"what is the weather in Paris"'),  # all in quotes: kept
        ("don't say it's late", "don't say it's late"),  # apostrophes quote nothing
        ('다음 문장을 영어로 번역해 줘 "오늘 회의는 취소되었습니다"', '다음 문장을 영어로 번역해 줘 ""'),
        ("count the words in «Il était une fois un roi» for me", "count the words in «» for me"),
    ],
)
def test_without_payload(text: str, ranked_as: str) -> None:
    assert without_payload(text) == ranked_as


def test_hostile_quotes_cost_no_more_than_prose() -> None:
    text = 'say "' + "„" * 8000 + '" to everyone in the team channel'
    assert without_payload(text) == 'say "" to everyone in the team channel'


@pytest.mark.model
def test_a_request_ranks_as_it_would_without_what_it_quotes(bundled_router: Router) -> None:
    request = 'send a Slack message to the team saying "what will the weather be like in Berlin tomorrow?"'
    assert bundled_router.route(request, 5).names[0] == "send_slack_message"
    assert bundled_router.route(request, 5).names == bundled_router.route(without_payload(request), 5).names
    vector, payload_free = bundled_router.embed_queries([request, without_payload(request)])
    assert np.array_equal(vector, payload_free)


@pytest.mark.model
def test_requests_that_carry_a_payload_find_their_tool(bundled_router: Router) -> None:
    rows = [line.split("\t") for line in PAYLOAD_REQUESTS.read_text(encoding="utf-8").splitlines() if line[:1] != "#"]
    asked = [(text, tool) for text, tool in rows]
    found = [recall_at(bundled_router.route(text, 5).names, [tool], 5) for text, tool in asked]
    assert len(asked) == 64 and np.mean(found) >= 0.9
