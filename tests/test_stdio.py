"""The gateway's stdio transport (``toolsift.service.stdio``): lines read on the event loop, a line
over the limit dropped without losing the messages after it. The whole transport is used by every
stdio test of the MCP server and the gateway."""

from __future__ import annotations

import asyncio

from toolsift.service.stdio import _Lines


async def read_all(chunks: list[bytes], limit: int) -> list[str]:
    reader = asyncio.StreamReader(limit=limit)
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return [line async for line in _Lines(reader)]


def test_lines_come_whole_and_an_overlong_one_is_dropped_not_the_next() -> None:
    too_long = b'{"jsonrpc": "2.0", "method": "' + b"x" * 500 + b'"}\n'
    chunks = [b'{"a": 1}\n', too_long[:100], too_long[100:], b'{"b": 2}\n{"c": 3}']
    lines = asyncio.run(read_all(chunks, limit=64))
    assert lines == ['{"a": 1}\n', "{", '{"b": 2}\n', '{"c": 3}']  # "{": a parse error the SDK answers
    assert asyncio.run(read_all([b"caf\xc3\xa9\n", b"\xff\n"], limit=64)) == ["café\n", "\ufffd\n"]
