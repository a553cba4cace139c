"""CPU per call of HTTP transports under the harness's load shape, A/B interleaved in one run.

Each measurement is a fresh client process sending ``--calls`` chat requests (a body shaped like a
mid-conversation request) with ``--inflight`` of them on the wire at once, to the fake endpoint running in
its own process. The figure is the client process's CPU time (user + system) over the calls: what the
transport costs the harness, independent of how busy the machine is. The variants run in rotating order,
``--rounds`` times, and the medians are printed with the load average beside them.

Variants:
  httpx         llm/http.py as shipped: httpx's transport layer, pools of four in-flight requests
  httpx-1pool   the same with one pool for every request
  httpx2        llm/http.py with httpx2 (pydantic's successor of httpx) in place of httpx
  httpx2-1pool  the same with one pool
  aiohttp       httpx-aiohttp's transport (aiohttp's client under httpx's request/response types);
                needs the httpx-aiohttp package importable (e.g. ``--extra-path`` to a pip --target dir)

Run: ``PYTHONPATH=src python bench/bench_transport.py --rounds 3``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = ("httpx", "httpx-1pool", "httpx2", "httpx2-1pool", "aiohttp")


def _body() -> bytes:
    history = [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " + "words " * 60}
               for i in range(24)]
    return json.dumps({"model": "fake-model", "messages": history, "temperature": 0.0,
                       "max_tokens": 64}).encode()


async def _drive(variant: str, base_url: str, calls: int, inflight: int) -> tuple[float, float]:
    import httpx

    from amemgym.llm import http as h
    from amemgym.llm.timeouts import resolve_timeouts

    if variant.startswith("httpx2"):
        import httpx2

        h.httpx = httpx2  # type: ignore[assignment]  # the same code over the other library
    if variant.endswith("1pool"):
        h.Transport.SHARD = 1 << 30
    body, url = _body(), f"{base_url}/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer not-needed"}
    timeouts = resolve_timeouts(base_url, None, None, None)
    if variant == "aiohttp":
        from httpx_aiohttp import AiohttpTransport

        aio = AiohttpTransport()
        hdrs = httpx.Headers({"User-Agent": "amemgym", "Accept-Encoding": "gzip, deflate", **headers})

        async def fetch() -> int:
            req = httpx.Request("POST", url, headers=hdrs, content=body)
            async with asyncio.timeout(timeouts.total):
                resp = await aio.handle_async_request(req)
                try:
                    got = await h._read(resp, 4 << 20)
                finally:
                    await resp.aclose()
            return got.status
        close = aio.aclose
    else:
        transport = h.Transport(base_url, timeouts, headers)

        async def fetch() -> int:
            return (await transport.fetch("POST", url, body, max_body=4 << 20, total=timeouts.total)).status
        close = transport.aclose

    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            if await fetch() != 200:
                raise SystemExit("a call failed")

    for _ in range(inflight):  # warm the connections before measuring
        await fetch()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    await close()
    return cpu, wall


def _child(args: argparse.Namespace) -> None:
    cpu, wall = asyncio.run(_drive(args.child, args.url, args.calls, args.inflight))
    print(json.dumps({"cpu_ms_per_call": 1000 * cpu / args.calls, "calls_per_s": args.calls / wall}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--extra-path", default=None, help="a directory added to the children's sys.path")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.extra_path:
            sys.path.append(args.extra_path)
        _child(args)
        return
    variants = args.variants.split(",")
    server = subprocess.Popen([sys.executable, "-m", "amemgym.testing.fake_endpoint"], stdout=subprocess.PIPE,
                              text=True, env=os.environ)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
        load0 = os.getloadavg()[0]
        for r in range(args.rounds):
            for v in variants[r % len(variants):] + variants[:r % len(variants)]:
                cmd = [sys.executable, str(Path(__file__).resolve()), "--child", v, "--url", url,
                       "--calls", str(args.calls), "--inflight", str(args.inflight)]
                if args.extra_path:
                    cmd += ["--extra-path", args.extra_path]
                out = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
                if out.returncode:
                    print(f"{v}: failed: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                    continue
                runs[v].append(json.loads(out.stdout))
                print(f"round {r + 1} {v}: {runs[v][-1]}", flush=True)
        load1 = os.getloadavg()[0]
    finally:
        server.terminate()
        server.wait()
    print(f"\n{args.calls} calls, {args.inflight} in flight, {args.rounds} rounds, load {load0:.1f} / {load1:.1f}")
    print("| transport | CPU per call (median) | runs | calls/s (median) |")
    print("|---|---|---|---|")
    for v, rs in runs.items():
        if rs:
            cpu = statistics.median(x["cpu_ms_per_call"] for x in rs)
            rate = statistics.median(x["calls_per_s"] for x in rs)
            spread = ", ".join(f"{x['cpu_ms_per_call']:.2f}" for x in rs)
            print(f"| {v} | {cpu:.2f} ms | {spread} | {rate:.0f} |")


if __name__ == "__main__":
    main()
