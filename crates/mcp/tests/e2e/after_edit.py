"""How long the first answers after an edit take, as an MCP client sees them.

Usage: after_edit.py SERVER_BINARY PROJECT_ROOT FILE [-- SERVER_ARGS...]

Starts `serve` on PROJECT_ROOT (with the configured model: hybrid when the index is embedded),
asks five questions (first, then warm), then twice: appends a function to FILE (relative to
the root), waits 1.5 s (the watcher's sync), asks the five again, waits 8 s (the embedder
commits the new chunks' vectors), asks again. Prints each call's milliseconds. The server's
debug log goes to /tmp/vec_server.log. FILE is restored at the end. Needs the `mcp` package
(see latency.py).
"""
import asyncio, sys, time
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    args = sys.argv[1:]
    server_args = []
    if "--" in args:
        i = args.index("--")
        args, server_args = args[:i], args[i + 1:]
    server, root, file = args
    path=f"{root}/{file}"; original=open(path).read()
    params = StdioServerParameters(command=server, args=["--root", root, *server_args, "serve"], env={"RUST_LOG":"codectx_store=debug,codectx_retrieval=debug,codectx_mcp=debug"})
    qs=["resolve the config file","how are css modules bundled","hot module replacement update","ssr externals","optimize deps scan"]
    try:
      async with stdio_client(params, errlog=open("/tmp/vec_server.log","w")) as (r,w):
        async with ClientSession(r,w) as s:
            await s.initialize()
            async def ask(tag):
                out=[]
                for q in qs:
                    t=time.perf_counter(); await s.call_tool("codebase_search",{"query":q}); out.append((time.perf_counter()-t)*1e3)
                print(tag, ' '.join('%.1f'%x for x in out), flush=True)
            await ask("first"); await asyncio.sleep(5); await ask("warm")
            for i in range(2):
                with open(path,"a") as f: f.write(f"\nexport function vecProbe{i}(v) {{\n  return v * {i};\n}}\n")
                await asyncio.sleep(1.5); await ask(f"edit{i}"); await asyncio.sleep(8); await ask(f"edit{i}+8s")
    finally:
        open(path,"w").write(original)
asyncio.run(main())
