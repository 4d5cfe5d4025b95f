"""The ceiling's listeners around a C tool: ``python -m pglimits_core.workloads.pubsub.ceiling_listen
--system S --channel C --listeners N --ledger DIR -- TOOL ARGV...``.

Starts ``N`` listener processes — the study's own subscriber operation (``ops.SubscribeOp``:
the same receive loop, drain and ledger as a fan-out point's subscribers) — waits until every
one is listening, runs the tool (its output goes straight to this process's stdout and stderr),
then tells the listeners to stop: each reads on until the channel is quiet and writes its tally
into ``DIR``. The tool and the listeners are this process's children, so the run's samplers
count them all as the client side. The server's URL comes from the environment
(``PGLIMITS_LISTEN_URL``), never the recorded command line. Exits with the tool's code (2 when
a listener could not listen, without running the tool).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
from typing import Any

from pglimits_core.workloads.pubsub.ops import DRAIN_LIMIT_S, SubscribeOp

MODULE = "pglimits_core.workloads.pubsub.ceiling_listen"
URL_ENV = "PGLIMITS_LISTEN_URL"
LISTEN_TIMEOUT_S = 30


def launcher_argv(system: str, channel: str, listeners: int, ledger: str) -> list[str]:
    """The argv that runs a tool (appended after it) with ``listeners`` listeners attached."""
    return [sys.executable, "-m", MODULE, "--system", system, "--channel", channel,
            "--listeners", str(listeners), "--ledger", ledger, "--"]


def listen(system: str, url: str, channel: str, ledger: str, tag: str, ready: Any, stop: Any) -> None:
    """One listener: listen, say so (None, or why not), receive until told to stop, write its tally."""
    op = SubscribeOp(system, url, channel, ledger, 0.0, 0.0, tag=tag)
    try:
        op.open()
    except Exception as error:  # reported by the launcher, which then runs no tool
        ready.put(f"{tag}: {type(error).__name__}: {error}")
        return
    ready.put(None)
    launcher = os.getppid()
    # a launcher killed at its timeout cannot tell us to stop: then stop without it
    while not stop.is_set() and os.getppid() == launcher:
        op()
    op.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ceiling_listen")
    for flag in ("--system", "--channel", "--ledger"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--listeners", type=int, required=True)
    parser.add_argument("tool", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    tool = args.tool[1:] if args.tool[:1] == ["--"] else args.tool
    ctx = multiprocessing.get_context("fork")
    ready, stop = ctx.Queue(), ctx.Event()
    listeners = [ctx.Process(target=listen, args=(args.system, os.environ[URL_ENV], args.channel, args.ledger,
                                                  f"s{index}", ready, stop)) for index in range(args.listeners)]
    for process in listeners:
        process.start()
    problems = [problem for problem in (ready.get(timeout=LISTEN_TIMEOUT_S) for _ in listeners) if problem]
    code = 2 if problems else subprocess.run(tool).returncode
    if problems:
        print(f"ceiling listeners could not listen: {'; '.join(problems)}", file=sys.stderr, flush=True)
    stop.set()
    for process in listeners:
        process.join(timeout=DRAIN_LIMIT_S + 10)
        if process.is_alive():  # our own child, stuck past its drain bound
            process.kill()
    return code


if __name__ == "__main__":
    sys.exit(main())
