// k6's side of bench/websocket.py: WS_VUS virtual users, each one WebSocket connection (the
// k6/websockets API) that sends WS_MESSAGE when it opens and again on every reply (a closed
// loop, one message in flight per connection, as `reqlife run ws://...` does), for WS_SECONDS,
// then closes. The summary (messages sent and received) goes to the file WS_SUMMARY as JSON.
//
//   k6 run --quiet --no-usage-report -e WS_URL=ws://127.0.0.1:PORT/ -e WS_VUS=10 \
//       -e WS_SECONDS=5 -e WS_MESSAGE=hello -e WS_SUMMARY=/tmp/summary.json bench/ws_k6.js
import { WebSocket } from 'k6/websockets';
import { setTimeout } from 'k6/timers';

const URL = __ENV.WS_URL;
const MESSAGE = __ENV.WS_MESSAGE || 'hello';
const VUS = parseInt(__ENV.WS_VUS || '10', 10);
const SECONDS = parseFloat(__ENV.WS_SECONDS || '5');

export const options = {
  scenarios: {
    echo: {
      executor: 'per-vu-iterations',
      vus: VUS,
      iterations: 1,
      maxDuration: `${Math.ceil(SECONDS) + 30}s`,
    },
  },
  summaryTrendStats: ['med', 'p(99)', 'max'],
};

export default function () {
  const ws = new WebSocket(URL);
  let closing = false;
  ws.onopen = () => {
    ws.send(MESSAGE);
    setTimeout(() => {
      closing = true;
      ws.close();
    }, SECONDS * 1000);
  };
  ws.onmessage = () => {
    if (!closing) {
      ws.send(MESSAGE);
    }
  };
  ws.onerror = (e) => {
    console.error(`websocket error: ${e.error}`);
  };
}

export function handleSummary(data) {
  const m = (name) => (data.metrics[name] ? data.metrics[name].values : {});
  const summary = {
    vus: VUS,
    seconds: SECONDS,
    message_bytes: MESSAGE.length,
    msgs_sent: m('ws_msgs_sent').count || 0,
    msgs_received: m('ws_msgs_received').count || 0,
    sessions: m('ws_sessions').count || 0,
    connecting_med_ms: m('ws_connecting').med,
  };
  return { [__ENV.WS_SUMMARY]: JSON.stringify(summary) + '\n' };
}
