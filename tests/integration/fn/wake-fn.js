// wake-fn.js - a Node function for the wake tests (2060): listens on
// $HOST:$PORT and answers every request with its pid and how many
// requests it has answered, this one included ("pid=N count=K").
'use strict';
const http = require('http');

let count = 0;
http.createServer((req, res) => {
  count++;
  res.end(`pid=${process.pid} count=${count}`);
}).listen(Number(process.env.PORT), process.env.HOST || '127.0.0.1');
