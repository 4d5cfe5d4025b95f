"""A system's own load tool as a load: pgbench, redis-benchmark (C), vegeta (Go, HTTP).

The harness's load driver (``load.driver``) times Python workers; a tool load times nothing
itself: the tool runs as a subprocess, its process (and children) is the client side the
samplers watch, and its output is parsed into the same ``RunResult`` the driver produces, so
``studies.runner.run_tool_recorded`` writes the same run record. ``ToolLoad.describe()`` is
what the record says about the tool: its name, version and every command line exactly as run.
"""

from pglimits_core.load.tools.pgbench import PgbenchLoad, pgbench_binary
from pglimits_core.load.tools.process import ToolCommand, ToolLoad, ToolOutput, ToolProcess
from pglimits_core.load.tools.redis_benchmark import RedisBenchmarkLoad, redis_benchmark_binary
from pglimits_core.load.tools.vegeta import HttpTarget, VegetaLoad, vegeta_binary

__all__ = ["HttpTarget", "PgbenchLoad", "RedisBenchmarkLoad", "ToolCommand", "ToolLoad", "ToolOutput", "ToolProcess",
           "VegetaLoad", "pgbench_binary", "redis_benchmark_binary", "vegeta_binary"]
