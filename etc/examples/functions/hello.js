#!/usr/bin/env node
// hello.js - a JavaScript HTTP function for hk's exec backend.
//
// Listens on 127.0.0.1 and $PORT (or on the socket hk hands over through
// LISTEN_FDS), answers GET, HEAD and POST with a short text body, and writes
// one line per handled request to stderr.  Node's http module only.
// Query strings and bodies are never logged.
'use strict';

const http = require('http');

const PROG = 'hello.js';
const MAX_BODY = 4 * 1024 * 1024;

const server = http.createServer((req, res) => {
  const path = req.url.split('?', 1)[0];
  let size = 0;

  if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'POST') {
    res.writeHead(405, { 'Allow': 'GET, HEAD, POST', 'Content-Length': 0 });
    res.end();
    return;
  }
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY) {
      res.writeHead(413, { 'Connection': 'close', 'Content-Length': 0 });
      res.end();
      req.destroy();
    }
  });
  req.on('end', () => {
    const greeting = process.env.GREETING || 'hello from javascript';
    const body = `${greeting}: ${req.method} ${path}, ${size} bytes received\n`;
    res.writeHead(200, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    process.stderr.write(`${PROG}: info: ${req.method} ${path} 200 ${size}\n`);
  });
});

function listen() {
  if (process.env.LISTEN_PID === String(process.pid) &&
      process.env.LISTEN_FDS === '1') {
    server.listen({ fd: 3 });
    return;
  }
  const port = Number(process.env.PORT);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`${PROG}: fatal: PORT is not set to a port\n`);
    process.exit(64);
  }
  server.listen(port, '127.0.0.1');
}

server.on('error', (err) => {
  process.stderr.write(`${PROG}: fatal: unable to listen: ${err.message}\n`);
  process.exit(71);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
listen();
