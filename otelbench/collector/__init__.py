"""The embedded collector: an OTLP/HTTP receiver (protobuf and JSON) writing into the span store.

``otlp`` decodes export requests into store rows (pure); ``receiver`` serves OTLP/HTTP and commits
every accepted batch before answering; ``python -m otelbench.collector`` runs it standalone.

Example::

    from otelbench.collector import Receiver

    with Receiver("run.duckdb", port=0) as receiver:
        print(f"export to http://127.0.0.1:{receiver.port}/v1/traces")
"""

from __future__ import annotations

from otelbench.collector.otlp import (
    Encoding,
    MalformedPayload,
    OTLPDecodeError,
    PayloadTooLarge,
    Signal,
    UnsupportedMediaType,
)
from otelbench.collector.receiver import Receiver, ReceiverStats, serve

__all__ = [
    "Encoding",
    "MalformedPayload",
    "OTLPDecodeError",
    "PayloadTooLarge",
    "Receiver",
    "ReceiverStats",
    "Signal",
    "UnsupportedMediaType",
    "serve",
]
