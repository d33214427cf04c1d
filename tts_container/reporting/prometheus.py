"""``/metrics``: the server's state in the Prometheus text format, the one operators' tools read.

Gauges and counters are read at scrape time from the objects that own them (the inference pool, the
capacity estimate, the admission's listeners, the session counters), so no number is kept twice; only
what happens per piece of audio (a stall, a first audio) is observed as it happens, into histograms.
Each app has a registry of its own: tests run many servers in one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from tts_container.engines.base import BatchCounts, batch_counts
from tts_container.scheduling.listener import Heard

if TYPE_CHECKING:
    from tts_container.reporting.counters import SessionCounters
    from tts_container.scheduling.admission import Admission
    from tts_container.scheduling.inference import InferencePool

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FIRST_AUDIO_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
STALL_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class ServerMetrics:
    """The registry behind ``/metrics`` and the histograms fed by every listener's clock."""

    def __init__(self, pool: InferencePool, counters: SessionCounters) -> None:
        self.registry = CollectorRegistry()
        self.first_audio = Histogram(
            "kokoro_first_audio_seconds",
            "From a request that starts a stretch of speech to its first audio",
            buckets=FIRST_AUDIO_BUCKETS,
            registry=self.registry,
        )
        self.stalls = Histogram(
            "kokoro_stall_seconds",
            "Silence a listener hears inside speech, per stall (the server's estimate from its audio clock)",
            buckets=STALL_BUCKETS,
            registry=self.registry,
        )
        self._state = _StateCollector(pool, counters)
        self.registry.register(self._state)

    def watch(self, admission: Admission, engine: object = None) -> None:
        """Report ``admission``'s listeners and capacity from now on (once the engine is ready), and
        ``engine``'s batches if it batches across listeners."""
        self._state.admission = admission
        self._state.engine = engine

    def heard(self, heard: Heard) -> None:
        if heard.first_audio_s is not None:
            self.first_audio.observe(heard.first_audio_s)
        if heard.stall_s > 0:
            self.stalls.observe(heard.stall_s)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """Reads the server's gauges and counters from their owners at each scrape."""

    def __init__(self, pool: InferencePool, counters: SessionCounters) -> None:
        self.pool = pool
        self.counters = counters
        self.admission: Admission | None = None
        self.engine: object = None

    def collect(self) -> Iterator[Metric]:
        pool, counters = self.pool.stats(), self.counters
        yield _gauge("kokoro_engine_queue", "Engine calls waiting for the engine", pool.queued)
        yield _gauge("kokoro_engine_running", "Engine calls running (0 or 1)", pool.running)
        yield _counter("kokoro_engine_calls", "Engine calls completed", pool.completed)
        yield _counter(
            "kokoro_engine_busy_seconds",
            "Wall time the engine spent running calls (one, or two side by side)",
            pool.busy_s,
        )
        yield _gauge("kokoro_sessions_active", "Open WebSocket sessions", counters.active)
        made_s, sent_s = counters.audio_made_ms / 1000, counters.audio_sent_ms / 1000
        yield _counter("kokoro_audio_made_seconds", "Audio the engine made", made_s)
        yield _counter("kokoro_audio_sent_seconds", "Audio that reached a client", sent_s)
        requests = CounterMetricFamily("kokoro_requests", "Requests ended, by outcome", labels=["outcome"])
        requests.add_metric(["completed"], counters.requests_completed)
        requests.add_metric(["cancelled"], counters.requests_cancelled)
        yield requests
        if isinstance(name := getattr(self.engine, "name", None), str):
            info = GaugeMetricFamily(
                "kokoro_engine_info",
                "The engine serving and how its model runs",
                labels=["engine", "variant"],
            )
            info.add_metric([name, str(getattr(self.engine, "variant", ""))], 1)
            yield info
        if (counts := batch_counts(self.engine)) is not None:
            yield _batch_histogram(counts)
        if (admission := self.admission) is None:
            return
        yield from _admission_metrics(admission)


def _admission_metrics(admission: Admission) -> Iterator[Metric]:
    capacity = admission.capacity
    yield _gauge("kokoro_listeners", "Listeners inside an answer now", admission.speaking())
    connected = len(admission.listeners)
    yield _gauge("kokoro_listeners_connected", "Listeners connected (sessions and POSTs)", connected)
    yield _gauge("kokoro_capacity_listeners", "Listeners the server admits at once", admission.limit_now())
    rate = capacity.audio_per_s
    if rate is not None:
        yield _gauge(
            "kokoro_capacity_audio_seconds_per_second", "Audio rendered per second of engine time", rate
        )
    answers = CounterMetricFamily("kokoro_answers", "New answers, by admission outcome", labels=["outcome"])
    answers.add_metric(["admitted"], admission.admitted)
    answers.add_metric(["refused"], admission.refused)
    yield answers


def _batch_histogram(counts: BatchCounts) -> HistogramMetricFamily:
    """How many engine calls each forward pass of the generator rendered together."""
    buckets = [
        (str(bound), sum(n for size, n in counts.sizes.items() if size <= bound)) for bound in BATCH_BUCKETS
    ]
    return HistogramMetricFamily(
        "kokoro_engine_batch_size",
        "Engine calls rendered together in one forward pass of the generator",
        buckets=[*buckets, ("+Inf", counts.batches)],
        sum_value=counts.items,
    )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)
