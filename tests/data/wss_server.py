"""A WebSocket echo server over TLS (`wss://`) for tests/protocols/websocket_servers.rs, on
Python's `websockets` with an `ssl` context: the certificate and key from `--cert` and `--key`
(PEM files; the test makes a self-signed pair for 127.0.0.1).

Listens on a free loopback port and prints `listening PORT`; each message is echoed back at once.
"""

import argparse
import asyncio
import ssl

from websockets.asyncio.server import serve


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    args = p.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    asyncio.run(run(context))


async def run(context):
    async def echo(ws):
        async for message in ws:
            await ws.send(message)

    async with serve(echo, "127.0.0.1", 0, ssl=context, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    main()
