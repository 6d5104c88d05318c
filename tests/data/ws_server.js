// A WebSocket echo server for tests/protocols/websocket_servers.rs, on Node's `ws` (the version
// pinned in tests/data/package.json; .ci/test runs `npm ci` here).
//
// Listens on a free loopback port and prints `listening PORT`. Each message is echoed back, as
// it came (text or binary), after `--delay-ms` milliseconds: to within a few microseconds, as
// tests/data/ws_server.py does (Node's timers wake up to a millisecond late: the timer is set to
// 2 ms before the time, and the rest is spun).
"use strict";

const { WebSocketServer } = require("ws");

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : process.argv[at + 1];
}

const delayMs = Number(option("--delay-ms", "0"));
if (!(delayMs >= 0)) {
  console.error(`bad --delay-ms '${option("--delay-ms")}': expected a number from 0`);
  process.exit(2);
}

/**
 * Calls `then` at `due` (process.hrtime.bigint() nanoseconds): a timer to 2 ms before it, then a
 * spin. A timer is set only for a whole millisecond or more: Node makes a shorter one 1 ms, which
 * could end past `due`.
 */
function at(due, then) {
  const early = Number(due - process.hrtime.bigint()) / 1e6 - 2;
  if (early >= 1) {
    setTimeout(() => at(due, then), early);
    return;
  }
  while (process.hrtime.bigint() < due) {
    // Spin the last 2 ms.
  }
  then();
}

const server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
server.on("listening", () => {
  console.log(`listening ${server.address().port}`);
});
server.on("connection", (ws) => {
  ws.on("message", (data, isBinary) => {
    if (delayMs === 0) {
      ws.send(data, { binary: isBinary });
      return;
    }
    const due = process.hrtime.bigint() + BigInt(Math.round(delayMs * 1e6));
    at(due, () => ws.send(data, { binary: isBinary }));
  });
});
