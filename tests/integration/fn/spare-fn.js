// spare-fn.js - a function that says how it was started, as JSON: its
// pid, uid, directory, argv, GREETING, LISTEN_PID, its cgroup (cgroup2)
// and its secret's SHA-256 (never the value); whether it still has a
// channel to a Node parent (a spare's must be gone).  Serves the handed
// socket (LISTEN_FDS) and prints one line per request to stderr.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const path = require('path');

function secret() {
  try {
    const d = process.env.CREDENTIALS_DIRECTORY || '';
    return crypto.createHash('sha256')
        .update(fs.readFileSync(path.join(d, 'DB_PASSWORD'))).digest('hex');
  } catch (err) {
    return '';
  }
}

function cgroup() {
  const m = fs.readFileSync('/proc/self/cgroup', 'utf8').match(/^0::(.*)$/m);
  return m ? m[1] : '';
}

const server = http.createServer((req, res) => {
  const b = JSON.stringify({
    pid: process.pid, uid: process.getuid(), cwd: process.cwd(),
    argv: process.argv.slice(1), secret: secret(), cgroup: cgroup(),
    listen_pid: process.env.LISTEN_PID || '',
    greeting: process.env.GREETING || '',
    channel: typeof process.send === 'function',
  });
  res.writeHead(200, { 'Content-Length': Buffer.byteLength(b) });
  res.end(b);
  process.stderr.write(`spare-fn: ${req.method} ${req.url} from pid ${process.pid}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
server.listen({ fd: 3 });
