// bench-coldpath-fn.js - the function of bench/bench-coldpath (Node).
//
// Appends "start T" to the file named by its argument as its first statement, listens on
// 127.0.0.1:$PORT after $LISTEN_DELAY_MS (default 70) more milliseconds,
// appends "listen T" (Unix seconds), then answers every request with 200
// "hello\n" (Node's http server, keep-alive).
"use strict";
const fs = require("fs");
const now = () => (performance.timeOrigin + performance.now()) / 1000;
fs.appendFileSync(process.argv[2], `start ${now().toFixed(6)}\n`);

const http = require("http");
const delay = parseInt(process.env.LISTEN_DELAY_MS || "70", 10);
setTimeout(() => {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Length": "6" });
    res.end("hello\n");
  });
  server.listen(parseInt(process.env.PORT, 10), "127.0.0.1", () => {
    fs.appendFileSync(process.argv[2], `listen ${now().toFixed(6)}\n`);
  });
}, delay);
