"""``arena doctor``: what isolates a hosted bot on this host, and what is missing.

It runs the same checks a worker runs before its first sandbox (bubblewrap, the cgroup
mechanism, a uid per seat, the seccomp filter), then starts one real sandbox and times it,
and lists the runtimes hosted bots can use. Exit 0 when hosted bots can run here, 1 when
they cannot (the line says why).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

from arena import exitcodes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena doctor",
        description="Say which isolation hosted bots get on this host (sandbox, cgroups, a "
        "uid per seat, seccomp) and which runtimes are installed.",
    )
    parser.add_argument("--json", action="store_true", help="the same as JSON")
    return parser


async def _probe() -> float:
    """Start one sandbox running /bin/true; the seconds until it was ready."""
    from arena.sandbox import Limits, Sandbox, SandboxError

    sandbox = Sandbox(Limits(wall_s=30))
    try:
        sandbox.spawn(["/bin/true"])
        ready = await sandbox.wait_ready()
    finally:
        result = await sandbox.stop() if sandbox.proc is not None else None
    if not ready or result is None or result.start_s is None:
        raise SandboxError(result.describe() if result is not None else "no sandbox started")
    return result.start_s


def doctor_main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from arena.sandbox import SandboxError, SandboxHost, SandboxUnavailable
    from arena.sandbox.runtimes import runtime_report

    report: dict[str, object] = {}
    ok = True
    try:
        host = SandboxHost.get()
        lines = host.report()
        try:
            start = asyncio.run(_probe())
            lines.append(("probe", f"a sandbox started in {start * 1000:.1f} ms"))
        except SandboxError as exc:
            ok = False
            lines.append(("probe", f"FAILED: {exc}"))
        lines += [("note", n) for n in host.notes]
    except SandboxUnavailable as exc:
        ok = False
        lines = [("sandbox", f"UNAVAILABLE: {exc}")]
    runtimes = runtime_report()
    report = {"hosted_bots": ok, "isolation": dict(lines), "runtimes": runtimes}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("hosted bots: " + ("can run on this host" if ok else "CANNOT run on this host"))
        for key, value in lines:
            print(f"  {key:<13} {value}")
        print("runtimes:")
        for name, state in runtimes.items():
            print(f"  {name:<13} {state}")
    return exitcodes.OK if ok else exitcodes.FAILED


if __name__ == "__main__":
    sys.exit(doctor_main())
