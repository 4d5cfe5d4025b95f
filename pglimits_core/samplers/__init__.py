"""Per-second samplers (pg_stat views, Redis INFO, host CPU/RSS/disk), host facts and the
client-bound verdict. See ``base`` for the sampler/loop split and the row format."""

from pglimits_core.samplers.base import CounterRates, Sampler, SamplerSet, SamplerThread
from pglimits_core.samplers.classify import classify_client_bound
from pglimits_core.samplers.host import HostSampler, describe_host, measure_fsync_latency
from pglimits_core.samplers.postgres import PostgresSampler
from pglimits_core.samplers.redis import RedisSampler

__all__ = [
    "CounterRates",
    "HostSampler",
    "PostgresSampler",
    "RedisSampler",
    "Sampler",
    "SamplerSet",
    "SamplerThread",
    "classify_client_bound",
    "describe_host",
    "measure_fsync_latency",
]
