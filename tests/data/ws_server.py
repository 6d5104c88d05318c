"""A WebSocket echo server for tests/protocols/websocket.rs, on Python's `websockets` (17.x).

Listens on a free loopback port and prints `listening PORT`. Each message is echoed back after
`--delay-ms` milliseconds (to within a few microseconds: the last 2 ms are spun). `--close` closes every connection as soon as it opens (code 1000);
`--status N` answers the upgrade with HTTP status N instead of 101. `--ping` sends a ping
before each echo (which the client must answer with a pong).
"""

import argparse
import asyncio
import http
import time

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--close", action="store_true")
    p.add_argument("--status", type=int)
    p.add_argument("--ping", action="store_true")
    args = p.parse_args()
    asyncio.run(run(args))


async def run(args):
    delay = args.delay_ms / 1000.0

    async def echo(ws):
        if args.close:
            await ws.close(1000, "bye")
            return
        async for message in ws:
            if delay:
                # asyncio's timers wake up to 1 ms late (epoll's millisecond timeout, rounded
                # up): sleep to 2 ms before the deadline, then spin to it.
                deadline = time.monotonic() + delay
                await asyncio.sleep(max(0.0, delay - 0.002))
                while time.monotonic() < deadline:
                    pass
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
        echo, "127.0.0.1", 0, process_request=refuse, compression=None, max_size=None
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    main()
