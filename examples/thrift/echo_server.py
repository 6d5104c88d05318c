#!/usr/bin/env python3
"""A small Thrift service for reqlife's framed binary runs (tcp://), on Apache Thrift's own
Python package (`pip install thrift`): TThreadedServer, TFramedTransport, TBinaryProtocol.

The service, written by hand (no IDL compiler needed), is

    service Echo { string echo(1: string message) }

and its handler sleeps --sleep-ms first (study 004's server slept 500 ms).

    echo_server.py serve [--port 0] [--sleep-ms 0] [--seqid-log FILE]
        prints "listening PORT" once it listens on 127.0.0.1 (port 0: a free one)
    echo_server.py request [--message hi] > echo.bin
        writes one framed `echo` call as Thrift's client serializer makes it (seqid 0); the
        seqid's offset in it is 12 + len("echo") = 16
"""

import argparse
import sys
import threading
import time

from thrift.protocol import TBinaryProtocol
from thrift.server import TServer
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport import TSocket, TTransport

METHOD = "echo"


class EchoProcessor:
    """Reads one call and writes its reply, as a generated processor would."""

    def __init__(self, sleep_s, seqid_log):
        self.sleep_s = sleep_s
        self.seqid_log = seqid_log
        self.lock = threading.Lock()

    def process(self, iprot, oprot):
        name, _mtype, seqid = iprot.readMessageBegin()
        message = ""
        iprot.readStructBegin()
        while True:
            _fname, ftype, fid = iprot.readFieldBegin()
            if ftype == TType.STOP:
                break
            if fid == 1 and ftype == TType.STRING:
                message = iprot.readString()
            else:
                iprot.skip(ftype)
            iprot.readFieldEnd()
        iprot.readStructEnd()
        iprot.readMessageEnd()
        if self.seqid_log:
            with self.lock, open(self.seqid_log, "a") as f:
                f.write(f"{seqid}\n")
        if name != METHOD:
            x = TApplicationException(TApplicationException.UNKNOWN_METHOD, f"unknown method {name}")
            oprot.writeMessageBegin(name, TMessageType.EXCEPTION, seqid)
            x.write(oprot)
        else:
            if self.sleep_s > 0:
                time.sleep(self.sleep_s)
            oprot.writeMessageBegin(name, TMessageType.REPLY, seqid)
            oprot.writeStructBegin("echo_result")
            oprot.writeFieldBegin("success", TType.STRING, 0)
            oprot.writeString(message)
            oprot.writeFieldEnd()
            oprot.writeFieldStop()
            oprot.writeStructEnd()
        oprot.writeMessageEnd()
        oprot.trans.flush()
        return True


def request(message):
    """One framed `echo` call, as the client serializer writes it."""
    buf = TTransport.TMemoryBuffer()
    framed = TTransport.TFramedTransport(buf)
    prot = TBinaryProtocol.TBinaryProtocol(framed)
    prot.writeMessageBegin(METHOD, TMessageType.CALL, 0)
    prot.writeStructBegin("echo_args")
    prot.writeFieldBegin("message", TType.STRING, 1)
    prot.writeString(message)
    prot.writeFieldEnd()
    prot.writeFieldStop()
    prot.writeStructEnd()
    prot.writeMessageEnd()
    framed.flush()
    return buf.getvalue()


def serve(port, sleep_s, seqid_log, backlog):
    transport = TSocket.TServerSocket(host="127.0.0.1", port=port)
    transport.setBacklog(backlog)
    transport.listen()
    # serve() listens again: keep the socket bound above (its port is printed).
    transport.listen = lambda: None
    print(f"listening {transport.handle.getsockname()[1]}", flush=True)
    server = TServer.TThreadedServer(
        EchoProcessor(sleep_s, seqid_log),
        transport,
        TTransport.TFramedTransportFactory(),
        TBinaryProtocol.TBinaryProtocolFactory(),
        daemon=True,
    )
    server.serve()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--sleep-ms", type=float, default=0)
    s.add_argument("--seqid-log")
    s.add_argument("--backlog", type=int, default=1024)
    r = sub.add_parser("request")
    r.add_argument("--message", default="hi")
    a = p.parse_args()
    if a.command == "serve":
        serve(a.port, a.sleep_ms / 1000, a.seqid_log, a.backlog)
    else:
        sys.stdout.buffer.write(request(a.message))


if __name__ == "__main__":
    main()
