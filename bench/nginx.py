"""nginx (Debian's package) on a free loopback port for the benchmarks: one worker per core of
its CPU list (one by default), pinned to them, answering every request with the 12-byte body `Hello World!`, all its files in a
temporary folder. Use as a context manager; it yields the port and stops nginx on exit.

It also warns (on stderr, once) about kernel threads that do work of their own on the clients'
cores: on the VM of the issue-14 figures, DAMON's `kdamond.0` ran on the client's core for up to
4 ms at a time (seen with `perf sched timehist`), and every such run was an interval's schedule
lag max of ~4 ms in reqlife's record. The warning names the fix (`taskset -p -c SERVER_CPU PID`);
the script changes nothing itself."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

NGINX_CONF = """
{user}worker_processes {workers};
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


def cpu_count(cpus):
    """How many CPUs a taskset list names ("0" -> 1, "8-15" -> 8, "0,2-3" -> 3)."""
    n = 0
    for part in cpus.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


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

H2C_SERVER = """
    server {{
        listen 127.0.0.1:{port} http2;
        default_type text/plain;
        location / {{ return 200 "Hello World!"; }}
    }}
}}
"""


# Kernel threads that run long stretches of work of their own (not on behalf of the clients).
BUSY_KERNEL_THREADS = ("kdamond",)


def busy_kernel_threads(server_cpu):
    """(pid, name, allowed CPUs) of the kernel threads of BUSY_KERNEL_THREADS that may run on a
    CPU other than `server_cpu` (a taskset list such as "0" or "0-1")."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except OSError:
            continue
        name = status.get("Name", "")
        if not name.startswith(BUSY_KERNEL_THREADS):
            continue
        allowed = status.get("Cpus_allowed_list", "").strip()
        if allowed and allowed != server_cpu:
            found.append((int(pid), name, allowed))
    return found


_WARNED = False


def warn_busy_kernel_threads(server_cpu):
    """Says once which busy kernel threads may share the clients' cores, and the fix."""
    global _WARNED
    if _WARNED:
        return
    _WARNED = True
    for pid, name, allowed in busy_kernel_threads(server_cpu):
        print(f"warning: kernel thread {name} (pid {pid}) may run on CPUs {allowed}, the clients' "
              f"too: its stretches of work show as the clients' schedule lag; move it to the "
              f"server's core for the run: taskset -p -c {server_cpu} {pid}", file=sys.stderr)


class Nginx:
    """`tls_h2=True`: HTTPS with HTTP/2 (a self-signed certificate made with openssl);
    `h2c=True`: HTTP/2 without TLS (prior knowledge)."""

    def __init__(self, cpu="0", tls_h2=False, connections=4096, h2c=False):
        """`connections`: nginx's worker_connections (its open-file limit follows)."""
        self.cpu = cpu
        self.tls_h2 = tls_h2
        self.h2c = h2c
        self.connections = connections

    def __enter__(self):
        warn_busy_kernel_threads(self.cpu)
        self.tmp = tempfile.mkdtemp(prefix="reqlife-bench-")
        self.port = free_port()
        conf = f"{self.tmp}/nginx.conf"
        # One worker per server CPU; as root (a bare benchmark machine), the workers stay root:
        # such a machine may have no user nginx could switch to.
        text = NGINX_CONF.format(tmp=self.tmp, port=self.port, connections=self.connections,
                                 nofile=self.connections + 100, workers=cpu_count(self.cpu),
                                 user="user root;\n" if os.geteuid() == 0 else "")
        if self.tls_h2:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                            "-subj", "/CN=localhost", "-keyout", f"{self.tmp}/key.pem",
                            "-out", f"{self.tmp}/cert.pem"], check=True, capture_output=True)
            # Replace the plain server block with the TLS + h2 one.
            text = text[:text.index("    server {")] + TLS_H2_SERVER.format(tmp=self.tmp, port=self.port)
        elif self.h2c:
            text = text[:text.index("    server {")] + H2C_SERVER.format(port=self.port)
        with open(conf, "w") as f:
            f.write(text)
        self.stderr = open(f"{self.tmp}/stderr.log", "wb")
        # Its own session: a Ctrl-C in the terminal reaches only this script, which then stops
        # nginx itself (and, if it must, kills the whole group, workers included).
        self.proc = subprocess.Popen(["taskset", "-c", self.cpu, "nginx", "-p", self.tmp,
                                      "-e", f"{self.tmp}/error.log", "-c", conf],
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
