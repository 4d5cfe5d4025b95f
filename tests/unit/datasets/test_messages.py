"""The seeded message mix: exact sizes, the 70/25/5 shares, reproducibility, cheap stamp/decode."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pglimits_core.datasets.messages import (
    ENQ_WIDTH,
    SIZE_MIX,
    MessageGenerator,
    build_payload,
    decode,
    message_id,
    stamp,
    stamp_batch,
)


def test_every_payload_has_one_of_the_exact_sizes_and_is_json():
    for template in MessageGenerator(seed=1, producer="p0").templates(500):
        assert len(template) in {size for size, _ in SIZE_MIX}
        assert len(stamp(template)) == len(template)  # stamping never changes the size
        body = json.loads(stamp(template))
        assert set(body) == {"enq_ns", "id", "pad"}


def test_size_mix_is_70_25_5_within_tolerance():
    sizes = Counter(len(t) for t in MessageGenerator(seed=42, producer="p").templates(20_000))
    shares = {size: sizes[size] / 20_000 for size, _ in SIZE_MIX}
    assert shares[256] == pytest.approx(0.70, abs=0.015)
    assert shares[1024] == pytest.approx(0.25, abs=0.015)
    assert shares[8192] == pytest.approx(0.05, abs=0.007)


def test_same_seed_same_sequence_other_seed_or_producer_differs():
    first = MessageGenerator(seed=3, producer="a").templates(200)
    assert MessageGenerator(seed=3, producer="a").templates(200) == first
    assert MessageGenerator(seed=4, producer="a").templates(200) != first
    assert [len(t) for t in MessageGenerator(seed=3, producer="b").templates(200)] != [len(t) for t in first]


def test_ids_are_unique_and_carry_the_producer():
    ids = [message_id(t) for t in MessageGenerator(seed=0, producer="p7").templates(1000)]
    assert len(set(ids)) == 1000
    assert ids[:3] == ["p7-1", "p7-2", "p7-3"]


def test_stamp_and_decode_round_trip():
    template = MessageGenerator(seed=0, producer="w2").template()
    assert decode(template) == ("w2-1", 0)
    assert decode(stamp(template, 123_456_789_012)) == ("w2-1", 123_456_789_012)
    assert decode(stamp(template, 10**ENQ_WIDTH - 1))[1] == 10**ENQ_WIDTH - 1
    assert decode(stamp(template))[1] > 0


def test_stamp_batch_gives_one_send_time():
    batch = stamp_batch(MessageGenerator(seed=0).templates(5))
    assert len({decode(p)[1] for p in batch}) == 1


def test_decode_reads_re_encoded_json_like_pgmq_jsonb():
    payload = stamp(MessageGenerator(seed=5, producer="x").template(), 987654321)
    normalised = json.dumps(dict(sorted(json.loads(payload).items(), key=lambda kv: len(kv[0]))))
    assert decode(normalised) == ("x-1", 987654321)
    assert decode(normalised.encode()) == ("x-1", 987654321)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        MessageGenerator(seed=0, producer='bad"name')
    with pytest.raises(ValueError):
        build_payload("x" * 300, 256, "a" * 1000)
    with pytest.raises(ValueError):
        decode(b'{"something": "else"}')
