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
