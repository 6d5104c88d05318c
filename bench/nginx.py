"""nginx (Debian's package) on a free loopback port for the benchmarks: one worker, pinned
to one core, answering every request with the 12-byte body `Hello World!`, all its files in a
temporary folder. Use as a context manager; it yields the port and stops nginx on exit."""

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

NGINX_CONF = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    server {{
        listen 127.0.0.1:{port};
        default_type text/plain;
        location / {{ return 200 "Hello World!"; }}
    }}
}}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False



TLS_H2_SERVER = """
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {tmp}/cert.pem;
        ssl_certificate_key {tmp}/key.pem;
        default_type text/plain;
        location / {{ return 200 "Hello World!"; }}
    }}
}}
"""


class Nginx:
    """`tls_h2=True`: HTTPS with HTTP/2 (a self-signed certificate made with openssl)."""

    def __init__(self, cpu="0", tls_h2=False):
        self.cpu = cpu
        self.tls_h2 = tls_h2

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="reqlife-bench-")
        self.port = free_port()
        conf = f"{self.tmp}/nginx.conf"
        text = NGINX_CONF.format(tmp=self.tmp, port=self.port)
        if self.tls_h2:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                            "-subj", "/CN=localhost", "-keyout", f"{self.tmp}/key.pem",
                            "-out", f"{self.tmp}/cert.pem"], check=True, capture_output=True)
            # Replace the plain server block with the TLS + h2 one.
            text = text[:text.index("    server {")] + TLS_H2_SERVER.format(tmp=self.tmp, port=self.port)
        with open(conf, "w") as f:
            f.write(text)
        self.proc = subprocess.Popen(["taskset", "-c", self.cpu, "nginx", "-c", conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if not wait_port(self.port):
            self.__exit__(None, None, None)
            sys.exit("nginx did not start listening on 127.0.0.1:%d" % self.port)
        return self.port

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False
