"""A delaying TCP relay: the "wire" between a rig's hosts, in user space.

Where the kernel has ``netem`` a qdisc delays packets on a link; this one does not (``tc
qdisc add ... netem`` says "Specified qdisc kind is unknown"), so the rig carries every
TCP connection between hosts through a relay instead. One relay process serves the
connections *to* one host: it listens on the host's address in the rig's network
namespace, connects to the host itself over its link, and holds every chunk of bytes, in
each direction, for the one-way delay between the two hosts before passing it on.

* The delay is a delay line, not a rate limit: chunks keep their order and their spacing,
  and each waits only its own delay, so a burst of requests costs one delay, as on a wire.
* A new connection's first bytes wait one round trip more, as a TCP handshake would.
* The delays come from a JSON file, read again on ``SIGHUP``: a benchmark changes them
  between phases without breaking a connection.
* A connection ends as it would on the wire: an end of stream (or a reset) on one side is
  passed to the other after the delay; a host that cannot be reached (its link down: a
  partition) leaves the connection hanging, as TCP does, until its link is back.

Run as ``python -m arena.rigs.relay CONFIG.json`` inside the network namespace; the
config::

    {"target": "data",
     "listen": [["10.100.0.1", 6379, "10.99.1.2", 6379], ...],
     "peers": {"10.99.3.2": "w1", ...},
     "delay_ms": 20.0,
     "extra_ms": {"bots": 5.0},
     "pairs_ms": {"bots gw1": 0.0}}

A chunk from host S to the target T waits ``pairs_ms["S T"]`` (or ``"T S"``) when given,
else ``delay_ms + extra_ms[S] + extra_ms[T]``; none from T to itself, nor from an address
that is no host's (the operator's console).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("arena.rigs.relay")

CHUNK = 65536
#: Chunks held per direction before the relay stops reading (TCP's own flow control then
#: pushes back on the sender).
QUEUE_CHUNKS = 256
CONNECT_TIMEOUT_S = 60.0


@dataclass
class Delays:
    """One-way delays between hosts, in seconds."""

    target: str
    delay_s: float = 0.0
    extra_s: dict[str, float] = field(default_factory=dict)
    peers: dict[str, str] = field(default_factory=dict)
    pairs_s: dict[frozenset[str], float] = field(default_factory=dict)

    def one_way(self, peer: str) -> float:
        source = self.peers.get(peer)
        if source is None or source == self.target:
            return 0.0
        pair = self.pairs_s.get(frozenset((source, self.target)))
        if pair is not None:
            return pair
        return self.delay_s + self.extra_s.get(source, 0.0) + self.extra_s.get(self.target, 0.0)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Delays:
        return cls(
            target=str(config["target"]),
            delay_s=float(config.get("delay_ms", 0.0)) / 1000.0,
            extra_s={str(k): float(v) / 1000.0 for k, v in config.get("extra_ms", {}).items()},
            peers={str(k): str(v) for k, v in config.get("peers", {}).items()},
            pairs_s={frozenset(str(k).split()): float(v) / 1000.0
                     for k, v in config.get("pairs_ms", {}).items()},
        )


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a reset (no orderly end): what a peer sees when the other end is gone."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


class Relay:
    def __init__(self, config_path: Path) -> None:
        self.config_path = config_path
        config = json.loads(config_path.read_text())
        self.listen = [tuple(x) for x in config["listen"]]
        self.delays = Delays.from_config(config)
        self.connections = 0

    def reload(self) -> None:
        try:
            self.delays = Delays.from_config(json.loads(self.config_path.read_text()))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("relay: keeping the old delays, the config cannot be read: %s", exc)
            return
        log.info("relay to %s: one-way delay now %.1f ms", self.delays.target,
                 self.delays.delay_s * 1000)

    async def serve(self) -> None:
        servers = []
        for host, port, to_host, to_port in self.listen:
            server = await asyncio.start_server(
                functools.partial(self._connection, to_host=to_host, to_port=to_port),
                host=host, port=port, reuse_address=True, backlog=1024,
            )
            servers.append(server)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, self.reload)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"relay to {self.delays.target} ready on "
              + ", ".join(f"{h}:{p}" for h, p, _, _ in self.listen), flush=True)
        await stop.wait()
        for server in servers:
            server.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          to_host: str, to_port: int) -> None:
        peer = str(writer.get_extra_info("peername")[0])
        one_way = self.delays.one_way(peer)
        _nodelay(writer)
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(to_host, to_port), CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError):
            _reset(writer)
            return
        _nodelay(up_writer)
        self.connections += 1
        handshake = 2 * one_way
        try:
            await asyncio.gather(
                self._pipe(reader, up_writer, peer, handshake),
                self._pipe(up_reader, writer, peer, 0.0),
            )
        finally:
            self.connections -= 1
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    peer: str, first_extra: float) -> None:
        # Each item: when to pass it on, and the bytes (b"" for the end of the stream,
        # None for a reset).
        queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue(QUEUE_CHUNKS)

        async def read() -> None:
            extra = first_extra
            try:
                while True:
                    data = await reader.read(CHUNK)
                    due = time.monotonic() + self.delays.one_way(peer) + extra
                    extra = 0.0
                    await queue.put((due, data))
                    if not data:
                        return
            except (OSError, asyncio.IncompleteReadError):
                await queue.put((time.monotonic() + self.delays.one_way(peer), None))

        reading = asyncio.ensure_future(read())
        try:
            while True:
                due, data = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if data is None:
                    _reset(writer)
                    return
                if not data:
                    if writer.can_write_eof():
                        with contextlib.suppress(OSError):
                            writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except OSError:
            reading.cancel()
        finally:
            if not reading.done():
                reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reading


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m arena.rigs.relay CONFIG.json", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    relay = Relay(Path(args[0]))
    asyncio.run(relay.serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
