#!/usr/bin/env node
// @NAME@ - an HTTP function for hk, on Node's http module.
//
// Edit handle() below.  hk starts this program on the first request and
// stops it (SIGTERM) when it has been idle: it serves the listening socket
// hk hands over (LISTEN_FDS), or 127.0.0.1:$PORT when run by hand:
//
//	PORT=8080 node handler.js
//
// No packages.  One line per request goes to stderr, without the query
// string or the body.
'use strict';

const http = require('http');

const NAME = '@NAME@';
const MAX_BODY = 1024 * 1024;

// The function: returns [status, content type, body].
function handle(method, path, body) {
  const text = `hello from ${NAME}: ${method} ${path}, ${body.length} bytes received\n`;
  return [200, 'text/plain; charset=utf-8', text];
}

function reply(req, res, path, status, type, out) {
  // res.end() with the whole body sends head and body in one write: no
  // wait for the client's delayed ACK on a reused connection.
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(out),
  });
  res.end(req.method === 'HEAD' ? undefined : out);
  process.stderr.write(`${NAME}: ${req.method} ${path} ${status}\n`);
}

const server = http.createServer((req, res) => {
  const path = req.url.split('?', 1)[0];
  const chunks = [];
  let size = 0;

  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY) {
      res.shouldKeepAlive = false;
      reply(req, res, path, 413, 'text/plain', 'body too large\n');
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    let r;
    try {
      r = handle(req.method, path, Buffer.concat(chunks));
    } catch (err) {
      // one bad request must not stop the function
      process.stderr.write(`${NAME}: error: ${req.method} ${path}: ${err}\n`);
      r = [500, 'text/plain', 'internal error\n'];
    }
    reply(req, res, path, r[0], r[1], r[2]);
  });
});

// The socket hk passed (LISTEN_FDS), else 127.0.0.1:$PORT.
function listen() {
  if (process.env.LISTEN_PID === String(process.pid) &&
      process.env.LISTEN_FDS === '1') {
    server.listen({ fd: 3 });
    return;
  }
  const port = Number(process.env.PORT);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`${NAME}: fatal: PORT is not set to a port\n`);
    process.exit(64);
  }
  server.listen(port, '127.0.0.1');
}

server.on('error', (err) => {
  process.stderr.write(`${NAME}: fatal: unable to listen: ${err.message}\n`);
  process.exit(71);
});
// SIGTERM: stop accepting, close idle keep-alive connections, finish the
// requests in flight, then exit 0.
process.on('SIGTERM', () => server.close(() => process.exit(0)));
listen();
