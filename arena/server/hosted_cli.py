"""``arena bot submit``, ``arena bot versions`` and ``arena bot logs``: a hosted bot's
author at the shell, with the bot's own token (see :mod:`arena.server.hosted`)."""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import sys
import time
from collections.abc import Iterator

import grpc
from thousand_bot.proto.thousand.v1 import hosted_pb2, hosted_pb2_grpc

from arena import exitcodes
from arena.hosted.bundle import Bundle
from arena.hosted.status import LABELS
from arena.server.limits import escape

CHUNK = 256 << 10
SHOW_STATUS = {"checking": "checking", "passed": "passed", "failed": "FAILED",
               "suspended": "SUSPENDED"}


def _chunks(name: str, data: bytes) -> Iterator[hosted_pb2.SubmitBotRequest]:
    yield hosted_pb2.SubmitBotRequest(header=hosted_pb2.SubmitHeader(name=name,
                                                                     filename="bot.tar.gz"))
    for i in range(0, len(data), CHUNK):
        yield hosted_pb2.SubmitBotRequest(chunk=data[i:i + CHUNK])


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def _line(v: hosted_pb2.HostedVersion) -> str:
    return (f"{v.hash[:12]}  {_size(v.size_bytes):>10}  {v.runtime:<7} {_when(v.created_unix_ms)}"
            f"  {SHOW_STATUS.get(v.status, v.status)}")


def hosted_command(args: argparse.Namespace, channel: grpc.Channel,
                   meta: list[tuple[str, str]], bundle: Bundle | None) -> int:
    stub = hosted_pb2_grpc.HostedServiceStub(channel)
    if args.command == "submit":
        assert bundle is not None
        sent = stub.SubmitBot(_chunks(args.name, gzip.compress(bundle.data, mtime=0)),
                              metadata=meta, timeout=120)
        v = sent.version
        what = "submitted" if sent.created else "already submitted"
        print(f"{what} {args.name} version {v.hash[:12]} ({v.runtime}, entry {v.entry}, "
              f"{v.files} files, {_size(v.size_bytes)})")
        if args.no_wait or v.status != "checking":
            return _verdict(v)
        print("checking: a short match against built-in bots, in the sandbox ...", flush=True)
        deadline = time.monotonic() + args.check_timeout
        # A reason while still checking: the arena could not play the check (its fault);
        # the version waits for the next try, and the author is told now, not at the bound.
        while v.status == "checking" and not v.reason and time.monotonic() < deadline:
            time.sleep(0.5)
            found = [x for x in stub.ListVersions(
                hosted_pb2.ListVersionsRequest(name=args.name), metadata=meta,
                timeout=10).versions if x.hash == v.hash]
            if found:
                v = found[0]
        if v.status == "checking" and v.reason:
            print(f"arena bot submit: {escape(v.reason)}; it is checked again when the gateway "
                  f"next starts (see: arena bot versions {args.name})", file=sys.stderr)
            return exitcodes.UNAVAILABLE
        if v.status == "checking":
            print(f"arena bot submit: the check did not finish within {args.check_timeout:g} "
                  f"s; see later: arena bot versions {args.name}", file=sys.stderr)
            return exitcodes.FAILED
        return _verdict(v)
    if args.command == "versions":
        versions = stub.ListVersions(hosted_pb2.ListVersionsRequest(name=args.name),
                                     metadata=meta, timeout=10).versions
        if args.json:
            print(json.dumps([{
                "hash": v.hash, "size": v.size_bytes, "files": v.files, "runtime": v.runtime,
                "entry": v.entry, "created_unix_ms": v.created_unix_ms, "status": v.status,
                "reason": v.reason, "check_match": v.check_match_id,
            } for v in versions], indent=2))
            return exitcodes.OK
        if not versions:
            print(f"{args.name} has no hosted version (submit one: arena bot submit "
                  f"{args.name} PATH)")
            return exitcodes.OK
        print(f"{'version':<12}  {'size':>10}  {'runtime':<7} {'submitted':<23}  status")
        for v in versions:
            print(_line(v))
            if v.reason:
                print(f"{'':14}{escape(v.reason)}")
        return exitcodes.OK
    logs = stub.GetLogs(hosted_pb2.GetLogsRequest(name=args.name, match_id=args.match,
                                                  limit=max(1, args.limit)),
                        metadata=meta, timeout=10).logs
    if not logs:
        print(f"no logs of {args.name}" + (f" in match {args.match}" if args.match else ""))
        return exitcodes.OK
    for entry in logs:
        label = LABELS.get(entry.status, entry.status)
        detail = f": {escape(entry.detail)}" if entry.detail else ""
        print(f"== match {entry.match_id}, seat {entry.seat}, version {entry.version[:12]}: "
              f"{label}{detail}")
        # The bot's own output, shown to its author: escaped, it cannot drive the terminal.
        lines = entry.log.splitlines() or ["(no output)"]
        print("\n".join(escape(line) for line in lines))
    return exitcodes.OK


def _verdict(v: hosted_pb2.HostedVersion) -> int:
    if v.status == "passed":
        print(f"passed its check: hosted:{v.bot} now plays version {v.hash[:12]}")
        return exitcodes.OK
    print(f"{SHOW_STATUS.get(v.status, v.status)}: {escape(v.reason)}")
    return exitcodes.OK if v.status == "checking" else exitcodes.FAILED
