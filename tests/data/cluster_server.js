// Node's `cluster`: the primary holds the listening socket and hands each connection to one of
// two workers, which serve it (tests/probes/servers.rs). Prints its port once both listen.
const cluster = require('node:cluster');
const http = require('node:http');
const port = +process.argv[2];
if (cluster.isPrimary) {
  for (let i = 0; i < 2; i++) cluster.fork();
  let up = 0;
  cluster.on('listening', () => { if (++up === 2) console.log(port); });
} else {
  http.createServer((req, res) => { res.end('hello\n'); }).listen(port, '127.0.0.1');
}
