"""otelbench.live.window and .exposition on synthetic records: every number worked out by hand,
the exposition read back with prometheus-client's parser."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.live.exposition import FAMILIES, WindowCollector, families
from otelbench.live.options import parse_duration, parse_hostport
from otelbench.live.query import LiveWindow
from otelbench.live.window import WindowConfig, source_metrics, window_metrics
from otelbench.query.records import ServerRequests
from tests.fixtures.exposition import parse, sample, samples

NAN = float("nan")
T0 = 1_700_000_000_000_000_000


@dataclass
class Req:
    source: str
    ttft: float
    offsets_us: list[int] | None = None  # None: an llm_request span (no hook data)
    cls: str | None = None
    ok: bool = True
    decode: float = NAN
    completion: float | None = None
    preemptions: float = 0.0
    kv: float = 0.0
    queue: float = 0.01
    prefill: float = 0.02
    end: tuple[str, str] | None = None  # (end reason, end phase) of a request cut short
    computed: float = NAN  # the engine core's account of a cut request
    generated: float = NAN
    inference: float = NAN


def make_window(reqs: list[Req], window_s: float = 10.0) -> LiveWindow:
    n = len(reqs)
    offsets = [r.offsets_us or [] for r in reqs]
    lengths = np.array([len(o) for o in offsets], dtype=np.int64)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    hook = [r.offsets_us is not None for r in reqs]
    cut = any(r.end for r in reqs)  # else the records lack the end fields, as older ones
    f = np.array
    server = ServerRequests(
        trace_id=tuple(f"{i:032x}" for i in range(n)),
        span_id=tuple(f"{i:016x}" for i in range(n)),
        parent_span_id=("",) * n,
        client_index=np.full(n, -1, dtype=np.int64),
        start_unix_ns=np.full(n, T0, dtype=np.int64),
        duration_ns=np.full(n, 10**9, dtype=np.int64),
        request_id=tuple(f"r{i}" for i in range(n)),
        ttft_s=f([r.ttft for r in reqs], dtype=np.float64),
        e2e_s=f([r.ttft + 1.0 for r in reqs], dtype=np.float64),
        queue_s=f([r.queue for r in reqs], dtype=np.float64),
        prefill_s=f([r.prefill for r in reqs], dtype=np.float64),
        decode_s=f([r.decode for r in reqs], dtype=np.float64),
        inference_s=f([r.inference for r in reqs], dtype=np.float64),
        prompt_tokens=np.full(n, 10.0),
        completion_tokens=f(
            [
                len(o) if r.completion is None else r.completion
                for r, o in zip(reqs, offsets, strict=True)
            ],
            dtype=np.float64,
        ),
        span_name=tuple(
            semconv.SPAN_HOOK_REQUEST if h else semconv.SPAN_VLLM_REQUEST for h in hook
        ),
        finish_reason=("length",) * n,
        cache_read_tokens=np.zeros(n),
        preemptions=f([r.preemptions if h else NAN for r, h in zip(reqs, hook, strict=True)]),
        preemption_events=f([r.preemptions if h else NAN for r, h in zip(reqs, hook, strict=True)]),
        kv_tokens_discarded=f([r.kv if h else NAN for r, h in zip(reqs, hook, strict=True)]),
        output_phase_token=np.full(n, NAN),
        token_bounds=bounds,
        token_offset_us=np.array([x for o in offsets for x in o], dtype=np.int64),
        stall_bounds=np.zeros(n + 1, dtype=np.int64),
        stall_us=np.empty(0, dtype=np.int64),
        end_reason=tuple(r.end[0] if r.end else None for r in reqs) if cut else None,
        end_phase=tuple(r.end[1] if r.end else None for r in reqs) if cut else None,
        prompt_tokens_computed=f([r.computed for r in reqs], dtype=np.float64) if cut else None,
        output_tokens_generated=f([r.generated for r in reqs], dtype=np.float64) if cut else None,
    )
    return LiveWindow(
        start_unix_ns=T0,
        end_unix_ns=T0 + int(window_s * 1e9),
        requests=server,
        source=tuple(r.source for r in reqs),
        request_class=tuple(r.cls for r in reqs),
        ok=np.array([r.ok for r in reqs], dtype=np.bool_),
    )


LIVE, PROBE = semconv.SOURCE_LIVE, semconv.SOURCE_PROBE
SCENARIO = [
    Req(LIVE, 0.1, [100_000, 120_000, 140_000, 160_000], cls="a"),
    Req(LIVE, 0.2, [200_000, 400_000], cls="b", preemptions=2, kv=50),
    Req(LIVE, 0.3, None, decode=0.4, completion=5),
    Req(LIVE, 0.05, [50_000], cls="a", ok=False),
    Req(PROBE, 0.01, [10_000, 20_000], cls="probe"),
]
CONFIG = WindowConfig(
    window_s=10.0,
    slo_ttft_s=0.25,
    slo_tpot_s=0.15,
    prefill_deadline_s=0.25,
    decode_deadlines_s=(0.0625,),
)


def test_counts_rates_and_latency_percentiles_of_the_live_source() -> None:
    m = source_metrics(make_window(SCENARIO), LIVE, CONFIG)
    assert (m.requests, m.errors) == (4, 1)
    assert m.requests_per_s == pytest.approx(0.4)
    assert m.output_tokens_per_s == pytest.approx(1.1)  # 4 + 2 + 5 tokens of the ok requests
    assert m.ttft_s.count == 3  # the failed request is left out
    assert m.ttft_s.p50 == pytest.approx(0.2)
    assert m.ttft_s.p90 == pytest.approx(0.28)  # type 7: 0.2 + 0.8 * 0.1
    # ITL: the hook spans' engine-step gaps 20, 20, 20 ms and 200 ms; none from llm_request
    assert m.itl_s.count == 4
    assert m.itl_s.p50 == pytest.approx(0.02)
    assert m.itl_s.max == pytest.approx(0.2)
    # TPOT: hook offsets (60 ms / 3, 200 ms / 1), span attributes for llm_request (0.4 / 4)
    assert sorted(np.round([m.tpot_s.min, m.tpot_s.p50, m.tpot_s.max], 9)) == [0.02, 0.1, 0.2]
    assert m.queue_s.p50 == pytest.approx(0.01)
    assert m.prefill_s.p50 == pytest.approx(0.02)
    assert m.e2e_s.p50 == pytest.approx(1.2)


def test_fluidity_index_and_fluid_token_rate_follow_etalon() -> None:
    m = source_metrics(make_window(SCENARIO), LIVE, CONFIG)
    [f] = m.fluidity
    # request 1 meets every deadline; request 2: [0.2, 0.2] with D_p 0.25, D_d 0.0625: the
    # first token banks 0.05 s, the second is 0.0875 s late: 0.0875 // 0.0625 + 1 = 2 misses
    assert f.count == 2
    assert f.quantiles[50.0] == pytest.approx(2 / 3)
    assert f.quantiles[1.0] == pytest.approx(1 / 3 + 0.01 * (2 / 3))
    assert f.fraction_fluid == 0.5
    # both fluid needs 0.2 <= D_d + 0.05: D_d = 0.15 s, 6.67 tokens/s
    assert m.fluid_rate is not None
    assert m.fluid_rate.decode_deadline_s == pytest.approx(0.15, abs=1e-4)
    assert m.fluid_rate.tokens_per_s == pytest.approx(1 / 0.15, rel=1e-3)


def test_preemptions_jain_and_classes() -> None:
    m = source_metrics(make_window(SCENARIO), LIVE, CONFIG)
    assert m.preemptions.requests_observed == 3  # hook spans only
    assert m.preemptions.rate == pytest.approx(1 / 3)
    assert m.preemptions_per_s == pytest.approx(0.2)
    assert m.class_requests == {"(none)": 1, "a": 2, "b": 1}
    # class means of TTFT 0.1, 0.2, 0.3 and of TPOT 0.02, 0.2, 0.1
    assert m.jain["ttft"] == pytest.approx(0.36 / (3 * 0.14))
    assert m.jain["tpot"] == pytest.approx(0.32**2 / (3 * 0.0504))


def test_slo_attainment_and_goodput() -> None:
    m = source_metrics(make_window(SCENARIO), LIVE, CONFIG)
    # TTFT <= 0.25: requests 1, 2; TPOT <= 0.15: requests 1, 3; the failed one meets neither
    assert m.slo_attainment == {"ttft": 0.5, "tpot": 0.5, "all": 0.25}
    assert m.goodput_requests_per_s == pytest.approx(0.1)
    assert m.goodput_tokens_per_s == pytest.approx(0.4)


CUT = [
    # cancelled in decode after two tokens (its TTFT would be the window's largest)
    Req(LIVE, 0.5, [500_000, 900_000], end=("cancelled", "decode"), computed=10, generated=3,
        inference=0.6, completion=2),
    # cancelled in the queue: no token, no time in the engine
    Req(LIVE, NAN, [], end=("cancelled", "queue"), computed=0, generated=0, completion=0),
    # an engine error in prefill: status Error
    Req(LIVE, NAN, [], ok=False, end=("error", "prefill"), computed=7, generated=0,
        inference=0.25, completion=0),
]  # fmt: skip


def test_requests_cut_short_are_counted_and_left_out_of_the_latencies() -> None:
    """SCENARIO's live requests plus three the engine did not finish: the requests count all
    seven, the errors the failed one and the engine error, every latency, fluidity and
    preemption figure is SCENARIO's own, an SLO is met by the same requests out of seven."""
    base = source_metrics(make_window(SCENARIO), LIVE, CONFIG)
    m = source_metrics(make_window(SCENARIO + CUT), LIVE, CONFIG)
    assert (m.requests, m.errors) == (7, 2)
    assert m.requests_per_s == pytest.approx(0.7)
    for name in ("output_tokens_per_s", "ttft_s", "itl_s", "tpot_s", "e2e_s", "queue_s",
                 "prefill_s", "fluidity", "fluid_rate", "preemptions", "jain"):  # fmt: skip
        assert repr(getattr(m, name)) == repr(getattr(base, name)), name  # arrays inside
    assert base.slo_attainment == {"ttft": 0.5, "tpot": 0.5, "all": 0.25}
    assert m.slo_attainment == pytest.approx({"ttft": 2 / 7, "tpot": 2 / 7, "all": 1 / 7})
    assert m.goodput_requests_per_s == base.goodput_requests_per_s
    zero = {(r, p): 0 for r in ("cancelled", "aborted", "error") for p in semconv.END_PHASES}
    assert base.cut == zero
    assert m.cut == {**zero, ("cancelled", "decode"): 1, ("cancelled", "queue"): 1,
                     ("error", "prefill"): 1}  # fmt: skip
    assert (m.unread_prompt_tokens, m.unread_output_tokens) == (17, 3)
    assert m.unread_engine_s == pytest.approx(0.85)
    assert (base.unread_prompt_tokens, base.unread_output_tokens, base.unread_engine_s) == (
        0,
        0,
        0.0,
    )
    text = encode_text(families([m], CONFIG))
    cut = {semconv.LABEL_SOURCE: LIVE, semconv.LABEL_END_REASON: "cancelled"}
    assert sample(text, semconv.METRIC_LIVE_CUT_REQUESTS, **cut, end_phase="queue") == 1.0
    assert sample(text, semconv.METRIC_LIVE_CUT_REQUESTS, **cut, end_phase="prefill") == 0.0
    assert sample(text, semconv.METRIC_LIVE_UNREAD_OUTPUT_TOKENS, source=LIVE) == 3.0
    assert sample(text, semconv.METRIC_LIVE_UNREAD_ENGINE_SECONDS, source=LIVE) == 0.85


