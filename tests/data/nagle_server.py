"""Python's http.server, HTTP/1.1 keep-alive: the headers and the body leave in two writes, the
second held in the send queue until the client's delayed ACK (Nagle's algorithm); threads per
connection. Prints its port (tests/probes/servers.rs)."""
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
