"""One load-generating process's part of a run: its requests, how it sends them, how it keeps time.

A run's measured load is split into :class:`Share` s, one per worker process
(:mod:`otelbench.loadgen.workers`; one share, in the calling process, with one worker), by
:func:`split_load`:

* open loop (draft 4.2.3, 4.2.5): request *i* goes to worker *i* mod N with its send offset
  from the seeded schedule, so the request sequence and every send time are the same whatever N;
  every worker counts the offsets from the same ``t0`` on CLOCK_MONOTONIC (system-wide on Linux:
  the same clock in every process);
* closed loop (draft 4.2.4): the C streams are numbered; stream *s* belongs to worker *s* mod N,
  and request *i* to the worker of stream *i* mod C, so each worker gets requests in proportion to
  its streams and keeps them in flight until its share is sent.

:func:`measure_share` runs a share on the calling event loop: the open-loop scheduler wakes at
each send time (:class:`otelbench.loadgen.deadline.DeadlineTimer`) and starts the request as its
own task, never waiting for a response; the closed loop keeps its streams busy.
:class:`Sender` sends one request through the instrumented client, with the run's span
attributes (``otelbench.loadgen.worker`` among them, and ``otelbench.loadgen.shard`` on a
run sent from several hosts), and hands its record to ``on_record``.

Clock domain: ``time.perf_counter_ns()`` (CLOCK_MONOTONIC, ns); offsets and lags in µs.

Example::

    shares = split_load(items, prompts, offsets_s, None, workers=2)
    sender = Sender(config, client, worker=0)
    with timing_process():
        await measure_share(sender, shares[0], t0=time.perf_counter_ns())
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from otelbench import semconv
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult
from otelbench.loadgen.deadline import DeadlineTimer
from otelbench.loadgen.workloads import WorkloadRequest
from otelbench.model.jsonvalue import JsonObject

__all__ = [
    "GIL_SWITCH_INTERVAL_S",
    "Prompt",
    "RequestRecord",
    "SendConfig",
    "Sender",
    "Share",
    "measure_share",
    "split_load",
    "steady_heap",
    "timing_process",
]

GIL_SWITCH_INTERVAL_S = 0.00025
MMAP_THRESHOLD_BYTES = 64 * 1024
""":func:`steady_heap`'s fixed glibc mmap threshold."""
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h

Prompt = str | list[int]