def test_a_span_without_an_end_reason_counts_by_its_finish_reason() -> None:
    """A span the hooks wrote before end reasons, with finish reason ``abort``: an aborted
    request (phase unknown) in the counts, its timing kept in the latencies as before."""
    window = make_window(SCENARIO)
    legacy = dataclasses.replace(
        window, requests=dataclasses.replace(
            window.requests, finish_reason=("length", "abort", "length", "length", "length")
        )
    )  # fmt: skip
    m = source_metrics(legacy, LIVE, CONFIG)
    assert m.ttft_s == source_metrics(window, LIVE, CONFIG).ttft_s
    assert m.cut[("aborted", "unknown")] == 1
    assert sum(m.cut.values()) == 1
    # its work is what it finished with: 10 prompt tokens, 2 completion tokens
    assert (m.unread_prompt_tokens, m.unread_output_tokens) == (10, 2)


def test_sources_are_separated() -> None:
    metrics = window_metrics(make_window(SCENARIO), CONFIG)
    assert sorted(metrics) == [LIVE, PROBE]
    probe = metrics[PROBE]
    assert (probe.requests, probe.errors) == (1, 0)
    assert probe.ttft_s.p50 == pytest.approx(0.01)
    assert probe.itl_s.p50 == pytest.approx(0.01)
    assert probe.jain == {"ttft": None, "tpot": None}  # one class
    assert probe.preemptions.rate == 0.0


