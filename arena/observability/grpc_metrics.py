"""Prometheus metrics for a ``grpc.aio`` server, as a server interceptor.

The metric names and labels follow the go-grpc-prometheus convention
(``grpc_server_started_total``, ``grpc_server_handled_total``,
``grpc_server_handling_seconds``; ``grpc_type`` one of ``unary``, ``client_stream``,
``server_stream``, ``bidi_stream``; ``grpc_code`` spelled as Go spells it: ``OK``,
``Unauthenticated``, ``Unavailable`` ...) so the usual gRPC dashboards and alerts work
unchanged.  Install it with ``grpc.aio.server(interceptors=[MetricsInterceptor()])``.

A stream is counted as handled when the handler returns, so ``grpc_server_handling_seconds``
measures a bot's connection stream for its whole life; that is why the histogram has
buckets up to an hour.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import grpc
import grpc.aio

from arena.observability.metrics import (
    GRPC_SERVER_HANDLED_TOTAL,
    GRPC_SERVER_HANDLING_SECONDS,
    GRPC_SERVER_STARTED_TOTAL,
)

#: Go's spelling of each status code (``codes.Code.String()``).
GO_CODE_NAMES: dict[grpc.StatusCode, str] = {
    grpc.StatusCode.OK: "OK",
    grpc.StatusCode.CANCELLED: "Canceled",
    grpc.StatusCode.UNKNOWN: "Unknown",
    grpc.StatusCode.INVALID_ARGUMENT: "InvalidArgument",
    grpc.StatusCode.DEADLINE_EXCEEDED: "DeadlineExceeded",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.PERMISSION_DENIED: "PermissionDenied",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "ResourceExhausted",
    grpc.StatusCode.FAILED_PRECONDITION: "FailedPrecondition",
    grpc.StatusCode.ABORTED: "Aborted",
    grpc.StatusCode.OUT_OF_RANGE: "OutOfRange",
    grpc.StatusCode.UNIMPLEMENTED: "Unimplemented",
    grpc.StatusCode.INTERNAL: "Internal",
    grpc.StatusCode.UNAVAILABLE: "Unavailable",
    grpc.StatusCode.DATA_LOSS: "DataLoss",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthenticated",
}
_CODE_BY_NUMBER: dict[int, grpc.StatusCode] = {code.value[0]: code for code in grpc.StatusCode}


def split_method(full_method: str) -> tuple[str, str]:
    """``/thousand.v1.BotService/Connect`` -> (``thousand.v1.BotService``, ``Connect``)."""
    service, _, method = full_method.lstrip("/").rpartition("/")
    return (service or "unknown", method or "unknown")


def rpc_type(handler: grpc.RpcMethodHandler) -> str:
    """The ``grpc_type`` label of a handler."""
    if handler.request_streaming and handler.response_streaming:
        return "bidi_stream"
    if handler.request_streaming:
        return "client_stream"
    if handler.response_streaming:
        return "server_stream"
    return "unary"


def _status_of(context: Any, error: BaseException | None) -> grpc.StatusCode:
    """The status the client will see, judged after the handler finished."""
    if isinstance(error, asyncio.CancelledError):
        # The server cancels the handler both when the client gives up and when the
        # client's deadline passes; the remaining time tells the two apart.
        remaining = getattr(context, "time_remaining", None)
        try:
            left = remaining() if callable(remaining) else None
        except Exception:
            left = None
        if isinstance(left, (int, float)) and left <= 0:
            return grpc.StatusCode.DEADLINE_EXCEEDED
        return grpc.StatusCode.CANCELLED
    code: Any = None
    code_of = getattr(context, "code", None)
    if callable(code_of):
        try:
            code = code_of()
        except Exception:
            code = None
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(code, int) and code in _CODE_BY_NUMBER:
        return _CODE_BY_NUMBER[code]
    if error is None or isinstance(error, grpc.aio.AbortError):
        return grpc.StatusCode.OK if error is None else grpc.StatusCode.UNKNOWN
    if isinstance(error, GeneratorExit):
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN


class _Call:
    """Bookkeeping of one RPC: counts its start at creation, its end once. Used as a context
    around the handler's work, so that every way out (a response, an error, a cancellation,
    a stream closed by the client) ends the call with the status the client sees."""

    __slots__ = ("_context", "_done", "_labels", "_start")

    def __init__(self, labels: tuple[str, str, str], context: Any) -> None:
        self._labels = labels
        self._context = context
        self._start = time.perf_counter()
        self._done = False
        GRPC_SERVER_STARTED_TOTAL.labels(*labels).inc()

    def finish(self, error: BaseException | None) -> None:
        if self._done:
            return
        self._done = True
        code = _status_of(self._context, error)
        GRPC_SERVER_HANDLED_TOTAL.labels(*self._labels, GO_CODE_NAMES[code]).inc()
        GRPC_SERVER_HANDLING_SECONDS.labels(*self._labels).observe(
            time.perf_counter() - self._start
        )

    def __enter__(self) -> _Call:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        self.finish(error)


def _wrap_unary_response(
    behavior: Callable[..., Any], labels: tuple[str, str, str]
) -> Callable[..., Any]:
    """Wrap a handler that returns one response (unary or client-streaming)."""
    if inspect.iscoroutinefunction(behavior):

        async def async_unary(request: Any, context: Any) -> Any:
            with _Call(labels, context):
                return await behavior(request, context)

        return async_unary

    def sync_unary(request: Any, context: Any) -> Any:
        call = _Call(labels, context)
        try:
            response = behavior(request, context)
        except BaseException as exc:
            call.finish(exc)
            raise
        if inspect.isawaitable(response):
            # A plain function returning an awaitable: the server awaits it, the call ends then.
            return _finish_after(response, call)
        call.finish(None)
        return response

    return sync_unary


async def _finish_after(awaitable: Awaitable[Any], call: _Call) -> Any:
    with call:
        return await awaitable


def _wrap_stream_response(
    behavior: Callable[..., Any], labels: tuple[str, str, str]
) -> Callable[..., Any]:
    """Wrap a handler that streams responses (server-streaming or bidirectional).

    grpc.aio accepts three shapes: an async generator, a coroutine that writes with
    ``context.write``, and (run in an executor) a plain generator.  Each keeps its shape so
    the server treats the wrapped handler exactly as the original.
    """
    if inspect.isasyncgenfunction(behavior):

        async def async_stream(request: Any, context: Any) -> AsyncIterator[Any]:
            with _Call(labels, context):
                async for response in behavior(request, context):
                    yield response

        return async_stream

    if inspect.iscoroutinefunction(behavior):

        async def async_writer(request: Any, context: Any) -> None:
            with _Call(labels, context):
                await behavior(request, context)

        return async_writer

    def sync_stream(request: Any, context: Any) -> Iterator[Any]:
        with _Call(labels, context):
            yield from behavior(request, context)

    return sync_stream


#: Each kind of handler: its behaviour's attribute, how gRPC makes one, and the wrapper that
#: records a call of that shape (one response, or a stream of them).
_HANDLER_KINDS: tuple[tuple[str, Any, Any], ...] = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler, _wrap_unary_response),
    ("stream_unary", grpc.stream_unary_rpc_method_handler, _wrap_unary_response),
    ("unary_stream", grpc.unary_stream_rpc_method_handler, _wrap_stream_response),
    ("stream_stream", grpc.stream_stream_rpc_method_handler, _wrap_stream_response),
)


def instrument_handler(handler: grpc.RpcMethodHandler, full_method: str) -> grpc.RpcMethodHandler:
    """A copy of ``handler`` whose behaviour records the three gRPC server metrics."""
    service, method = split_method(full_method)
    labels = (rpc_type(handler), service, method)
    for kind, make, wrap in _HANDLER_KINDS:
        behaviour = getattr(handler, kind)
        if behaviour is not None:
            return make(
                wrap(behaviour, labels),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler


class MetricsInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Records ``grpc_server_*`` metrics for every RPC the server handles.

    Unknown methods (no handler) are left to gRPC, which answers ``Unimplemented``; they
    are not counted, so a scanner probing random method names cannot create series.
    """

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = getattr(handler_call_details, "method", "") or ""
        if isinstance(method, bytes):
            method = method.decode("utf-8", "replace")
        return instrument_handler(handler, method)
