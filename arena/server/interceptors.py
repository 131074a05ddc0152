"""The token check that stands in front of every call of the gateway."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

import grpc

from arena.server.auth import Authenticator, Identity, Verdict
from arena.server.metrics import GatewayMetrics

BOT_SERVICE = "thousand.v1.BotService"
ORGANISER_SERVICE = "thousand.v1.OrganiserService"
#: Takes a bot's token or the organiser's; the service decides what each may do.
HOSTED_SERVICE = "thousand.v1.HostedService"

#: A valid token on the service of the other side: the failure the metrics count, and
#: what the caller is told.
_WRONG_TOKEN: dict[tuple[str, Verdict], tuple[str, str]] = {
    (ORGANISER_SERVICE, Verdict.BOT): (
        "bot_token_on_organiser",
        "a bot token cannot call the organiser service; use the organiser token",
    ),
    (BOT_SERVICE, Verdict.ORGANISER): (
        "organiser_token_on_bot",
        "the organiser token cannot play; register a bot and use its token",
    ),
}


def _refusal(
    handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str
) -> grpc.RpcMethodHandler:
    """A handler of the same shape as ``handler`` that only refuses the call."""

    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> NoReturn:
        await context.abort(code, message)
        raise AssertionError("abort returned")  # pragma: no cover

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)


class TokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Bot service: a bot token. Organiser service: the organiser token. Health and
    reflection stay open, as load balancers and tools expect."""

    def __init__(self, auth: Authenticator, metrics: GatewayMetrics) -> None:
        self.auth = auth
        self.metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        service = handler_call_details.method.lstrip("/").partition("/")[0]
        handler = await continuation(handler_call_details)
        if handler is None or service not in (BOT_SERVICE, ORGANISER_SERVICE, HOSTED_SERVICE):
            return handler
        identity: Identity = self.auth.identify(handler_call_details.invocation_metadata)
        verdict = identity.verdict
        if verdict not in (Verdict.BOT, Verdict.ORGANISER):
            self.metrics.auth_failure(verdict.value)
            return _refusal(handler, grpc.StatusCode.UNAUTHENTICATED, identity.message)
        wrong = _WRONG_TOKEN.get((service, verdict))
        if wrong is not None:
            failure, message = wrong
            self.metrics.auth_failure(failure)
            return _refusal(handler, grpc.StatusCode.PERMISSION_DENIED, message)
        return handler
