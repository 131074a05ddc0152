"""The outbox in front of each bot's stream: order, waiting, and a cancelled writer."""

from __future__ import annotations

import asyncio

from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.server.hub import Outbox


def _msg(n: int) -> bot_pb2.PlayResponse:
    return bot_pb2.PlayResponse(error=bot_pb2.Error(request_id=str(n)))


def test_items_come_out_in_order_and_qsize_counts_them() -> None:
    async def main() -> list[str]:
        box = Outbox()
        for n in range(5):
            box.put_nowait(_msg(n))
        assert box.qsize() == 5
        out = []
        for _ in range(5):
            item = await box.get()
            assert isinstance(item, bot_pb2.PlayResponse)
            out.append(item.error.request_id)
        assert box.qsize() == 0
        return out

    assert asyncio.run(main()) == ["0", "1", "2", "3", "4"]


def test_get_waits_for_the_next_put() -> None:
    async def main() -> None:
        box = Outbox()
        getting = asyncio.ensure_future(box.get())
        await asyncio.sleep(0)
        assert not getting.done()
        box.put_nowait(None)  # the end-of-stream marker is an item like any other
        assert await asyncio.wait_for(getting, 1) is None

    asyncio.run(main())


def test_a_cancelled_get_loses_nothing() -> None:
    async def main() -> None:
        box = Outbox()
        getting = asyncio.ensure_future(box.get())
        await asyncio.sleep(0)
        getting.cancel()
        await asyncio.gather(getting, return_exceptions=True)
        box.put_nowait(_msg(7))  # the cancelled waiter is skipped, the item kept
        assert box.qsize() == 1
        item = await asyncio.wait_for(box.get(), 1)
        assert isinstance(item, bot_pb2.PlayResponse) and item.error.request_id == "7"

    asyncio.run(main())


def test_many_puts_while_waiting_wake_the_writer_once_and_keep_all() -> None:
    async def main() -> list[str]:
        box = Outbox()
        getting = asyncio.ensure_future(box.get())
        await asyncio.sleep(0)
        for n in range(3):
            box.put_nowait(_msg(n))
        first = await getting
        rest = [await box.get(), await box.get()]
        return [m.error.request_id for m in (first, *rest) if isinstance(m, bot_pb2.PlayResponse)]

    assert asyncio.run(main()) == ["0", "1", "2"]