class SendConfig(Protocol):
    """What sending a run's requests needs of its configuration (``RunConfig`` has it)."""

    @property
    def run_id(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def api(self) -> Any: ...
    @property
    def extra_body(self) -> JsonObject: ...
    @property
    def ignore_eos(self) -> bool: ...
    @property
    def shard_index(self) -> int | None: ...
    @property
    def timeout_s(self) -> float: ...


@dataclass(frozen=True)
class RequestRecord:
    """One sent request as the runner saw it: which, in which phase, when, and its result."""

    index: int
    request_class: str
    phase: str
    scheduled_offset_us: int | None
    schedule_lag_us: int | None
    result: CompletionResult
    worker: int = 0


@dataclass(frozen=True)
class Share:
    """One worker's part of the measured load: its requests, their prompts as sent, and either
    their send offsets from ``t0`` (s; open loop) or its number of streams (closed loop)."""

    worker: int
    items: list[WorkloadRequest]
    prompts: list[Prompt]
    offsets_s: list[float] | None
    concurrency: int | None

    def __len__(self) -> int:
        return len(self.items)


def split_load(
    items: Sequence[WorkloadRequest],
    prompts: Sequence[Prompt],
    offsets_s: Sequence[float] | None,
    concurrency: int | None,
    workers: int,
) -> list[Share]:
    """Split a run's measured requests over ``workers`` processes (see the module docstring).

    >>> [len(s) for s in split_load(items, prompts, None, 3, workers=2)]  # doctest: +SKIP
    [67, 33]   # 100 requests, streams 0 and 2 on worker 0, stream 1 on worker 1
    """
    if offsets_s is None:
        assert concurrency is not None
        owner = [(i % concurrency) % workers for i in range(len(items))]
        streams = [len(range(w, concurrency, workers)) for w in range(workers)]
    else:
        owner = [i % workers for i in range(len(items))]
        streams = [0] * workers
    shares = []
    for w in range(workers):
        mine = [i for i, o in enumerate(owner) if o == w]
        shares.append(
            Share(
                worker=w,
                items=[items[i] for i in mine],
                prompts=[prompts[i] for i in mine],
                offsets_s=None if offsets_s is None else [float(offsets_s[i]) for i in mine],
                concurrency=streams[w] if offsets_s is None else None,
            )
        )
    return shares


@contextlib.contextmanager
def timing_process() -> Iterator[None]:
    """The process settings a load generator keeps time with, restored after.

    The span exporter's thread encodes protobuf while streams arrive; with CPython's default
    5 ms GIL switch interval it could hold the event loop off a chunk for that long. A 0.25 ms
    interval bounds that delay well under the draft's 1 ms resolution (4.2.1). A full garbage
    collection of a large heap takes tens of ms and stops every stream's timing; collect once
    now and freeze what exists, so only the run's own young objects are scanned.
    """
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        sys.setswitchinterval(switch_interval)
        gc.unfreeze()


def steady_heap() -> bool:
    """Give this process's buffers of :data:`MMAP_THRESHOLD_BYTES` or more their own mappings,
    always (glibc's ``mallopt(M_MMAP_THRESHOLD)``); False where the C library has no
    ``mallopt`` or refuses. For a process that sends load for a long time: called by the worker
    processes and by ``otelbench run`` and ``otelbench probe``.

    glibc raises its threshold to the size of every mapped buffer freed (up to 32 MiB), so after
    the first export the span exporter's encoded batches (hundreds of KB each), response bodies
    and numpy's temporaries come from the heap, between longer-lived objects, and the holes they
    leave grow the heap for the whole run: a load-generating process at 10 requests/s grew by
    24 MiB/h, nearly all of it free heap (``mallinfo2``), its Python objects flat (tracemalloc).
    With the threshold fixed, the same run held its heap's free part at 0.7 MiB and its RSS
    within 0.1 MiB over its last three minutes. A fixed threshold costs one mmap and munmap per
    large buffer: a few a second here.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


class Sender:
    """Sends requests of one run through one client, traced and recorded.

    Every request's span carries the run id, workload, request index, class and phase, the
    worker that sent it, and, when it had a send time, its scheduled offset from :attr:`t0` and
    its schedule lag (µs). ``on_record`` sees every record as it is made; the sender keeps none
    (a worker process sends each to the caller, which keeps what it needs: a long run's records
    kept twice grew every process by 3-4 KB a request).
    """

    def __init__(
        self,
        config: SendConfig,
        client: AsyncLLMClient,
        *,
        worker: int = 0,
        on_record: Callable[[RequestRecord], None] | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.worker = worker
        self.t0 = time.perf_counter_ns()
        self._on_record = on_record
        self._extra_body: JsonObject = {
            **config.extra_body,
            **({"ignore_eos": True} if config.ignore_eos else {}),
        }

    async def send(
        self,
        item: WorkloadRequest,
        prompt: Prompt,
        phase: str,
        scheduled_ns: int | None = None,
    ) -> CompletionResult:
        """Send ``item`` with ``prompt`` in ``phase``, at ``scheduled_ns`` if it has a send time."""
        config = self.config
        attributes: dict[str, str | int | float | bool] = {
            semconv.RUN_ID: config.run_id,
            semconv.WORKLOAD_NAME: config.workload,
            semconv.REQUEST_INDEX: item.index,
            semconv.REQUEST_CLASS: item.request_class,
            semconv.REQUEST_PHASE: phase,
            semconv.LOADGEN_WORKER: self.worker,
            semconv.REQUEST_PROMPT_TOKENS: len(item.prompt_token_ids),
        }
        if config.shard_index is not None:
            attributes[semconv.LOADGEN_SHARD] = config.shard_index
        offset_us = lag_us = None
        if scheduled_ns is not None:
            lag_us = (time.perf_counter_ns() - scheduled_ns) // 1000
            offset_us = (scheduled_ns - self.t0) // 1000
            attributes[semconv.REQUEST_SCHEDULED_OFFSET_US] = offset_us
            attributes[semconv.REQUEST_SCHEDULE_LAG_US] = lag_us
        req = CompletionRequest(
            api=config.api,
            model=config.model,
            prompt=prompt,
            max_tokens=item.max_tokens,
            temperature=item.temperature,
            extra_body=self._extra_body,
            attributes=attributes,
        )
        result = await self.client.complete(req)
        record = RequestRecord(
            item.index, item.request_class, phase, offset_us, lag_us, result, self.worker
        )
        if self._on_record is not None:
            self._on_record(record)
        return result


async def measure_share(
    sender: Sender,
    share: Share,
    t0: int,
    on_result: Callable[[CompletionResult], None] | None = None,
) -> None:
    """Send ``share``'s requests, measured, on the running loop: open loop at ``t0`` + each
    offset, or closed loop with its streams from ``t0``; ``on_result`` sees each result."""
    sender.t0 = t0

    async def send(i: int, scheduled_ns: int | None) -> None:
        result = await sender.send(
            share.items[i], share.prompts[i], semconv.PHASE_MEASURE, scheduled_ns
        )
        if on_result is not None:
            on_result(result)

    if share.offsets_s is None:
        queue = iter(range(len(share)))
        timer = DeadlineTimer()
        try:  # every worker's streams start together, at t0
            await timer.sleep_until(t0)
        finally:
            timer.close()

        async def stream() -> None:
            for i in queue:
                await send(i, None)

        await asyncio.gather(*(stream() for _ in range(share.concurrency or 0)))
        return
    tasks: set[asyncio.Task[None]] = set()
    timer = DeadlineTimer()
    try:
        for i, offset_s in enumerate(share.offsets_s):
            scheduled_ns = t0 + int(offset_s * 1e9)
            await timer.sleep_until(scheduled_ns)
            task = asyncio.create_task(send(i, scheduled_ns))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        timer.close()
    if tasks:
        await asyncio.gather(*tasks)
