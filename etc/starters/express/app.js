#!/usr/bin/env node
// @NAME@ - an HTTP function for hk, on Express.
//
// Edit the handler below.  hk starts this program on the first request
// and stops it (SIGTERM) when it has been idle: it serves the listening
// socket hk hands over (LISTEN_FDS), or 127.0.0.1:$PORT when run by hand:
//
//	npm install && PORT=8080 node app.js
//
// Express comes from the npm registry into ./node_modules (npm install,
// after package.json).  One line per request goes to stderr, without the
// query string or the body.
'use strict';

const http = require('http');
const express = require('express');

const NAME = '@NAME@';

const app = express();

app.use((req, res, next) => {
  res.on('finish', () => {
    process.stderr.write(`${NAME}: ${req.method} ${req.path} ${res.statusCode}\n`);
  });
  next();
});
app.use(express.raw({ type: () => true, limit: '1mb' }));

// The function: every path and method.  res.send() writes head and body
// in one send: no wait for the client's delayed ACK.
app.use((req, res) => {
  const size = Buffer.isBuffer(req.body) ? req.body.length : 0;
  res.type('text/plain');
  res.send(`hello from ${NAME}: ${req.method} ${req.path}, ${size} bytes received\n`);
});

const server = http.createServer(app);

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