def test_an_empty_source_has_counts_but_no_percentiles() -> None:
    metrics = window_metrics(make_window(SCENARIO[:4]), CONFIG)
    probe = metrics[PROBE]
    assert probe.requests == 0
    assert probe.ttft_s.p50 is None
    assert probe.fluid_rate is None
    assert probe.slo_attainment == {"ttft": None, "tpot": None, "all": None}
    text = encode_text(families(metrics.values(), CONFIG))
    assert sample(text, semconv.METRIC_LIVE_REQUESTS, source="probe") == 0.0
    # undefined values are left out, never NaN
    assert not [k for k in samples(text) if ("source", PROBE) in k[1] and "quantile" in dict(k[1])]
    assert "nan" not in text.lower()


def test_without_slos_there_is_no_attainment_or_goodput() -> None:
    m = source_metrics(make_window(SCENARIO), LIVE, WindowConfig(window_s=10.0))
    assert m.slo_attainment == {}
    assert m.goodput_requests_per_s is None


def test_classes_beyond_the_limit_are_pooled() -> None:
    reqs = [Req(LIVE, 0.1, [1000], cls=c) for c in ("a", "a", "a", "b", "b", "c", "d")]
    m = source_metrics(make_window(reqs), LIVE, WindowConfig(window_s=1.0, max_classes=3))
    assert m.class_requests == {"(other)": 2, "a": 3, "b": 2}


