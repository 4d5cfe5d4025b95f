"""Per-second Redis ``INFO``: memory, throughput, clients, keyspace and per-command stats.

One ``INFO all`` per second (it includes ``commandstats``), so a single round trip. Cumulative
counters (``total_commands_processed``, per-command ``calls`` and ``usec``) become per-second
rates; ``instantaneous_ops_per_sec`` is Redis's own smoothed estimate and is kept as read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pglimits_core.samplers.base import CounterRates, Sampler, counter_delta

#: seconds a single INFO may take before this second's sample counts as failed
SOCKET_TIMEOUT_S = 1.0

LEVELS = (
    "used_memory",
    "used_memory_rss",
    "instantaneous_ops_per_sec",
    "connected_clients",
    "blocked_clients",
    "pubsub_channels",
    # persistence in the background: a fork and a rewrite inside a window explain a stall there
    "aof_rewrite_in_progress",
    "rdb_bgsave_in_progress",
    "aof_current_size",
    "latest_fork_usec",
)
COUNTERS = (
    "total_commands_processed",
    "total_net_input_bytes",
    "total_net_output_bytes",
    "expired_keys",
    "evicted_keys",
)


def default_client(url: str) -> Any:
    """A redis-py client for ``redis://`` URLs with a short socket timeout."""
    import redis

    return redis.Redis.from_url(
        url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S
    )


def keyspace_keys(info: Mapping[str, Any]) -> dict[str, int]:
    """``{"db0_keys": n, ...}`` plus ``keys_total`` from the keyspace section (``db0: {keys: n}``)."""
    per_db = {
        f"{name}_keys": stats.get("keys", 0)
        for name, stats in info.items()
        if name.startswith("db") and name[2:].isdigit() and isinstance(stats, Mapping)
    }
    return {**per_db, "keys_total": sum(per_db.values())}


def command_counters(info: Mapping[str, Any], commands: Iterable[str]) -> dict[str, int | None]:
    """Cumulative ``calls`` and ``usec`` per command of interest (None if never called yet)."""
    counters: dict[str, int | None] = {}
    for command in commands:
        stats = info.get(f"cmdstat_{command.lower()}") or {}
        counters[f"cmd_{command.lower()}_calls"] = stats.get("calls")
        counters[f"cmd_{command.lower()}_usec"] = stats.get("usec")
    return counters


class RedisSampler(Sampler):
    """``INFO all`` once per second.

    ``commands``: commands whose ``commandstats`` to report, e.g. ``("lpush", "lmove")``; each
    gives ``cmd_<name>_calls_per_s`` and ``cmd_<name>_usec_per_call`` (mean server time per call
    over the last interval, µs). ``client_factory`` builds the client (tests pass a fake).
    """

    name = "redis"

    def __init__(
        self,
        url: str,
        commands: Iterable[str] = (),
        client_factory: Callable[[str], Any] = default_client,
    ) -> None:
        self.url = url
        self.commands = [command.lower() for command in commands]
        self.client_factory = client_factory
        self.client: Any = None
        self.counters = CounterRates()
        self._previous_commands: dict[str, int | None] = {}

    def sample(self, now: float) -> dict[str, Any]:
        """One row of levels, per-second rates, keyspace and per-command figures."""
        if self.client is None:
            self.client = self.client_factory(self.url)
        info = self.client.info("all")
        levels = {key: info.get(key) for key in LEVELS}
        rates = self.counters.rates(now, {key: info.get(key) for key in COUNTERS})
        return {**levels, **rates, **keyspace_keys(info), **self._commands(info, now)}

    def _commands(self, info: Mapping[str, Any], now: float) -> dict[str, Any]:
        counters = command_counters(info, self.commands)
        calls = {
            f"cmd_{command}_calls": counters[f"cmd_{command}_calls"] for command in self.commands
        }
        row = self.counters.rates(now, calls)
        row.update(
            {
                f"cmd_{command}_usec_per_call": self._usec_per_call(command, counters)
                for command in self.commands
            }
        )
        self._previous_commands = counters
        return row

    def _usec_per_call(self, command: str, counters: Mapping[str, int | None]) -> float | None:
        """Mean server-side µs per call in the last interval; None with no calls or on reset."""
        calls = counter_delta(
            self._previous_commands.get(f"cmd_{command}_calls"), counters[f"cmd_{command}_calls"]
        )
        usec = counter_delta(
            self._previous_commands.get(f"cmd_{command}_usec"), counters[f"cmd_{command}_usec"]
        )
        if not calls or usec is None:
            return None
        return usec / calls

    def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            # the client is being thrown away anyway
            with contextlib.suppress(Exception):
                client.close()
