// warm-fn.js - a function with packages of its own (./node_modules: p0
// by "module-sync" to an ES module, p1 by "exports", p2 by "main", the
// names the Node spare's warm-up uses for its own throwaway tree), that
// says as JSON: its pid, what its packages are, the files in its
// require.cache outside its own directory (none: the spare forgets its
// warm-up), and whether Node's ES module loader was loaded before this
// file ran (the spare's warm-up loads it).  Serves the handed socket.
'use strict';
const warmed = process.moduleLoadList.includes(
    'NativeModule internal/modules/esm/translators');
const http = require('http');
const path = require('path');
const who = [require('p0').default, require('p1').who, require('p2').who];
const foreign = Object.keys(require.cache).filter(
    (k) => !k.startsWith(__dirname + path.sep));

const server = http.createServer((req, res) => {
  const b = JSON.stringify({ pid: process.pid, who: who.join(' '),
    foreign: foreign.join(' '), warmed });
  res.writeHead(200, { 'Content-Length': Buffer.byteLength(b) });
  res.end(b);
  process.stderr.write(`warm-fn: ${req.method} ${req.url} from pid ${process.pid}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
server.listen({ fd: 3 });
