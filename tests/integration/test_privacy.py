"""Private by default: no prompt or completion text reaches the span store.

Real parts: the scripted server streams known words (`` w0_0 w1_0 …``), the instrumented client
sends prompts and chat messages holding a marker, every span goes through the embedded receiver
into a DuckDB store; then every value of every row (attributes, resource attributes, events,
status messages) is searched for the marker and the streamed words.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import pytest

from otelbench import semconv, telemetry
from otelbench.client import AsyncLLMClient, CompletionRequest
from otelbench.collector import Receiver
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

MARKER = "SECRET-MARKER-4821"
SCRIPT = {"name": "fixed", "ttft_ms": 2.0, "itl_ms": 1.0, "n": 6}


def test_no_prompt_or_completion_text_is_stored(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    store = tmp_path / "spans.duckdb"
    with Receiver(store, port=0) as receiver:
        provider = telemetry.make_tracer_provider(f"http://127.0.0.1:{receiver.port}")

        async def run() -> None:
            async with AsyncLLMClient(scripted_server.url, tracer_provider=provider) as client:
                for api in ("completions", "chat"):
                    result = await client.complete(
                        CompletionRequest(
                            api=api,  # type: ignore[arg-type]
                            model="m",
                            prompt=f"{MARKER} completions" if api == "completions" else None,
                            messages=[{"role": "user", "content": f"{MARKER} chat"}]
                            if api == "chat"
                            else None,
                            max_tokens=6,
                            extra_body={"script": SCRIPT},
                        )
                    )
                    assert result.ok, result.error_type
                    assert result.output_tokens == 6

        asyncio.run(run())
        telemetry.shutdown(provider)
        assert receiver.stats().spans_accepted >= 2
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(f"SELECT * FROM {semconv.TABLE_TRACES}").fetchall()
    assert len(rows) >= 2
    text = "\n".join(repr(row) for row in rows)
    assert MARKER not in text
    assert " w0_0" not in text  # the first streamed word
    assert "w5_0" not in text
