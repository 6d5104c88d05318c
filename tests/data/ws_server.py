"""A WebSocket echo server for tests/protocols/websocket.rs, on Python's `websockets` (17.x).

Listens on a free loopback port and prints `listening PORT`. Each message is echoed back after
`--delay-ms` milliseconds (to within a few microseconds: the last 2 ms are spun). `--close` closes
every connection as soon as it opens (code 1000); `--status N` answers the upgrade with HTTP
status N instead of 101. `--ping` sends a ping before each echo (which the client must answer
with a pong).

Push mode (`--push-ms K`): after a connection's first message, the server pushes a text message
every K ms (on a fixed schedule, the last 2 ms of each wait spun), until the client closes the
connection, or after `--push-count M` messages (then it closes with code 1000). Endings:
`--close-code C` closes each connection with code C when its first message comes; `--drop`
drops the TCP connection (no close frame) when its first message comes.

JSON messages with an `id` (the client's `--ws-match id`): `--id-delays-ms A,B,C` answers each
message on its own, in any order, the echo of a message whose id is i delayed by the
(i mod n)-th of its n delays (`30,20,10,0` answers four messages sent together in reverse);
`--skip-every K` never answers a message whose id is a multiple of K; `--stray` sends a
message with the id "stray" (which answers no message) before each echo.

`--deflate` accepts permessage-deflate when the client offers it (websockets' default: the
server's window 12 bits, every message compressed); without it the server offers no extension.
"""

import argparse
import asyncio
import http
import json
import time

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Response


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--close", action="store_true")
    p.add_argument("--status", type=int)
    p.add_argument("--ping", action="store_true")
    p.add_argument("--push-ms", type=float)
    p.add_argument("--push-count", type=int, default=0)
    p.add_argument("--close-code", type=int)
    p.add_argument("--drop", action="store_true")
    p.add_argument("--id-delays-ms")
    p.add_argument("--skip-every", type=int, default=0)
    p.add_argument("--stray", action="store_true")
    p.add_argument("--deflate", action="store_true")
    args = p.parse_args()
    asyncio.run(run(args))


async def until(deadline):
    """Waits until `deadline` (time.monotonic()): asyncio's timers wake up to 1 ms late (epoll's
    millisecond timeout, rounded up): sleep to 2 ms before the deadline, then spin to it."""
    await asyncio.sleep(max(0.0, deadline - time.monotonic() - 0.002))
    while time.monotonic() < deadline:
        pass


async def push(ws, args):
    """Pushes a message every --push-ms on a fixed schedule from now: until the client closes,
    or --push-count of them, then a close with code 1000."""
    period = args.push_ms / 1000.0
    due = time.monotonic()
    sent = 0
    try:
        while args.push_count == 0 or sent < args.push_count:
            due += period
            await until(due)
            await ws.send(f"pushed {sent}")
            sent += 1
        await ws.close(1000, "done")
    except ConnectionClosed:
        pass


def id_of(message):
    """The integer `id` of a JSON message, or None."""
    try:
        value = json.loads(message).get("id")
    except (ValueError, AttributeError):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


async def by_id(ws, args):
    """Answers each message on its own task: after its id's delay, unless its id is skipped."""
    delays = [float(d) / 1000.0 for d in (args.id_delays_ms or "0").split(",")]
    tasks = set()

    async def answer(message, i):
        delay = delays[i % len(delays)] if i is not None else 0.0
        if delay:
            await until(time.monotonic() + delay)
        try:
            if args.stray:
                await ws.send(json.dumps({"id": "stray"}))
            await ws.send(message)
        except ConnectionClosed:
            pass

    try:
        async for message in ws:
            i = id_of(message)
            if args.skip_every and i is not None and i % args.skip_every == 0:
                continue
            task = asyncio.create_task(answer(message, i))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    except ConnectionClosed:
        pass


async def run(args):
    delay = args.delay_ms / 1000.0

    async def echo(ws):
        if args.close:
            await ws.close(1000, "bye")
            return
        if args.push_ms or args.close_code or args.drop:
            try:
                await ws.recv()
            except ConnectionClosed:
                return
            if args.close_code:
                await ws.close(args.close_code, "closing")
            elif args.drop:
                ws.transport.abort()
            else:
                await push(ws, args)
            return
        if args.id_delays_ms or args.skip_every or args.stray:
            await by_id(ws, args)
            return
        async for message in ws:
            if delay:
                await until(time.monotonic() + delay)
            if args.ping:
                await ws.ping(b"ping?")
            await ws.send(message)

    def refuse(connection, request):
        if args.status is None:
            return None
        status = http.HTTPStatus(args.status)
        body = f"{status.value} {status.phrase}\n".encode()
        headers = Headers([("Content-Length", str(len(body)))])
        return Response(status.value, status.phrase, headers, body)

    async with serve(
        echo,
        "127.0.0.1",
        0,
        process_request=refuse,
        compression="deflate" if args.deflate else None,
        max_size=None,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    main()
