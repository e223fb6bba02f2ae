"""A spooling OTLP/HTTP span exporter: a batch the collector cannot take now is kept on disk.

Used by the load generator's telemetry (:mod:`otelbench.telemetry`) and by the vLLM engine hooks
(``otelbench_vllm.export``, when ``OTELBENCH_SPOOL_DIR`` is set), so it imports the standard
library and the OpenTelemetry SDK and OTLP proto encoder only — what the vLLM environment has.

**Flow.** :meth:`SpoolingSpanExporter.export` runs in the batch span processor's thread (never on
the request path: the engine and the load generator only append a finished span to the processor's
queue). It encodes the batch once into the ``ExportTraceServiceRequest`` protobuf bytes
(:func:`encode_batch`: the SDK encoder's bytes, written directly, ~4.5x faster for the load
generator's spans with their per-chunk arrays) and POSTs them to the collector, one attempt (gzip
or deflate when ``compression``, or ``OTEL_EXPORTER_OTLP_COMPRESSION``, asks: each attempt
compresses the same bytes). When that fails in a way worth retrying (connection refused or reset,
timeout, HTTP 429 or 5xx) the same bytes are appended to the spool and the batch counts as spooled.
While the spool holds anything, new batches go straight to the spool (one order, oldest first, and
no per-batch timeout against a collector known to be down). A replay thread sends the spool's
records oldest first, backing off from :data:`RETRY_INITIAL_S` to :data:`RETRY_MAX_S` while the
collector does not answer; a record is acknowledged by a 2xx answer (the embedded receiver answers
200 only after the batch is committed to the store). Any other 4xx means the collector will never
take that batch: its spans are counted as rejected and it is not retried. Both threads are the
exporter's own; nothing else touches disk.

This replaces the OTLP exporter's own retry loop rather than sitting behind it: the SDK exporter's
public API takes spans, never bytes, and a replayed record is bytes; one sender for both paths
means one retry policy (the spool) and no thread blocked in back-off while batches queue up.

**On disk** (``spool_dir``, one process at a time: an ``flock`` on ``spool_dir/lock``)::

    segment-0000000000000001.otlp   records, appended; sealed at SEGMENT_BYTES or when replay
    segment-0000000000000001.ack    reaches it; deleted once every record in it is acknowledged
    segment-0000000000000002.otlp   the byte offset up to which the segment is acknowledged

A record is a 16-byte header — magic ``b"OBSP"``, payload length, span count, CRC-32 of the span
count and payload (little-endian ``u32`` each) — then the payload, the protobuf request bytes. A
record whose header or payload is cut short, or whose CRC does not match, is a torn write from a
crashed process: it and whatever follows it in that segment are never replayed, and it is counted
(``records_torn``).

**Durability (fsync policy).** Each record is written with one ``write(2)`` to a file opened
``O_APPEND``, so it survives the process being killed the moment ``export`` returns. The segment is
``fsync``-ed when it is sealed and at shutdown; with ``fsync_each_record=True`` every record is
``fsync``-ed before ``export`` returns, which also survives the machine losing power (a few ms per
batch on ordinary disks; ``bench/spool_cost.py`` measures both). The ``.ack`` offset is written to a
temporary file and renamed, after the collector's 2xx; a crash between the two replays that one
record again (at-least-once delivery; the store keeps both copies of a span delivered twice).

**Bound.** The spool's files never exceed ``max_bytes`` (default :data:`DEFAULT_MAX_BYTES`). A batch
that does not fit is dropped whole, and its span count is added to ``spans_dropped`` — the exact
number of spans lost, reported by the load generator's run and on vLLM's ``/metrics``
(``otelbench_hook_spans_dropped_total``). A spool left by a crashed process is replayed by the next
exporter that opens the same directory.

Example::

    stats = SpoolStats()
    exporter = SpoolingSpanExporter(
        "http://127.0.0.1:4318/v1/traces", Path("out/spool"), stats=stats
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    ...
    provider.shutdown()        # what could not be sent stays in out/spool for the next start
    stats.as_dict()            # {"spans_sent": ..., "spans_spooled": ..., "spans_dropped": ...}
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import http.client
import logging
import os
import re
import ssl
import struct
import threading
import time
import urllib.parse
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, TypedDict

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status
from opentelemetry.util.re import parse_env_headers

__all__ = [
    "COUNTERS",
    "DEFAULT_MAX_BYTES",
    "RECORD_HEADER",
    "RETRY_INITIAL_S",
    "RETRY_MAX_S",
    "SEGMENT_BYTES",
    "ExportSettings",
    "FastSpanExporter",
    "Spool",
    "SpoolBusyError",
    "SpoolRecord",
    "SpoolStats",
    "SpoolingSpanExporter",
    "StatsSink",
    "encode_batch",
    "settings_from_env",
]

_log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES: Final = 256 * 2**20
"""Default bound of a spool directory's files: 256 MiB, about 200,000 client spans of 200 chunks
each (1.3 KB a span encoded; ``bench/spool_cost.py``)."""
SEGMENT_BYTES: Final = 8 * 2**20
"""A segment is sealed (and a new one begun) once it holds this many bytes."""
RETRY_INITIAL_S: Final = 0.25
"""The replay thread's first back-off after a failed send; doubled per failure."""
RETRY_MAX_S: Final = 2.0
"""The longest back-off: the collector's return is noticed within this many seconds."""

