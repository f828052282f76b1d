"""A ref's answers over MCP while its background work lands (issue 40): the first call at
the ref, then the same question every 5 s for a while, with each answer's `mode` (lexical or
hybrid) and time. The server's log (stderr) says when the revision's history and vectors
are done.

Usage: ref_fill.py SERVER_BINARY PROJECT_ROOT REF QUERY [SECONDS] 2>server.log

Needs the `mcp` package (the e2e test installs it in the test cache,
~/.cache/codectx/corpus/pip/mcp-python-sdk; point PYTHONPATH there).
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    server, root, ref, query = sys.argv[1:5]
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 180.0
    params = StdioServerParameters(
        command=server, args=["--root", root, "serve"], env={"RUST_LOG": "codectx_mcp=info,warn"}
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            started = time.perf_counter()
            first = await session.call_tool("codebase_search", {"query": query, "ref": ref})
            print(json.dumps({
                "first_call_s": round(time.perf_counter() - started, 2),
                "mode": first.structured_content.get("mode"),
                "metadata": first.structured_content.get("metadata"),
            }), flush=True)
            while time.perf_counter() - started < seconds:
                await asyncio.sleep(5)
                t = time.perf_counter()
                answer = await session.call_tool("codebase_search", {"query": query, "ref": ref})
                content = answer.structured_content
                print(json.dumps({
                    "at_s": round(time.perf_counter() - started, 1),
                    "call_ms": round((time.perf_counter() - t) * 1e3, 1),
                    "mode": content.get("mode"),
                    "top": [r.get("name") for r in content.get("results", [])[:3]],
                }), flush=True)


asyncio.run(main())
