"""nginx (Debian's package) on a free loopback port for the benchmarks: one worker, pinned
to one core, answering every request with the 12-byte body `Hello World!`, all its files in a
temporary folder. Use as a context manager; it yields the port and stops nginx on exit."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

NGINX_CONF = """
worker_processes 1;
worker_rlimit_nofile {nofile};
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections {connections}; }}
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


def wait_port(port, timeout=5.0, proc=None):
    """True once 127.0.0.1:port accepts a connection; False after `timeout` seconds, or as soon
    as `proc` (the server) has exited."""
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            return False
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

    def __init__(self, cpu="0", tls_h2=False, connections=4096):
        """`connections`: nginx's worker_connections (its open-file limit follows)."""
        self.cpu = cpu
        self.tls_h2 = tls_h2
        self.connections = connections

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="reqlife-bench-")
        self.port = free_port()
        conf = f"{self.tmp}/nginx.conf"
        text = NGINX_CONF.format(tmp=self.tmp, port=self.port, connections=self.connections,
                                 nofile=self.connections + 100)
        if self.tls_h2:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                            "-subj", "/CN=localhost", "-keyout", f"{self.tmp}/key.pem",
                            "-out", f"{self.tmp}/cert.pem"], check=True, capture_output=True)
            # Replace the plain server block with the TLS + h2 one.
            text = text[:text.index("    server {")] + TLS_H2_SERVER.format(tmp=self.tmp, port=self.port)
        with open(conf, "w") as f:
            f.write(text)
        self.stderr = open(f"{self.tmp}/stderr.log", "wb")
        # Its own session: a Ctrl-C in the terminal reaches only this script, which then stops
        # nginx itself (and, if it must, kills the whole group, workers included).
        self.proc = subprocess.Popen(["taskset", "-c", self.cpu, "nginx", "-c", conf],
                                     stdout=subprocess.DEVNULL, stderr=self.stderr,
                                     start_new_session=True)
        try:
            up = wait_port(self.port, 5.0, self.proc)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        if not up:
            log = ""
            for name in ("stderr.log", "error.log"):
                try:
                    with open(f"{self.tmp}/{name}", errors="replace") as f:
                        log += f.read()
                except OSError:
                    pass
            self.__exit__(None, None, None)
            sys.exit("nginx did not start listening on 127.0.0.1:%d within 5 s\n%s" % (self.port, log))
        return self.port

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                self.proc.wait()
        self.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False