RECORD_HEADER: Final = struct.Struct("<4sIII")
"""magic, payload length, span count, CRC-32 of (span count, payload)."""
_MAGIC: Final = b"OBSP"
_SEGMENT_GLOB: Final = "segment-*.otlp"
_SEGMENT_NAME: Final = re.compile(r"segment-[0-9]{16}\.otlp")
_CONTENT_TYPE: Final = "application/x-protobuf"
COMPRESSIONS: Final = ("none", "gzip", "deflate")
"""The request body encodings the exporter sends, as the SDK's OTLP/HTTP exporter names them
(``OTEL_EXPORTER_OTLP_COMPRESSION``)."""
COMPRESS_LEVEL: Final = 1
"""zlib level of gzip and deflate. Measured here on a batch of 512 hook spans of 100 token
offsets (389 KB of protobuf): level 1 takes 5 ms and leaves 213 KB, level 6 31 ms and 202 KB,
level 9 (the SDK exporter's gzip) 320 ms and 202 KB. The exporter shares the engine's process
and CPU, so the fastest level."""

COUNTERS: Final = (
    "spans_sent",
    "spans_spooled",
    "spans_replayed",
    "spans_dropped",
    "spans_rejected",
    "records_torn",
)


class SpoolBusyError(RuntimeError):
    """Another process holds the spool directory."""


class StatsSink(Protocol):
    """Where the exporter counts (:class:`SpoolStats`, or the engine hooks' ``HookStats``)."""

    def add(self, name: str, n: int = 1) -> None: ...


