"""A WebSocket server that misbehaves on purpose, for tests/protocols/websocket_servers.rs: raw
asyncio sockets, no WebSocket library (a library would refuse to send what these send).

Listens on a free loopback port and prints `listening PORT`. Every connection's upgrade is
answered with a proper `101 Switching Protocols` (the key's Sec-WebSocket-Accept); then, for each
message the client sends, `--mode`:

  silent     never replies (the client's frames are read and dropped)
  bad-utf8   replies with a text frame whose payload is not UTF-8 (0xC3 0x28)
  big        replies with a binary message of `--size` bytes
  drop       closes the TCP connection at once after the 101, with no close frame
  rsv1       replies with a text frame with RSV1 set (permessage-deflate's bit), never agreed
  extension  answers the upgrade with `Sec-WebSocket-Extensions: x-unknown` (never offered)
  bomb       agrees to permessage-deflate whatever the offer, and replies with `--size` zero
             bytes deflated (a few KiB on the wire)
"""

import argparse
import asyncio
import base64
import hashlib
import struct
import zlib

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def accept_of(key):
    return base64.b64encode(hashlib.sha1(key + GUID).digest())


def frame(opcode, payload):
    """One unmasked server frame, FIN set."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


async def read_frame(reader):
    """One client frame: (opcode, payload unmasked)."""
    b0, b1 = await reader.readexactly(2)
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
    data = await reader.readexactly(n)
    return b0 & 0x0F, bytes(c ^ mask[i % 4] for i, c in enumerate(data))


def deflated(data):
    """`data` as one permessage-deflate message: raw deflate, synced, its tail taken off."""
    z = zlib.compressobj(wbits=-15)
    return (z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]


async def upgrade(reader, writer, extension=b""):
    head = await reader.readuntil(b"\r\n\r\n")
    key = b""
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"sec-websocket-key":
            key = value.strip()
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept_of(key) + b"\r\n" + extension + b"\r\n"
    )
    await writer.drain()


def main():
    p = argparse.ArgumentParser()
    modes = ["silent", "bad-utf8", "big", "drop", "rsv1", "extension", "bomb"]
    p.add_argument("--mode", choices=modes, required=True)
    p.add_argument("--size", type=int, default=1 << 20)
    args = p.parse_args()
    asyncio.run(run(args))


async def run(args):
    big = frame(0x2, b"b" * args.size)
    bad = frame(0x1, b"\xc3\x28")
    rsv1 = frame(0x40 | 0x1, deflated(b"hello"))
    bomb = frame(0x40 | 0x2, deflated(bytes(args.size))) if args.mode == "bomb" else b""
    extension = {
        "extension": b"Sec-WebSocket-Extensions: x-unknown\r\n",
        "bomb": b"Sec-WebSocket-Extensions: permessage-deflate\r\n",
    }.get(args.mode, b"")
    replies = {"bad-utf8": bad, "big": big, "rsv1": rsv1, "bomb": bomb, "extension": big}

    async def serve(reader, writer):
        try:
            await upgrade(reader, writer, extension)
            if args.mode == "drop":
                return
            while True:
                opcode, payload = await read_frame(reader)
                if opcode == 0x8:
                    writer.write(frame(0x8, payload[:2]))
                    await writer.drain()
                    return
                if opcode == 0x9:
                    writer.write(frame(0xA, payload))
                elif opcode in (0x1, 0x2) and args.mode in replies:
                    writer.write(replies[args.mode])
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    main()