def encode_text(published: tuple[Metric, ...]) -> str:
    """``published`` in the Prometheus text format, as ``/metrics`` serves it."""
    registry = CollectorRegistry()
    registry.register(WindowCollector(published))
    return generate_latest(registry).decode()


def test_exposition_samples() -> None:
    metrics = window_metrics(make_window(SCENARIO), CONFIG)
    text = encode_text(families(metrics.values(), CONFIG, {semconv.METRIC_LIVE_REFRESH_SPANS: 5}))
    lines = text.splitlines()
    assert f"# TYPE {semconv.METRIC_LIVE_TTFT} summary" in lines
    got = samples(text)
    live, probe = (("source", LIVE),), (("source", PROBE),)

    def at(name: str, *labels: tuple[str, str]) -> float:
        return got[name, frozenset(labels)]

    assert at(semconv.METRIC_LIVE_TTFT, *live, ("quantile", "0.5")) == 0.2
    assert at(semconv.METRIC_LIVE_TTFT, *probe, ("quantile", "0.99")) == 0.01
    assert at(semconv.METRIC_LIVE_REQUESTS, *live) == 4.0
    assert at(semconv.METRIC_LIVE_ERRORS, *live) == 1.0
    assert at(semconv.METRIC_LIVE_SLO_ATTAINMENT, *live, ("slo", "all")) == 0.25
    assert at(semconv.METRIC_LIVE_CLASS_REQUESTS, *live, ("class", "(none)")) == 1.0
    fluidity = (("decode_deadline_seconds", "0.0625"), ("quantile", "0.5"))
    assert at(semconv.METRIC_LIVE_FLUIDITY, *live, *fluidity) == 2 / 3
    assert at(semconv.METRIC_LIVE_SLO_TARGET, ("slo", "ttft")) == 0.25
    assert at(semconv.METRIC_LIVE_WINDOW) == 10.0
    assert at(semconv.METRIC_LIVE_REFRESH_SPANS) == 5.0
    # the sample lines as the Prometheus text format writes them: labels sorted, Go floats
    assert f'{semconv.METRIC_LIVE_TTFT}{{quantile="0.5",source="live"}} 0.2' in lines
    assert f"{semconv.METRIC_LIVE_WINDOW} 10.0" in lines
    # one HELP and TYPE per family, every sample name and label set as FAMILIES documents it
    documented = {v for k, v in vars(semconv).items() if k.startswith("METRIC_LIVE_")}
    assert set(FAMILIES) == documented
    for name, family in parse(text).items():
        spec = FAMILIES[name]
        assert (family.type, family.documentation) == (spec.kind, spec.help)
        assert [f"# HELP {name} {spec.help}", f"# TYPE {name} {spec.kind}"] == [
            line for line in lines if line.startswith(("# HELP", "# TYPE")) and f" {name} " in line
        ]
        for s in family.samples:
            assert s.name == name
            assert set(s.labels) == set(spec.labels), name
            assert math.isfinite(s.value)


