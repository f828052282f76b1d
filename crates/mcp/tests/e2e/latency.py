"""Latency of `codebase_search` as an MCP client sees it (JSON-RPC over stdio, sync before
each call, full answer with connection graph and snapshots).

Usage: latency.py SERVER_BINARY PROJECT_ROOT QUERIES.jsonl [--runs N] [--no-watch] [--ref REF] [--settle S] [-- SERVER_ARGS...]

`--no-watch` runs `serve --no-watch`: every answer syncs first (a walk of the tree). By
default the server watches the files (Linux) and an answer syncs only after a change.
`--ref REF` asks every question at git ref REF (the first call opens the revision).
`--settle S` waits S seconds after the first answer before timing: a server that has been up
a while, whose background reads (the full-text fields in memory) have landed.

QUERIES.jsonl holds one {"query": ...} per line (a CommitLoc set works). Prints the time to
the first answer (from the call, and from starting the server: on a never-indexed checkout
that includes building the index) and p50/p95 over every call after it.
Needs the `mcp` package (the e2e test installs it in the test cache,
~/.cache/codectx/corpus/pip/mcp-python-sdk; point PYTHONPATH there).
"""

import asyncio
import json
import statistics
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from script_args import split_server_args, take_option


async def main():
    args, server_args = split_server_args(sys.argv[1:])
    runs = take_option(args, "--runs", int, 1)
    ref = take_option(args, "--ref", str, None)
    tool_args = {} if ref is None else {"ref": ref}
    settle = take_option(args, "--settle", float, 0.0)
    serve = ["serve"]
    if "--no-watch" in args:
        args.remove("--no-watch")
        serve.append("--no-watch")
    server, root, queries_file = args
    queries = [json.loads(line)["query"] for line in open(queries_file) if line.strip()]
    params = StdioServerParameters(
        command=server, args=["--root", root, *server_args, *serve], env={"RUST_LOG": "warn"}
    )
    spawned = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            started = time.perf_counter()
            first = await session.call_tool("codebase_search", {"query": queries[0], **tool_args})
            first_ms = (time.perf_counter() - started) * 1e3
            # What a user waits: from starting the server to the first answer.
            spawn_to_first_ms = (time.perf_counter() - spawned) * 1e3
            first_mode = first.structured_content.get("mode")
            await asyncio.sleep(settle)
            meta = first.structured_content["metadata"]
            times = []
            modes = {}
            empty = set()
            for _ in range(runs):
                for q in queries:
                    t = time.perf_counter()
                    result = await session.call_tool("codebase_search", {"query": q, **tool_args})
                    times.append((time.perf_counter() - t) * 1e3)
                    mode = result.structured_content.get("mode", "error")
                    modes[mode] = modes.get(mode, 0) + 1
                    if not result.structured_content.get("results"):
                        empty.add(q)
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    print(json.dumps({
        "calls": len(times),
        "settle_s": settle,
        "first_call_ms": round(first_ms, 1),
        "spawn_to_first_answer_ms": round(spawn_to_first_ms, 1),
        "first_mode": first_mode,
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95, 1),
        "modes": modes,
        # Questions answered with nothing (every candidate under the relevance gate).
        "empty": sorted(empty),
        "ref": meta.get("ref"),
        "commit": meta.get("commit"),
        "index": meta.get("index"),
    }, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
