"""RedisSampler arithmetic against a fake client whose INFO returns canned dicts."""

import pytest

from pglimits_core.samplers.redis import RedisSampler, keyspace_keys


def canned_info(commands_processed, lpush_calls, lpush_usec, keys=10):
    return {
        "used_memory": 1_048_576,
        "used_memory_rss": 4_000_000,
        "instantaneous_ops_per_sec": 1234,
        "connected_clients": 5,
        "blocked_clients": 0,
        "pubsub_channels": 0,
        "total_commands_processed": commands_processed,
        "total_net_input_bytes": 10 * commands_processed,
        "total_net_output_bytes": 4 * commands_processed,
        "expired_keys": 0,
        "evicted_keys": 0,
        "db0": {"keys": keys, "expires": 0, "avg_ttl": 0},
        "db3": {"keys": 2, "expires": 0, "avg_ttl": 0},
        "cmdstat_lpush": {"calls": lpush_calls, "usec": lpush_usec, "usec_per_call": 1.0},
    }


class FakeRedis:
    def __init__(self):
        self.info_dict = {}
        self.sections = []
        self.closed = False

    def info(self, section):
        self.sections.append(section)
        return self.info_dict

    def close(self):
        self.closed = True


@pytest.fixture
def client():
    return FakeRedis()


def sampler_for(client, commands=("LPUSH", "lmove")):
    return RedisSampler("redis://x", commands=commands, client_factory=lambda url: client)


def test_two_samples_give_ops_per_second_and_command_rates(client):
    sampler = sampler_for(client)
    client.info_dict = canned_info(1000, lpush_calls=100, lpush_usec=300)
    first = sampler.sample(5.0)
    assert first["total_commands_processed_per_s"] is None
    assert first["used_memory"] == 1_048_576 and first["connected_clients"] == 5
    assert first["keys_total"] == 12 and first["db0_keys"] == 10

    client.info_dict = canned_info(21000, lpush_calls=10100, lpush_usec=20300)
    second = sampler.sample(7.0)
    assert second["total_commands_processed_per_s"] == 10000.0
    assert second["total_net_input_bytes_per_s"] == 100_000.0
    assert second["cmd_lpush_calls_per_s"] == 5000.0
    assert second["cmd_lpush_usec_per_call"] == 2.0
    # never called: present as None so the column exists in every row
    assert second["cmd_lmove_calls_per_s"] is None and second["cmd_lmove_usec_per_call"] is None
    assert client.sections == ["all", "all"]  # one round trip per sample


def test_counter_reset_gives_none(client):
    sampler = sampler_for(client)
    client.info_dict = canned_info(50_000, lpush_calls=9000, lpush_usec=9000)
    sampler.sample(1.0)
    client.info_dict = canned_info(100, lpush_calls=10, lpush_usec=30)  # CONFIG RESETSTAT
    row = sampler.sample(2.0)
    assert row["total_commands_processed_per_s"] is None
    assert row["cmd_lpush_calls_per_s"] is None and row["cmd_lpush_usec_per_call"] is None


def test_close_releases_the_client_and_next_sample_reconnects(client):
    made = []
    sampler = RedisSampler("redis://x", client_factory=lambda url: made.append(url) or client)
    client.info_dict = canned_info(1, 1, 1)
    sampler.sample(1.0)
    sampler.close()
    assert client.closed and sampler.client is None
    sampler.sample(2.0)
    assert made == ["redis://x", "redis://x"]


def test_keyspace_ignores_non_db_keys():
    assert keyspace_keys({"dbfilename": "x", "db12": {"keys": 3}}) == {
        "db12_keys": 3,
        "keys_total": 3,
    }
