"""An HTTP/1.1 server instrumented with OpenTelemetry's SDK and its WSGI instrumentation, for
tests/protocols/trace.rs: each request becomes a server span whose parent is the request's W3C
`traceparent` (the SDK's default sampler follows the parent's sampled flag). Each exported
(sampled) span is written to SPANS as one line `TRACE_ID SPAN_ID PARENT_SPAN_ID`; each request's
raw `traceparent` header is written to HEADERS as it arrives, sampled or not.

    python3 otel_server.py PORT_FILE SPANS HEADERS

It listens on a free loopback port, writes that port to PORT_FILE, and serves until killed.
"""

import sys
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from opentelemetry import trace
from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileExporter(SpanExporter):
    """Writes each span's ids, one line per span, flushed at once."""

    def __init__(self, path):
        self.out = open(path, "a")
        self.lock = threading.Lock()

    def export(self, spans):
        with self.lock:
            for s in spans:
                parent = s.parent.span_id if s.parent else 0
                self.out.write(f"{s.context.trace_id:032x} {s.context.span_id:016x} {parent:016x}\n")
            self.out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.out.close()


class Quiet(WSGIRequestHandler):
    # HTTP/1.1 with keep-alive: wsgiref's handler speaks HTTP/1.0 otherwise.
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def main():
    port_file, spans, headers = sys.argv[1:4]
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(spans)))
    trace.set_tracer_provider(provider)
    seen = open(headers, "a")
    lock = threading.Lock()

    def app(environ, start_response):
        with lock:
            seen.write(environ.get("HTTP_TRACEPARENT", "-") + "\n")
            seen.flush()
        body = b"traced\n"
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]

    server = make_server("127.0.0.1", 0, OpenTelemetryMiddleware(app), Server, Quiet)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_port))
    import os

    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