def test_counters_keep_their_total_names_and_unset_values_are_left_out() -> None:
    extra: dict[str, float | None] = {
        semconv.METRIC_LIVE_REFRESH_ERRORS: 2,
        semconv.METRIC_LIVE_RETENTION_DELETED: None,
        semconv.METRIC_LIVE_STORE_BYTES: 4096,
    }
    text = encode_text(families((), CONFIG, extra))
    assert f"# TYPE {semconv.METRIC_LIVE_REFRESH_ERRORS} counter" in text.splitlines()
    assert sample(text, semconv.METRIC_LIVE_REFRESH_ERRORS) == 2.0
    assert sample(text, semconv.METRIC_LIVE_STORE_BYTES) == 4096.0
    assert semconv.METRIC_LIVE_RETENTION_DELETED not in text
    assert semconv.METRIC_LIVE_REQUESTS not in text  # no source, no per-source family


def test_a_sample_with_the_wrong_labels_is_refused() -> None:
    with pytest.raises(KeyError, match="has the labels"):
        families((), CONFIG, {semconv.METRIC_LIVE_REQUESTS: 1.0})


def test_label_values_are_escaped() -> None:
    cls = 'te"n\\ant\n1'
    reqs = [Req(LIVE, 0.1, [1000], cls=cls)]
    text = encode_text(families(window_metrics(make_window(reqs), CONFIG).values(), CONFIG))
    assert 'class="te\\"n\\\\ant\\n1"' in text
    assert sample(text, semconv.METRIC_LIVE_CLASS_REQUESTS, source=LIVE, **{"class": cls}) == 1.0


def test_durations_and_addresses() -> None:
    assert parse_duration("5m") == 300.0
    assert parse_duration("250ms") == 0.25
    assert parse_duration("7d") == 604800.0
    assert parse_duration("12") == 12.0
    for bad in ("", "5 minutes", "-1s", "0s"):
        with pytest.raises(ConfigError, match="bad duration"):
            parse_duration(bad)
    assert parse_hostport("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_hostport("[::1]:0") == ("::1", 0)
    with pytest.raises(ConfigError, match="bad address"):
        parse_hostport("9464")


def test_window_config_is_validated() -> None:
    with pytest.raises(ValueError, match="window"):
        WindowConfig(window_s=0)
    with pytest.raises(ValueError, match="slo_ttft_s"):
        WindowConfig(slo_ttft_s=-1)


def test_a_malformed_timeline_is_left_out_of_the_token_metrics_only() -> None:
    reqs = [
        Req(LIVE, 0.1, [100_000, 120_000]),
        Req(LIVE, 0.2, [200_000, 150_000, 300_000]),  # decreasing: malformed
        Req(LIVE, 0.3, [-5, 10]),  # negative: malformed
    ]
    m = source_metrics(make_window(reqs), LIVE, CONFIG)
    assert m.requests == 3
    assert m.ttft_s.count == 3
    assert m.itl_s.count == 1
    assert m.itl_s.p50 == pytest.approx(0.02)
    assert m.fluidity[0].count == 1
