"""Latency histograms: HDR, in microseconds, with an honest too-few-samples rule.

Units: every value recorded here is in **microseconds** (integers). Callers measure in
nanoseconds (``time.perf_counter_ns``/``time.monotonic_ns``) and convert with ``ns_to_us``.
Range 1 µs .. 30 min at 3 significant digits (relative error ≤ 0.1 %) for the per-phase
histograms; the per-second histograms of the time series use 2 digits (≤ 1 %) because there
are one per second per kind and a 3-digit histogram holds 17k counters (~140 kB).
A value above 30 min is clamped to 30 min and counted (``clamped``), never dropped silently: a
job held back by a 300-s transaction waits minutes, and that wait is the finding.
"""

from __future__ import annotations

from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 1_800_000_000
PHASE_DIGITS = 3
SECOND_DIGITS = 2

#: Percentiles reported everywhere, by field name -> percentile.
PERCENTILES = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
#: The one too-few-samples rule: a percentile needs at least this many samples, else it is
#: reported as None with a reason. p99 from 30 samples is just the max with a label on it.
MIN_SAMPLES = {"p50": 1, "p95": 20, "p99": 100, "p999": 1000}


def new_histogram(digits: int = PHASE_DIGITS) -> HdrHistogram:
    """An empty µs histogram covering 1 µs .. 30 min."""
    return HdrHistogram(LOWEST_US, HIGHEST_US, digits)


def ns_to_us(duration_ns: int) -> int:
    """Nanoseconds -> whole microseconds (rounded to nearest, never negative)."""
    return max(0, (duration_ns + 500) // 1000)


def record_us(histogram: HdrHistogram, value_us: int) -> bool:
    """Record one µs value; returns True when it had to be clamped to the ceiling."""
    if value_us > HIGHEST_US:
        histogram.record_value(HIGHEST_US)
        return True
    histogram.record_value(value_us)
    return False


def encode(histogram: HdrHistogram) -> bytes:
    """Compressed, base64 HDR encoding (portable across processes and to disk)."""
    return histogram.encode()


def decode(encoded: bytes | str) -> HdrHistogram:
    return HdrHistogram.decode(encoded)


def merge_encoded(encoded_histograms: list[bytes | str], digits: int = PHASE_DIGITS) -> HdrHistogram:
    """One histogram holding every sample of the encoded ones (counts add exactly)."""
    merged = new_histogram(digits)
    for encoded in encoded_histograms:
        merged.add(decode(encoded))
    return merged


def too_few_reason(count: int, field: str) -> str | None:
    """Why a percentile cannot be reported from ``count`` samples, or None when it can."""
    needed = MIN_SAMPLES[field]
    if count < needed:
        return f"{count} samples; {field} needs >= {needed}"
    return None


def percentiles_us(histogram: HdrHistogram) -> tuple[dict[str, int | None], dict[str, str]]:
    """``({"p50": µs | None, ...}, {field: reason})`` — None where there are too few samples."""
    count = histogram.get_total_count()
    values: dict[str, int | None] = {}
    missing: dict[str, str] = {}
    for field, percentile in PERCENTILES.items():
        reason = too_few_reason(count, field)
        values[field] = None if reason else histogram.get_value_at_percentile(percentile)
        if reason:
            missing[field] = reason
    return values, missing
