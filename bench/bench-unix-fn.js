// bench-unix-fn.js - bench/bench-unix's function: Node's http module on
// the socket hk hands over as fd 3 (LISTEN_FDS), a TCP one or a Unix one
// alike; GET /64k answers 65536 bytes, anything else "hello\n", as
// proxy-bench.sh's backend does.
'use strict';

const http = require('http');

const HELLO = Buffer.from('hello\n');
const BIG = Buffer.alloc(65536, 'x');

const server = http.createServer((req, res) => {
  const body = req.url === '/64k' ? BIG : HELLO;
  res.writeHead(200, {
    'Content-Type': 'text/plain',
    'Content-Length': body.length,
  });
  res.end(body);
});
server.keepAliveTimeout = 60000;
if (process.env.LISTEN_FDS !== '1') {
  process.stderr.write('bench-unix-fn: fatal: no socket handed over\n');
  process.exit(64);
}
server.listen({ fd: 3 });
process.on('SIGTERM', () => server.close(() => process.exit(0)));
