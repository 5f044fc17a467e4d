"""MCP over stdio without a thread per line.

The SDK's ``stdio_server`` reads stdin and writes stdout through worker threads (one hop per line
read, two per message written); in front of other servers, where every call crosses this pipe
twice, those hops were most of the gateway's added latency. When stdin and stdout are pipes (as an
MCP client launches a server) this reads and writes them on the event loop; otherwise (a file, a
terminal, a loop other than asyncio) it leaves the SDK's transport as it is. Either way fds 0 and
1 are taken over as the SDK does: stray prints go to stderr, never onto the wire.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import sniffio
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server

MAX_LINE = 64 * 1024 * 1024
"""The longest message read (bytes); a longer line is skipped and answered as a parse error."""


async def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes."""
    async with _streams() as (stdin, stdout), stdio_server(stdin, stdout) as (read, write):
        lowlevel = server._lowlevel_server  # noqa: SLF001 - MCPServer.run_stdio_async, with other streams
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


@asynccontextmanager
async def _streams() -> AsyncIterator[tuple[Any, Any]]:
    if not (_is_pipe(0) and _is_pipe(1)) or sniffio.current_async_library() != "asyncio":
        yield None, None  # the SDK's own (threaded) transport
        return
    stdin_fd, stdout_fd = os.dup(0), os.dup(1)
    saved_stdin, saved_stdout = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # handlers and children read EOF ...
    os.dup2(2, 1)  # ... and what they print goes to stderr
    os.close(null)
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdin_fd, "rb", buffering=0)
    )
    write_transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(stdout_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
    try:
        yield _Lines(reader), _Writer(writer)
    finally:
        read_transport.close()
        write_transport.close()
        os.dup2(saved_stdin, 0)
        os.dup2(saved_stdout, 1)
        os.close(saved_stdin)
        os.close(saved_stdout)


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Lines:
    """stdin as the SDK reads it: an async iterator of text lines."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as error:  # the end: a last line without its newline, or none
            line = error.partial
        except asyncio.LimitOverrunError:  # over MAX_LINE: dropped up to its newline; the SDK logs a parse error
            await self._skip_line()
            return "{"
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as error:
                await self._reader.readexactly(error.consumed)
            except asyncio.IncompleteReadError:
                return


class _Writer:
    """stdout as the SDK writes it: ``write`` then ``flush``."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()