class SpoolStats:
    """The exporter's counters (names in :data:`COUNTERS`); thread-safe.

    ``spans_sent`` went to the collector at the first attempt; ``spans_spooled`` were written to
    the spool, and ``spans_replayed`` sent from it later; ``spans_dropped`` found the spool full;
    ``spans_rejected`` were refused by the collector (4xx other than 429); ``records_torn``
    counts records of a crashed process's spool that could not be read back.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(COUNTERS, 0)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


@dataclass(frozen=True)
class SpoolRecord:
    """One spooled batch as read back: where it ends in its segment, its spans and bytes."""

    segment: Path
    end: int
    spans: int
    payload: bytes


def _crc(spans: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(struct.pack("<I", spans)))


def _frame(payload: bytes, spans: int) -> bytes:
    return RECORD_HEADER.pack(_MAGIC, len(payload), spans, _crc(spans, payload)) + payload


def _read_record(segment: Path, offset: int) -> SpoolRecord | None:
    """The record at ``offset``; None when it is torn or corrupt (or the segment ends there)."""
    with segment.open("rb") as f:
        f.seek(offset)
        header = f.read(RECORD_HEADER.size)
        if len(header) < RECORD_HEADER.size:
            return None
        magic, length, spans, crc = RECORD_HEADER.unpack(header)
        if magic != _MAGIC:
            return None
        payload = f.read(length)
    if len(payload) < length or _crc(spans, payload) != crc:
        return None
    return SpoolRecord(segment, offset + RECORD_HEADER.size + length, spans, payload)


def _ack_path(segment: Path) -> Path:
    return segment.with_suffix(".ack")


def _read_ack(segment: Path) -> int:
    try:
        return int(_ack_path(segment).read_text())
    except (OSError, ValueError):
        return 0


class Spool:
    """The bounded on-disk queue of serialized batches (see the module docstring for the format).

    ``append`` is called by the exporting thread, ``next_record``/``ack`` by the replay thread;
    one lock guards the segment list, the active segment and the byte count.

    Example::

        spool = Spool(Path("spool"), max_bytes=2**20)
        spool.append(payload, spans=12)               # False: full, nothing written
        record = spool.next_record()                  # oldest first
        spool.ack(record)                             # after the collector's 2xx
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        segment_bytes: int = SEGMENT_BYTES,
        fsync_each_record: bool = False,
        stats: StatsSink | None = None,
    ) -> None:
        if max_bytes <= RECORD_HEADER.size:
            raise ValueError(f"spool bound must exceed {RECORD_HEADER.size} bytes, got {max_bytes}")
        self.directory = directory
        self.max_bytes = max_bytes
        self._segment_bytes = segment_bytes
        self._fsync = fsync_each_record
        self._stats = stats if stats is not None else SpoolStats()
        self._lock = threading.Lock()
        directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_fd)
            raise SpoolBusyError(
                f"spool directory {directory} is in use by another process"
            ) from None
        self._sealed = sorted(
            p for p in directory.glob(_SEGMENT_GLOB) if _SEGMENT_NAME.match(p.name)
        )
        self._bytes = sum(p.stat().st_size for p in self._sealed)
        self._next_seq = 1 + max((int(p.stem.split("-")[1]) for p in self._sealed), default=0)
        self._active: Path | None = None
        self._active_fd = -1
        self._active_size = 0
        self._read_offset = {p: _read_ack(p) for p in self._sealed}

    @property
    def size_bytes(self) -> int:
        """Bytes of the spool's segment files now."""
        with self._lock:
            return self._bytes

    def is_empty(self) -> bool:
        with self._lock:
            return not self._sealed and self._active_size == 0

    def append(self, payload: bytes, spans: int) -> bool:
        """Write one batch; False (nothing written) when it would take the spool over its bound."""
        record = _frame(payload, spans)
        with self._lock:
            if self._bytes + len(record) > self.max_bytes:
                return False
            if self._active is None or self._active_size >= self._segment_bytes:
                self._seal()
                self._open_segment()
            written = os.write(self._active_fd, record)
            if self._fsync:
                os.fsync(self._active_fd)
            self._active_size += written
            self._bytes += written
        return True

    def next_record(self) -> SpoolRecord | None:
        """The oldest unacknowledged record, or None when the spool is empty.

        Reaching the active segment seals it, so that the exporting thread writes on into a new
        one. A torn or corrupt record ends its segment: it is counted in ``records_torn`` and the
        segment is deleted with what was acknowledged before it.
        """
        with self._lock:
            while True:
                if not self._sealed and self._active_size > 0:
                    self._seal()
                if not self._sealed:
                    return None
                segment = self._sealed[0]
                offset = self._read_offset.get(segment, 0)
                if offset < segment.stat().st_size:
                    record = _read_record(segment, offset)
                    if record is not None:
                        return record
                    self._stats.add("records_torn")
                    _log.warning(
                        "spool: torn record at byte %d of %s; not replayed", offset, segment
                    )
                self._delete(segment)

    def ack(self, record: SpoolRecord) -> None:
        """The collector took ``record``: remember it (a segment fully acknowledged is deleted)."""
        with self._lock:
            segment = record.segment
            if not self._sealed or self._sealed[0] != segment:
                return
            self._read_offset[segment] = record.end
            if record.end >= segment.stat().st_size:
                self._delete(segment)
                return
            tmp = _ack_path(segment).with_suffix(".ack.tmp")
            tmp.write_text(str(record.end))
            tmp.replace(_ack_path(segment))

    def close(self) -> None:
        """Seal the active segment (fsync) and release the directory (removed when empty)."""
        with self._lock:
            self._seal()
            if self._lock_fd < 0:
                return
            if not self._sealed:
                (self.directory / "lock").unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    self.directory.rmdir()
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _open_segment(self) -> None:
        self._active = self.directory / f"segment-{self._next_seq:016d}.otlp"
        self._next_seq += 1
        self._active_fd = os.open(self._active, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._active_size = 0

    def _seal(self) -> None:
        if self._active is None:
            return
        os.fsync(self._active_fd)
        os.close(self._active_fd)
        if self._active_size > 0:
            self._sealed.append(self._active)
        else:
            self._active.unlink(missing_ok=True)
        self._active, self._active_fd, self._active_size = None, -1, 0

    def _delete(self, segment: Path) -> None:
        self._bytes -= segment.stat().st_size
        segment.unlink()
        _ack_path(segment).unlink(missing_ok=True)
        self._sealed.pop(0)
        self._read_offset.pop(segment, None)


class _Sender:
    """POSTs protobuf bytes over one kept-alive HTTP connection (one per thread)."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        timeout_s: float,
        cafile: str | None = None,
        compression: str = "none",
    ) -> None:
        if compression not in COMPRESSIONS:
            raise ValueError(
                f"OTLP compression must be one of {', '.join(COMPRESSIONS)}, got {compression!r}"
            )
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"OTLP traces endpoint must be an http(s) URL, got {url!r}")
        self._https = parts.scheme == "https"
        self._tls = ssl.create_default_context(cafile=cafile) if self._https else None
        self._host = parts.hostname
        self._port = parts.port
        self._path = parts.path or "/"
        self._headers = {"Content-Type": _CONTENT_TYPE, **headers}
        self._compression = compression
        if compression != "none":
            self._headers["Content-Encoding"] = compression
        self._timeout = timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def send(self, payload: bytes) -> int | None:
        """The HTTP status, or None when the collector could not be reached (or timed out).
        ``payload`` is the protobuf request as spooled; it is compressed here, per attempt (a
        spool holds it uncompressed, so a record outlives a change of setting)."""
        if self._compression == "gzip":
            payload = gzip.compress(payload, compresslevel=COMPRESS_LEVEL, mtime=0)
        elif self._compression == "deflate":
            payload = zlib.compress(payload, COMPRESS_LEVEL)
        try:
            if self._conn is None:
                if self._tls is not None:
                    self._conn = http.client.HTTPSConnection(
                        self._host, self._port, timeout=self._timeout, context=self._tls
                    )
                else:
                    self._conn = http.client.HTTPConnection(
                        self._host, self._port, timeout=self._timeout
                    )
            self._conn.request("POST", self._path, body=payload, headers=self._headers)
            response = self._conn.getresponse()
            response.read()
            if response.will_close:
                self.close()
            return response.status
        except (OSError, http.client.HTTPException):
            self.close()
            return None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _env(*keys: str) -> str | None:
    """The first of ``keys`` set to a non-empty value in the environment."""
    for key in keys:
        value = os.environ.get(key)
        if value:
            return value
    return None


def _retryable(status: int | None) -> bool:
    return status is None or status == 429 or status >= 500


# -- the batch's protobuf bytes --------------------------------------------------------------------
# ``ExportTraceServiceRequest`` written straight to bytes, the same bytes as the SDK's
# ``encode_spans(spans).SerializePartialToString()`` (fields in field-number order, proto3 defaults
# left out, as upb serializes them). The SDK's encoder builds a protobuf message object per value:
# for a client span's per-chunk arrays, one ``AnyValue`` per element, ~1 µs each, and hashes the
# span's resource (a JSON dump of its attributes) once per span. Anything this encoder does not
# take as it is (a value of another type, an integer outside int64, a string that is not UTF-8)
# sends the whole batch through the SDK's encoder, which then decides its fate as before.


class _Unencodable(Exception):
    """A value left to the SDK's encoder."""


_BYTE: Final = [bytes((i,)) for i in range(256)]
_MORE: Final = [bytes((i | 0x80,)) for i in range(128)]
"""The low 7 bits of a varint byte that has more bytes after it."""
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_FIXED64: Final = struct.Struct("<Q")
_FIXED32: Final = struct.Struct("<I")
_DOUBLE: Final = struct.Struct("<d")


def _varint(v: int) -> bytes:
    """The base-128 varint of an unsigned 64-bit value (a negative int64 as two's complement)."""
    if v < 0x4000:
        if v < 0:
            v += 1 << 64
        elif v < 0x80:
            return _BYTE[v]
        else:
            return _MORE[v & 0x7F] + _BYTE[v >> 7]
    if v < 0x200000:
        return _MORE[v & 0x7F] + _MORE[(v >> 7) & 0x7F] + _BYTE[v >> 14]
    if v < 0x10000000:
        return _MORE[v & 0x7F] + _MORE[(v >> 7) & 0x7F] + _MORE[(v >> 14) & 0x7F] + _BYTE[v >> 21]
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return tag + _varint(len(payload)) + payload


_INT_ELEMENT: Final = [b"\x0a\x02\x18" + _BYTE[i] for i in range(128)]
"""``ArrayValue.values`` entries ``AnyValue{int_value: i}`` for 0 <= i < 128, ready."""
_INT_ELEMENT_HEAD: Final = [b"\x0a" + _BYTE[n + 1] + b"\x18" for n in range(11)]
"""The head of an ``ArrayValue.values`` entry ``AnyValue{int_value}`` of an n-byte varint."""


def _element(value: object) -> bytes:
    """One ``ArrayValue.values`` entry; a non-negative int below 2**28 (a µs offset of up to
    268 s) without the general path."""
    if type(value) is int and 0 <= value < 0x10000000:
        v = _varint(value)
        return _INT_ELEMENT_HEAD[len(v)] + v
    return _field(b"\x0a", _any_value(value))


def _int_value(v: int) -> bytes:
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise _Unencodable
    return b"\x18" + _varint(v)


def _any_value(value: object) -> bytes:
    """The ``AnyValue`` message body of an attribute value (the SDK's ``_encode_value``)."""
    if type(value) is int:
        return _int_value(value)
    if type(value) is str:
        return _field(b"\x0a", value.encode())
    if type(value) is tuple or type(value) is list:
        return _field(b"\x2a", _array_value(value))
    if type(value) is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if type(value) is float:
        return b"\x21" + _DOUBLE.pack(value)
    if value is None:
        return b""
    if type(value) is bytes:
        return _field(b"\x3a", value)
    raise _Unencodable  # a subclass, a mapping: the SDK's encoder


def _array_value(values: Sequence[object]) -> bytes:
    """An ``ArrayValue`` body; an element that is a small int is one table lookup."""
    return b"".join(
        [_INT_ELEMENT[v] if type(v) is int and 0 <= v < 0x80 else _element(v) for v in values]
    )


_KEY_HEADS: dict[str, bytes] = {}
"""``KeyValue`` bytes up to its value's length, per attribute key seen (at most
:data:`_KEY_HEADS_MAX`): ``key`` field, then the ``value`` tag."""
_KEY_HEADS_MAX: Final = 4096


def _key_head(key: str) -> bytes:
    head = _KEY_HEADS.get(key)
    if head is None:
        head = (_field(b"\x0a", key.encode()) if key else b"") + b"\x12"
        if len(_KEY_HEADS) < _KEY_HEADS_MAX:
            _KEY_HEADS[key] = head
    return head


def _attributes(tag: bytes, attributes: Mapping[str, object] | None) -> list[bytes]:
    """One ``KeyValue`` field per attribute."""
    if not attributes:
        return []
    copy = getattr(attributes, "copy", None)  # a plain dict's items, not the Mapping protocol's
    pairs = (copy() if copy is not None else attributes).items()
    out = []
    for key, value in pairs:
        v = _any_value(value)
        n = len(v)
        kv = _key_head(key) + (_BYTE[n] if n < 0x80 else _varint(n)) + v
        n = len(kv)
        out.append(tag + (_BYTE[n] if n < 0x80 else _varint(n)) + kv)
    return out


def _flags(parent: SpanContext | None) -> int:
    """``Span.flags``/``Link.flags``: the context-has-is-remote bit, and is-remote when set."""
    return 0x300 if parent and parent.is_remote else 0x100


_SPAN_KIND: Final = {kind: _BYTE[kind.value + 1] for kind in SpanKind}
"""``Span.kind`` as the proto numbers it: the API's value + 1."""


def _span(span: ReadableSpan) -> bytes:
    """One ``Span`` field of ``ScopeSpans`` (the SDK's ``_encode_span``)."""
    ctx = span.get_span_context()
    if ctx is None:
        raise _Unencodable
    parts = [
        b"\x0a\x10" + ctx.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + ctx.span_id.to_bytes(8, "big"),
    ]
    if ctx.trace_state:
        state = ",".join([f"{k}={v}" for k, v in ctx.trace_state.items()])
        parts.append(_field(b"\x1a", state.encode()))
    parent = span.parent
    if parent:
        parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
    if span.name:
        parts.append(_field(b"\x2a", span.name.encode()))
    parts.append(b"\x30" + _SPAN_KIND[span.kind])
    if span.start_time:
        parts.append(b"\x39" + _FIXED64.pack(span.start_time))
    if span.end_time:
        parts.append(b"\x41" + _FIXED64.pack(span.end_time))
    parts += _attributes(b"\x4a", span.attributes)
    if span.dropped_attributes:
        parts.append(b"\x50" + _varint(span.dropped_attributes))
    for event in span.events:
        parts.append(_field(b"\x5a", _event(event)))
    if span.dropped_events:
        parts.append(b"\x60" + _varint(span.dropped_events))
    for link in span.links:
        parts.append(_field(b"\x6a", _link(link)))
    if span.dropped_links:
        parts.append(b"\x70" + _varint(span.dropped_links))
    parts.append(_field(b"\x7a", _status(span.status)))
    parts.append(b"\x85\x01" + _FIXED32.pack(_flags(parent)))
    return _field(b"\x12", b"".join(parts))


def _event(event: Event) -> bytes:
    parts = [b"\x09" + _FIXED64.pack(event.timestamp)] if event.timestamp else []
    if event.name:
        parts.append(_field(b"\x12", event.name.encode()))
    parts += _attributes(b"\x1a", event.attributes)
    if event.dropped_attributes:
        parts.append(b"\x20" + _varint(event.dropped_attributes))
    return b"".join(parts)


def _link(link: Link) -> bytes:
    parts = [
        b"\x0a\x10" + link.context.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + link.context.span_id.to_bytes(8, "big"),
        *_attributes(b"\x22", link.attributes),
    ]
    if link.dropped_attributes:
        parts.append(b"\x28" + _varint(link.dropped_attributes))
    parts.append(b"\x35" + _FIXED32.pack(_flags(link.context)))
    return b"".join(parts)


def _status(status: Status) -> bytes:
    message = _field(b"\x12", status.description.encode()) if status.description else b""
    code = status.status_code.value
    return message + (b"\x18" + _varint(code) if code else b"")


def _scope(scope: InstrumentationScope | None) -> bytes:
    if scope is None:
        return b""
    parts = [_field(b"\x0a", scope.name.encode())] if scope.name else []
    if scope.version:
        parts.append(_field(b"\x12", scope.version.encode()))
    parts += _attributes(b"\x1a", scope.attributes)
    return b"".join(parts)


def encode_batch(spans: Sequence[ReadableSpan]) -> bytes:
    """The ``ExportTraceServiceRequest`` protobuf bytes of ``spans``, equal to
    ``encode_spans(spans).SerializePartialToString()`` (see the section comment above).

    Spans are grouped by resource, then by instrumentation scope, in order of first appearance,
    as the SDK groups them (equal resources or scopes are one group); each distinct resource
    object is hashed once per batch.
    """
    try:
        return _request(spans)
    except Exception:  # noqa: BLE001 - whatever this encoder does not take, the SDK's encodes
        return encode_spans(spans).SerializePartialToString()


def _request(spans: Sequence[ReadableSpan]) -> bytes:
    groups: dict[Resource, dict[InstrumentationScope | None, list[bytes]]] = {}
    canonical: dict[int, dict[InstrumentationScope | None, list[bytes]]] = {}
    for span in spans:
        resource = span.resource
        group = canonical.get(id(resource))
        if group is None:  # hashed once per resource object, not per span
            group = canonical[id(resource)] = groups.setdefault(resource, {})
        group.setdefault(span.instrumentation_scope or None, []).append(_span(span))
    out = []
    for resource, scopes in groups.items():
        body = [_field(b"\x0a", b"".join(_attributes(b"\x0a", resource.attributes)))]
        for scope, encoded in scopes.items():
            scope_spans = [_field(b"\x0a", _scope(scope)), *encoded]
            if scope is not None and scope.schema_url:
                scope_spans.append(_field(b"\x1a", scope.schema_url.encode()))
            body.append(_field(b"\x12", b"".join(scope_spans)))
        if resource.schema_url:
            body.append(_field(b"\x1a", resource.schema_url.encode()))
        out.append(_field(b"\x0a", b"".join(body)))
    return b"".join(out)


class ExportSettings(TypedDict):
    """The sending settings of an OTLP/HTTP span exporter (:func:`settings_from_env`), keyword
    arguments of :class:`SpoolingSpanExporter` and :class:`FastSpanExporter`."""

    headers: Mapping[str, str]
    timeout_s: float
    certificate_file: str | None
    compression: str


def settings_from_env() -> ExportSettings:
    """The sending settings the standard variables give the SDK's OTLP/HTTP exporter, as keyword
    arguments of :class:`SpoolingSpanExporter` and :class:`FastSpanExporter`: headers
    (``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, else ``OTEL_EXPORTER_OTLP_HEADERS`` — a receiver's
    bearer token), timeout (``…_TIMEOUT``, seconds), trust root (``…_CERTIFICATE``) and body
    encoding (``…_COMPRESSION``: :data:`COMPRESSIONS`; another value raises ``ValueError`` when
    the exporter is made)."""
    headers = parse_env_headers(
        _env("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS") or "",
        liberal=True,
    )
    return {
        "headers": headers,
        "timeout_s": float(
            _env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT") or 10
        ),
        "certificate_file": _env(
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"
        ),
        "compression": (
            _env("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")
            or "none"
        )
        .strip()
        .lower(),
    }


class FastSpanExporter(SpanExporter):
    """OTLP/HTTP protobuf span exporter without a spool: the batch encoded by
    :func:`encode_batch` (the SDK encoder's bytes, ~4x less CPU), one kept-alive connection, up
    to ``attempts`` tries while the collector's answer is worth retrying (connection refused or
    reset, timeout, HTTP 429 or 5xx), backing off from :data:`RETRY_INITIAL_S`. ``export``
    returns SUCCESS on a 2xx and FAILURE otherwise; it never raises. For a sender that has
    nowhere to keep what the collector cannot take now (the engine hooks without
    ``OTELBENCH_SPOOL_DIR``); :class:`SpoolingSpanExporter` keeps it."""

    def __init__(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        certificate_file: str | None = None,
        compression: str = "none",
        attempts: int = 3,
    ) -> None:
        self._sender = _Sender(endpoint, headers or {}, timeout_s, certificate_file, compression)
        self._attempts = attempts
        self._stop = threading.Event()

    @classmethod
    def from_env(cls, endpoint: str) -> FastSpanExporter:
        """One configured by the standard variables (:func:`settings_from_env`)."""
        return cls(endpoint, **settings_from_env())

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            payload = encode_batch(spans)
        except Exception:  # noqa: BLE001 - a span the encoder refuses is a failed export
            _log.exception("otlp: could not encode a batch of %d spans", len(spans))
            return SpanExportResult.FAILURE
        backoff = RETRY_INITIAL_S
        for attempt in range(self._attempts):
            status = self._sender.send(payload)
            if status is not None and 200 <= status < 300:
                return SpanExportResult.SUCCESS
            if not _retryable(status) or attempt + 1 == self._attempts or self._stop.is_set():
                _log.warning("otlp: %d spans not exported (HTTP %s)", len(spans), status)
                return SpanExportResult.FAILURE
            self._stop.wait(backoff)
            backoff = min(backoff * 2, RETRY_MAX_S)
        return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is held here: every batch is sent (or failed) within ``export``."""
        return True

    def shutdown(self) -> None:
        self._stop.set()
        self._sender.close()


class SpoolingSpanExporter(SpanExporter):
    """OTLP/HTTP protobuf span exporter with an on-disk spool (see the module docstring).

    ``export`` returns SUCCESS when the batch was delivered or spooled, FAILURE when it was
    dropped (spool full) or rejected; it never raises. Counters go to ``stats``.
    """

    def __init__(
        self,
        endpoint: str,
        spool_dir: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        certificate_file: str | None = None,
        compression: str = "none",
        fsync_each_record: bool = False,
        stats: StatsSink | None = None,
    ) -> None:
        self.stats: StatsSink = stats if stats is not None else SpoolStats()
        sender = (endpoint, headers or {}, timeout_s, certificate_file, compression)
        self._live = _Sender(*sender)
        self._replay = _Sender(*sender)
        self.spool = Spool(
            spool_dir, max_bytes=max_bytes, fsync_each_record=fsync_each_record, stats=self.stats
        )
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._replay_loop, name="otelbench-spool-replay", daemon=True
        )
        self._thread.start()

    @classmethod
    def from_env(
        cls,
        endpoint: str,
        spool_dir: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        stats: StatsSink | None = None,
    ) -> SpoolingSpanExporter:
        """One configured as the SDK's OTLP exporter would be by the standard variables
        (:func:`settings_from_env`); the endpoint is the caller's."""
        return cls(endpoint, spool_dir, max_bytes=max_bytes, stats=stats, **settings_from_env())

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            payload = encode_batch(spans)
        except Exception:  # noqa: BLE001 - a span the encoder refuses is counted, never raised
            _log.exception("spool: could not encode a batch of %d spans", len(spans))
            self.stats.add("spans_rejected", len(spans))
            return SpanExportResult.FAILURE
        if self.spool.is_empty():
            status = self._live.send(payload)
            if status is not None and 200 <= status < 300:
                self.stats.add("spans_sent", len(spans))
                return SpanExportResult.SUCCESS
            if not _retryable(status):
                _log.warning("spool: collector refused %d spans (HTTP %s)", len(spans), status)
                self.stats.add("spans_rejected", len(spans))
                return SpanExportResult.FAILURE
        return self._spool(payload, len(spans))

    def _spool(self, payload: bytes, spans: int) -> SpanExportResult:
        try:
            stored = self.spool.append(payload, spans)
        except OSError as exc:
            _log.warning(
                "spool: cannot write to %s (%s); %d spans dropped", self.spool.directory, exc, spans
            )
            stored = False
        if not stored:
            self.stats.add("spans_dropped", spans)
            return SpanExportResult.FAILURE
        self.stats.add("spans_spooled", spans)
        self._wake.set()
        return SpanExportResult.SUCCESS

    def _replay_loop(self) -> None:
        backoff = RETRY_INITIAL_S
        while not self._stop.is_set():
            try:
                record = self.spool.next_record()
            except OSError as exc:
                _log.warning("spool: cannot read %s (%s)", self.spool.directory, exc)
                record = None
            if record is None:
                self._wake.wait(RETRY_MAX_S)
                self._wake.clear()
                continue
            status = self._replay.send(record.payload)
            if _retryable(status):
                self._stop.wait(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            backoff = RETRY_INITIAL_S
            with contextlib.suppress(OSError):
                self.spool.ack(record)
            assert status is not None
            if 200 <= status < 300:
                self.stats.add("spans_replayed", record.spans)
            else:
                _log.warning(
                    "spool: collector refused %d spooled spans (HTTP %d)", record.spans, status
                )
                self.stats.add("spans_rejected", record.spans)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until the spool is empty (the collector took everything); False at the timeout."""
        deadline = time.monotonic() + timeout_millis / 1000
        self._wake.set()
        while not self.spool.is_empty():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(0.05, remaining))
        return True

    def shutdown(self) -> None:
        """Stop the replay thread and close the spool; what it holds stays for the next start."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)
        self._live.close()
        self._replay.close()
        self.spool.close()
