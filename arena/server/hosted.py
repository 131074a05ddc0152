"""The gateway's hosted-bot service: submissions, versions and logs, by the bot's own token.

A submission is an archive streamed in chunks; the gateway checks it (the manifest, the
entry, the size and number of files), stores it as a version in the results store it was
given (``arena serve --store``), and queues its check match. Versions are listed to their
bot's token and to the organiser; a bot's logs only ever to its own token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from thousand_bot.proto.thousand.v1 import hosted_pb2, hosted_pb2_grpc

from arena.hosted.bundle import MAX_TOTAL_BYTES, BundleError, pack_bytes
from arena.hosted.check import Checker
from arena.hosted.store import HostedStore, Version
from arena.server.auth import Authenticator, Verdict
from arena.server.limits import HELLO_NAME_MAX, brief, too_long

log = logging.getLogger(__name__)

CHUNK_MAX = 256 << 10
#: An archive may be compressed or not: twice the unpacked limit bounds what is read.
UPLOAD_MAX = 2 * MAX_TOTAL_BYTES
LOGS_MAX = 100


def version_message(v: Version) -> hosted_pb2.HostedVersion:
    return hosted_pb2.HostedVersion(
        bot=v.bot, hash=v.hash, runtime=v.runtime, entry=v.entry, size_bytes=v.size,
        files=v.files, created_unix_ms=int(v.created_at * 1000), status=v.status,
        reason=v.reason, check_match_id=v.check_match or "",
    )


class HostedService(hosted_pb2_grpc.HostedServiceServicer):
    """Hosted bots on a gateway that keeps them (``--store``)."""

    def __init__(self, auth: Authenticator, store: HostedStore | None,
                 checker: Checker | None) -> None:
        self.auth = auth
        self.store = store
        self.checker = checker

    async def _who(self, context: grpc.aio.ServicerContext[Any, Any], name: str,
                   *, organiser_too: bool = False) -> HostedStore:
        """The store, once the caller may act on bot ``name`` (else the call is aborted)."""
        problem = too_long("name", name, HELLO_NAME_MAX)
        if problem is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        identity = self.auth.identify(context.invocation_metadata())
        if identity.verdict is Verdict.ORGANISER:
            if not organiser_too:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED,
                                    "only the bot's own token may do this")
        elif identity.verdict is not Verdict.BOT or identity.bot != name:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"this token belongs to bot {identity.bot!r}, not {name!r}"
                if identity.bot else "a bot's token is needed",
            )
        if self.store is None:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this gateway keeps no hosted bots: start it with --store URL (the results "
                "store its workers use)",
            )
        assert self.store is not None
        return self.store

    async def SubmitBot(
        self,
        request_iterator: AsyncIterator[hosted_pb2.SubmitBotRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> hosted_pb2.SubmitBotResponse:
        iterator = request_iterator.__aiter__()
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no header: nothing submitted")
        if first.WhichOneof("part") != "header":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                "the first message of a submission must be its header")
        header = first.header
        store = await self._who(context, header.name)
        data = bytearray()
        async for message in iterator:
            if message.WhichOneof("part") != "chunk":
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                    "after the header, a submission carries chunks only")
            if len(message.chunk) > CHUNK_MAX:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                    f"a chunk may hold at most {CHUNK_MAX} bytes")
            data += message.chunk
            if len(data) > UPLOAD_MAX:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                    f"the archive is larger than {UPLOAD_MAX >> 20} MiB")
        try:
            bundle = await asyncio.to_thread(pack_bytes, bytes(data), header.filename[:200])
        except BundleError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, brief(str(exc)))
        version, created = await asyncio.to_thread(store.add_version, header.name, bundle)
        log.info("hosted bot %s: version %s submitted (%s, %d files, %d bytes)%s",
                 header.name, version.short, bundle.manifest.runtime, bundle.files,
                 bundle.size, "" if created else ", already known")
        if version.status == "checking" and self.checker is not None:
            self.checker.submit(version)
        return hosted_pb2.SubmitBotResponse(version=version_message(version), created=created)

    async def ListVersions(
        self,
        request: hosted_pb2.ListVersionsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> hosted_pb2.ListVersionsResponse:
        store = await self._who(context, request.name, organiser_too=True)
        versions = await asyncio.to_thread(store.versions, request.name)
        return hosted_pb2.ListVersionsResponse(versions=[version_message(v) for v in versions])

    async def GetLogs(
        self,
        request: hosted_pb2.GetLogsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> hosted_pb2.GetLogsResponse:
        store = await self._who(context, request.name)
        limit = min(LOGS_MAX, request.limit or 10)
        match = request.match_id[:200] or None
        found = await asyncio.to_thread(store.logs, request.name, match_id=match, limit=limit)
        return hosted_pb2.GetLogsResponse(logs=[
            hosted_pb2.SeatLog(match_id=run.match_id, seat=run.seat, version=run.version,
                               status=run.status, detail=run.detail, log=text)
            for run, text in found
        ])
