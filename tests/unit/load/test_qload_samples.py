"""qload's log into the harness's summary shape (``load.tools.qload.samples_result``), from a
synthetic log: which phase a send and a claim belong to, late sends, missed messages."""

from __future__ import annotations

from pglimits_core.load.tools.qload import dollar_params, samples_result
from pglimits_core.record.summary import build_summary

S = 1_000_000_000  # ns
MS = 1_000_000


def entries(sends, claims, rate=10.0):
    summary = build_summary(samples_result(sends, claims, rate, 1, 1, warmup_s=1, duration_s=2), "t")
    return {e.role: e for e in summary.entries if e.phase == "measure"}


def test_send_to_claim_counts_every_message_of_the_window_even_claimed_after_it():
    sends = [(int(1.0 * S + i * 100 * MS), int(1.0 * S + i * 100 * MS), int(1.0 * S + i * 100 * MS) + MS)
             for i in range(20)]  # 20 sends over the 2-s window
    claims = [(intended, 0, intended + 5 * MS) for intended, _, _ in sends[:19]]
    claims.append((sends[19][0], 0, 3 * S + 500 * MS))  # the last one claimed after the window: slow
    measured = entries(sends, claims)
    consumer, producer = measured["consumer"], measured["producer"]
    assert consumer.latencies["end_to_end"].count == 20 and consumer.missed == 0
    assert consumer.latencies["end_to_end"].max_us > 500_000  # the late claim is in the tail
    assert consumer.items == 19  # claimed inside the window: the backlog's rate
    assert producer.ops == 20 and producer.achieved_rate == 10.0 and producer.offered_rate == 10.0


def test_a_send_that_began_after_its_window_is_late_and_an_unclaimed_message_missed():
    sends = [(int(1.5 * S), int(1.5 * S), int(1.5 * S) + MS), (int(2.9 * S), int(3.2 * S), int(3.2 * S) + MS),
             (int(0.5 * S), int(0.5 * S), int(0.5 * S) + MS)]  # the last one is the warm-up's
    claims = [(int(1.5 * S), 0, int(1.6 * S))]
    measured = entries(sends, claims)
    assert measured["producer"].ops == 2 and measured["producer"].late == 1
    assert measured["producer"].achieved_rate == 0.5  # (2 - 1 late) / 2 s
    assert measured["consumer"].missed == 1  # the late one was never claimed


def test_an_adapters_placeholders_become_numbered_parameters():
    assert dollar_params("UPDATE t SET by = %s WHERE id IN (SELECT id LIMIT %s)") == \
        "UPDATE t SET by = $1 WHERE id IN (SELECT id LIMIT $2)"
    assert dollar_params("SELECT 1") == "SELECT 1"


def test_a_burn_downs_jobs_are_the_claims_returned_inside_its_window_and_a_batch_is_one_claim():
    from pglimits_core.load.tools.qload import burn_down_result

    # a batch of 10 claimed at 1.5 s (one round trip: 2 ms), one at 0.5 s (the warm-up), one after
    batch = [(-5 * S, int(1.5 * S), int(1.5 * S) + 2 * MS)] * 10
    claims = [*batch, (-5 * S, int(0.5 * S), int(0.5 * S) + MS), (-5 * S, int(3.1 * S), int(3.1 * S) + MS)]
    summary = build_summary(burn_down_result(claims, consumers=2, warmup_s=1, duration_s=2), "t")
    (tool,) = [e for e in summary.entries if e.phase == "measure"]
    assert tool.role == "tool" and tool.loop == "closed" and tool.items == 10 and tool.ops == 1
    assert tool.items_per_s == 5.0 and tool.idle_polls == 0
    service = tool.latencies["service_time"]  # the round trip, once per claim (too few for a p99)
    assert service.count == 1 and 1_990 <= service.max_us <= 2_010
    dry = build_summary(burn_down_result(claims, 2, 1, 2, idle_polls_in_window=3), "t")
    assert next(e for e in dry.entries if e.phase == "measure").idle_polls == 3


