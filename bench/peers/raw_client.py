"""A lean raw-socket reference client for the peer benchmark (standard library only).

It is the yardstick the other tools are held against: plain asyncio streams, a hand-parsed
HTTP/1.1 chunked SSE response, one keep-alive connection per worker, ``perf_counter_ns``
(CLOCK_MONOTONIC) taken right after each read returns. TTFT is the first chunk with
non-whitespace text (draft 5.1.3.1's first *content* token); every content chunk's arrival
offset is kept; token counts come from the final ``usage`` event.

Usage::

    python bench/peers/raw_client.py URL MODEL N OUT.jsonl (--concurrency C | --rate R)
        [--max-tokens 64] [--script JSON]

``--rate``: open loop, requests sent every 1/R s (constant spacing) on fresh connections
as needed. One JSON line per request: ``id``, ``submit_ns``, ``ttft_us``, ``chunk_us``
(content chunk offsets from submit), ``tokens``, ``ok``. ``--script``: a ``script`` object for the
scripted SSE server (tests/fixtures/scripted_server.py), sent in the request body.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any


class Conn:
    """One HTTP/1.1 keep-alive connection."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, path: str, body: bytes) -> dict[str, Any]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"POST {path} HTTP/1.1\r\nhost: {self.host}\r\ncontent-type: application/json\r\n"
            f"accept: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        t0 = time.perf_counter_ns()
        self.writer.write(head.encode() + body)
        rec: dict[str, Any] = {"submit_ns": t0, "chunk_us": [], "ok": False, "tokens": 0}
        status = (await self.reader.readuntil(b"\r\n\r\n")).split(b" ", 2)[1]
        buf = b""
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            data = await self.reader.readexactly(size + 2)
            t = (time.perf_counter_ns() - t0) // 1000
            if size == 0:
                break
            buf += data[:-2]
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                self._event(event, t, rec)
        rec["ok"] = status == b"200" and bool(rec["chunk_us"])
        rec["ttft_us"] = rec["chunk_us"][0] if rec["chunk_us"] else None
        return rec

    @staticmethod
    def _event(event: bytes, t_us: int, rec: dict[str, Any]) -> None:
        data = b"".join(ln[5:].strip() for ln in event.split(b"\n") if ln.startswith(b"data:"))
        if not data or data == b"[DONE]":
            return
        msg = json.loads(data)
        rec.setdefault("id", msg.get("id"))
        if msg.get("usage"):
            rec["tokens"] = msg["usage"].get("completion_tokens", 0)
        for choice in msg.get("choices") or []:
            if (choice.get("text") or "").strip():
                rec["chunk_us"].append(t_us)


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    url = urllib.parse.urlsplit(args.url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    path = url.path.rstrip("/") + "/v1/completions"
    fields: dict[str, Any] = {
        "model": args.model,
        "prompt": "hello " * 8,
        "max_tokens": args.max_tokens,
        "stream": True,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    if getattr(args, "script", None):
        fields["script"] = json.loads(args.script)
    body = json.dumps(fields).encode()
    out: list[dict[str, Any]] = []
    idle: list[Conn] = []

    async def one() -> None:
        conn = idle.pop() if idle else Conn(host, port)
        try:
            out.append(await conn.request(path, body))
            idle.append(conn)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            out.append({"ok": False, "error": repr(exc)})

    if args.rate:
        start = time.perf_counter()
        tasks = []
        for i in range(args.n):
            delay = start + i / args.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    else:
        left = [args.n]

        async def worker() -> None:
            while left[0] > 0:
                left[0] -= 1
                await one()

        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("url")
    ap.add_argument("model")
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--rate", type=float, default=0.0)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--script", default="", help="a scripted-server script object (JSON)")
    args = ap.parse_args()
    recs = asyncio.run(main_async(args))
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in recs))


if __name__ == "__main__":
    main()
