"""A minimal HTTP/3 server on aioquic, for tests/protocols/http3.rs: a second HTTP/3 implementation
besides the embedded target and caddy.

    python3 h3_server.py PORT CERT KEY

Listens on 127.0.0.1:PORT (UDP), prints "listening" once bound, and answers every request:
/delay/MS waits MS milliseconds, then answers "delayed"; any other path answers
"Hello World!". Each response carries `server-timing: app;dur=0.5`. A request's body is read
to its end first.
"""

import asyncio
import sys

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated, QuicEvent


class Handler(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.paths = {}

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                headers = dict(e.headers)
                path = headers.get(b":path", b"/").decode()
                self.paths[e.stream_id] = path
                if TRACE_LOG:
                    TRACE_LOG.write(headers.get(b"traceparent", b"-").decode() + "\n")
                    TRACE_LOG.flush()
                if e.stream_ended:
                    self.answer(e.stream_id)
            elif isinstance(e, DataReceived) and e.stream_ended:
                self.answer(e.stream_id)

    def answer(self, stream_id: int) -> None:
        path = self.paths.pop(stream_id, "/")
        delay_ms = 0.0
        body = b"Hello World!"
        if path.startswith("/delay/"):
            delay_ms = float(path[len("/delay/"):])
            body = b"delayed"
        asyncio.get_running_loop().call_later(
            delay_ms / 1000.0, self.send, stream_id, body
        )

    def send(self, stream_id: int, body: bytes) -> None:
        self.h3.send_headers(
            stream_id,
            [
                (b":status", b"200"),
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(body)).encode()),
                (b"server-timing", b"app;dur=0.5"),
            ],
        )
        self.h3.send_data(stream_id, body, end_stream=True)
        self.transmit()


async def main(port: int, cert: str, key: str) -> None:
    config = QuicConfiguration(alpn_protocols=H3_ALPN, is_client=False)
    config.load_cert_chain(cert, key)
    await serve("127.0.0.1", port, configuration=config, create_protocol=Handler)
    print("listening", flush=True)
    await asyncio.Future()


# An optional fourth argument: a file each request's traceparent header is written to.
TRACE_LOG = open(sys.argv[4], "a") if len(sys.argv) > 4 else None

if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