def test_the_whole_log_tally_equals_the_event_by_event_one(tmp_path):
    """qload's log is tallied with numpy (a Redis burn-down logs millions of claims a window):
    the counts, per-second rows and histograms equal the event-by-event tally's, for the rate
    points and the burn-down alike, read back from the CSV qload writes."""
    import numpy as np
    import pandas as pd

    from pglimits_core.load.tools.qload import burn_down_result, read_samples
    from pglimits_core.load.tools.tally import PhaseTally

    rng = np.random.default_rng(5)
    intended = np.sort(rng.integers(-10**8, 3_200_000_000, 5_000))
    sends = np.stack([intended, intended + rng.integers(0, 10**6, intended.size),
                      intended + rng.integers(10**6, 2 * 10**6, intended.size)], axis=1)
    began = np.repeat(np.sort(rng.integers(0, 3_200_000_000, 2_000)), 3)  # batches of 3 messages
    claims = np.stack([rng.integers(0, 3_200_000_000, began.size), began, began + 400_000], axis=1)
    log = tmp_path / "samples.csv"
    log.write_text("".join(f"{kind},{a},{b},{c}\n" for kind, rows in (("send", sends), ("claim", claims))
                           for a, b, c in rows.tolist()))
    read_sends, read_claims = read_samples(log)
    assert (read_sends == sends).all() and (read_claims == claims).all()

    reference = PhaseTally(1.0, 2.0, (("producer", "enqueue"), ("consumer", "claim")))
    for i, b, d in sends.tolist():
        reference.open_loop_send("producer", "enqueue", i, b, d)
    for i, _, returned in claims.tolist():
        if (phase := reference.phase_of(i)) is not None:
            reference.record_us("consumer", "claim", "end_to_end", phase, (returned - i) / 1000)
        if (claimed_in := reference.phase_of(returned)) is not None:
            reference.counts[("consumer", "claim", claimed_in)]["ops"] += 1
            reference.counts[("consumer", "claim", claimed_in)]["items"] += 1
            reference.per_second[("consumer", "claim", claimed_in, int(returned // 1e9))]["items"] += 1
    burn = PhaseTally(1.0, 2.0, (("tool", "claim"),))
    for b, returned in sorted({(b, r) for _, b, r in claims.tolist()}):
        if (phase := burn.phase_of(returned)) is not None:
            burn.counts[("tool", "claim", phase)]["ops"] += 1
            burn.record_us("tool", "claim", "service_time", phase, (returned - b) / 1000)
    for _, _, returned in claims.tolist():
        if (phase := burn.phase_of(returned)) is not None:
            burn.counts[("tool", "claim", phase)]["items"] += 1
            burn.per_second[("tool", "claim", phase, int(returned // 1e9))]["items"] += 1

    for fast, slow in ((samples_result(read_sends, read_claims, 1000.0, 2, 2, warmup_s=1, duration_s=2), reference),
                       (burn_down_result(read_claims, 2, 1.0, 2.0), burn)):
        counts = {key: {k: v for k, v in value.items() if k != "missed"} for key, value in fast.counts.items()}
        assert counts == {key: {k: v for k, v in value.items() if k != "missed"} for key, value in slow.counts.items()}
        # the per-second latency columns are the whole-log path's own (checked in the test after)
        counted = fast.timeseries[[c for c in fast.timeseries if not c.startswith("end_to_end_")]]
        pd.testing.assert_frame_equal(counted, slow.frame(), check_dtype=False)
        assert set(fast.histograms) == set(slow.histograms)
        for key, histogram in slow.histograms.items():
            assert [fast.histograms[key].get_value_at_percentile(p) for p in (1, 50, 99, 100)] == \
                [histogram.get_value_at_percentile(p) for p in (1, 50, 99, 100)], key
            assert fast.histograms[key].get_total_count() == histogram.get_total_count()


def test_each_second_of_a_window_carries_its_own_send_to_claim_p99_by_the_intended_send():
    """A long window's latency over time: the per-second rows hold the p50 / p99 / max and count of
    the messages meant to be sent in that second (a slow second shows as its own)."""
    sends, claims = [], []
    for i in range(200):  # 100 a second over the 2-s window; the second second's claims 50 ms slower
        intended = int(1.0 * S + i * 10 * MS)
        sends.append((intended, intended, intended + MS))
        claims.append((intended, 0, intended + (2 if i < 100 else 50) * MS + (i % 100) * 10_000))
    rows = samples_result(sends, claims, 100.0, 1, 1, warmup_s=1, duration_s=2).timeseries
    seconds = rows[(rows.role == "consumer") & (rows.phase == "measure")].set_index("second")
    assert seconds.loc[1, "end_to_end_count"] == 100 and seconds.loc[2, "end_to_end_count"] == 100
    assert 2_000 <= seconds.loc[1, "end_to_end_p99_us"] <= 3_000 and seconds.loc[1, "end_to_end_max_us"] == 2_990
    assert 50_000 <= seconds.loc[2, "end_to_end_p99_us"] <= 51_000 and seconds.loc[2, "end_to_end_p50_us"] > 50_000
