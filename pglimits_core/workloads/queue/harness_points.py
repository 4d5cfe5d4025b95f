"""The ``harness_bench`` experiment: ``pglimits bench harness`` as points of the queue study.

Per variant and client count, two run records back to back: the harness's closed-loop burn-down
(``throughput_point``) and the same statements through the system's own C tool
(``ceiling_point``), each on a fresh queue, prefilled and settled the same way. Their ratio is
this machine's harness/C-tool ratio, recorded with every block of records (the ``harness_bench``
table); the ``ceiling`` experiment sets the tool beside the throughput sweep instead, whose runs
were taken at another time of the study.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.queue.ceiling import ceiling_point, tool_variants
from pglimits_core.workloads.queue.points import QueueVariant, throughput_point

EXPERIMENT = "harness_bench"


def harness_bench_points(section: Any, variants: list[QueueVariant]) -> list[Point]:
    """The harness side then the tool side of every (variant, clients) of ``harness_bench:``."""
    if section is None:
        return []
    points = []
    for v in tool_variants(section, variants, EXPERIMENT):
        for clients in section.clients:
            points += [point(EXPERIMENT, v, throughput_point, consumers=clients, prefill_count=section.prefill,
                             duration_s=section.duration_s, warmup_s=section.warmup_s, recorded_as=EXPERIMENT),
                       point(EXPERIMENT, v, ceiling_point, clients=clients, duration_s=section.duration_s,
                             warmup_s=section.warmup_s, prefill_count=section.prefill,
                             requests=section.requests, recorded_as=EXPERIMENT)]
    return points
