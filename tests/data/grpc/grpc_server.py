#!/usr/bin/env python3
"""The gRPC test server of tests/protocols/grpc.rs (and of the README's gRPC section): the service of
echo.proto (reqlife.test.Test) on Python grpcio, without TLS (h2c), or with it (--tls: h2 by
ALPN).

    grpc_server.py [--port N] [--log FILE] [--descriptor-out FILE.pb] [--tls CERT.pem KEY.pem]
                   [--reflection]

Compiles echo.proto with grpc_tools.protoc into a temporary directory (and, with
--descriptor-out, writes its descriptor set as `protoc --descriptor_set_out --include_imports`
does), listens on 127.0.0.1 (port 0: a free one), prints `listening PORT` and serves until
killed. --log appends the text of every Echo request, one a line. --reflection adds gRPC
server reflection (grpcio-reflection: grpc.reflection.v1alpha.ServerReflection) for the Test
service; without it the server answers reflection UNIMPLEMENTED, as most servers do.
"""
import argparse
import importlib
import os
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc
from grpc_tools import protoc

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_proto(out_dir, descriptor_out):
    """Generates echo_pb2 into out_dir (and the descriptor set); returns the module."""
    # The well-known types (google/protobuf/*.proto) come with grpc_tools.
    well_known = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["protoc", f"-I{HERE}", f"-I{well_known}", f"--python_out={out_dir}"]
    if descriptor_out:
        args += [f"--descriptor_set_out={descriptor_out}", "--include_imports"]
    args.append(os.path.join(HERE, "echo.proto"))
    if protoc.main(args) != 0:
        sys.exit("grpc_server.py: protoc failed on echo.proto")
    sys.path.insert(0, out_dir)
    return importlib.import_module("echo_pb2")


def handlers(pb, log, trace_log=None):
    lock = threading.Lock()

    def echo(request, context):
        if log:
            with lock:
                log.write(request.text + "\n")
                log.flush()
        if trace_log:
            parent = dict(context.invocation_metadata()).get("traceparent", "-")
            with lock:
                trace_log.write(parent + "\n")
                trace_log.flush()
        return pb.EchoReply(text=request.text, id=request.id)

    def sleep(request, context):
        time.sleep(request.ms / 1000.0)
        return pb.Empty()

    def fail(request, context):
        if request.code == 0:
            return pb.Empty()
        context.abort(grpc.StatusCode(_code(request.code)), request.message)

    def timed(request, context):
        context.set_trailing_metadata((("server-timing", "db;dur=2.5, app;dur=1"),))
        return pb.EchoReply(text=request.text, id=request.id)

    def unary(fn, req, reply):
        return grpc.unary_unary_rpc_method_handler(
            fn,
            request_deserializer=req.FromString,
            response_serializer=reply.SerializeToString,
        )

    return grpc.method_handlers_generic_handler(
        "reqlife.test.Test",
        {
            "Echo": unary(echo, pb.EchoRequest, pb.EchoReply),
            "Sleep": unary(sleep, pb.SleepRequest, pb.Empty),
            "Fail": unary(fail, pb.StatusRequest, pb.Empty),
            "Timed": unary(timed, pb.EchoRequest, pb.EchoReply),
        },
    )


def _code(number):
    """grpc.StatusCode's value for a code number (UNKNOWN for an unknown number)."""
    for c in grpc.StatusCode:
        if c.value[0] == number:
            return c.value
    return grpc.StatusCode.UNKNOWN.value


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log")
    p.add_argument("--trace-log", help="write each Echo call's traceparent metadata here")
    p.add_argument("--descriptor-out")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    p.add_argument("--reflection", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as out_dir:
        pb = compile_proto(out_dir, a.descriptor_out)
        log = open(a.log, "a") if a.log else None
        trace_log = open(a.trace_log, "a") if a.trace_log else None
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        server.add_generic_rpc_handlers((handlers(pb, log, trace_log),))
        if a.reflection:
            from grpc_reflection.v1alpha import reflection

            names = (pb.DESCRIPTOR.services_by_name["Test"].full_name, reflection.SERVICE_NAME)
            reflection.enable_server_reflection(names, server)
        if a.tls:
            cert, key = (open(f, "rb").read() for f in a.tls)
            creds = grpc.ssl_server_credentials(((key, cert),))
            port = server.add_secure_port(f"127.0.0.1:{a.port}", creds)
        else:
            port = server.add_insecure_port(f"127.0.0.1:{a.port}")
        server.start()
        print(f"listening {port}", flush=True)
        server.wait_for_termination()


if __name__ == "__main__":
    main()
