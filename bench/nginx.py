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



class Nginx:
    def __init__(self, cpu="0"):
        self.cpu = cpu

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="reqlife-bench-")
        self.port = free_port()
        conf = f"{self.tmp}/nginx.conf"
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(tmp=self.tmp, port=self.port))
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
