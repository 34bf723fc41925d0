// hk-node-spare - a Node process started ahead by hk-scale, idle in its
// event loop until a wake hands it a function: it then becomes that
// function's instance (start_from = "node-spare", hk.toml(5); hk-scale(8)).
//
// V8 cannot fork once it runs, so a spare is what a Python template's fork
// is: the interpreter's start paid before the request comes.  hk-scale
// starts it as the user of the functions it serves, in a session of its
// own, with no_new_privs, stdin /dev/null, stdout and stderr on a pipe
// hk-scale keeps (the log of the instance it becomes), fd 3 a placeholder
// and Node's IPC channel (NODE_CHANNEL_FD) on fd 4.  It closes fd 3 and
// says "ready"; at a wake hk-scale moves it into the instance's cgroup and
// sends one message, {"hk": "spawn", "dir", "argv", "env"}, with the
// instance's listening socket (LISTEN_FDS) by SCM_RIGHTS when it has one:
// the socket lands on fd 3, the lowest free, as the exec backend's child
// has it.  The spare then takes the instance's environment, directory and
// argv, lets go of the channel and runs the script as Node's main module.
// One message only: anything else ends it.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const Module = require('module');

const LISTEN_FD = 3;
// What the starters' handlers import, loaded ahead: Node's http server,
// and the built-in modules Express and its dependencies take.
for (const m of ['http', 'net', 'stream', 'events', 'util', 'url',
  'querystring', 'crypto', 'zlib', 'string_decoder', 'async_hooks', 'tty',
  'os'])
  require(m);

function fatal(why) {
  fs.writeSync(2, `hk-node-spare: ${why}\n`);
  process.exit(71);
}

// The environment of the instance replaces the spare's, in place: the
// process's own (native code's getenv, child processes) changes too.
function setEnv(env) {
  for (const k of Object.keys(process.env))
    delete process.env[k];
  for (const kv of env) {
    const eq = kv.indexOf('=');
    if (eq > 0)
      process.env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  if ('LISTEN_PID' in process.env)
    process.env.LISTEN_PID = String(process.pid);
}

function spawn(msg, handle) {
  if (msg === null || typeof msg !== 'object' || msg.hk !== 'spawn' ||
      !Array.isArray(msg.argv) || msg.argv.length < 2 ||
      !Array.isArray(msg.env) || typeof msg.dir !== 'string')
    fatal('not a spawn message');
  if (handle !== undefined && handle.fd !== LISTEN_FD)
    fatal(`the listening socket is fd ${handle.fd}, not ${LISTEN_FD}`);
  process.removeAllListeners('message');
  process.removeAllListeners('disconnect');
  if (process.connected)
    process.disconnect();
  try {
    if (msg.dir !== '')
      process.chdir(msg.dir);
  } catch (err) {
    fatal(`chdir ${msg.dir}: ${err.message}`);
  }
  setEnv(msg.env);
  process.argv = [process.argv[0], path.resolve(msg.argv[1]),
    ...msg.argv.slice(2)];
  // the script is not a child of a Node parent: no IPC for it
  delete process.send;
  delete process.disconnect;
  process.title = msg.argv.join(' ').slice(0, 200);
  // the script's require.cache as a bare start's: without this file
  delete Module._cache[__filename];
  Module.runMain();
}

// One request through Node's own HTTP server and client, on an abstract
// Unix socket of no file, before the spare says ready: V8 compiles a
// function at its first call, and the server's code is Node's, the same
// for every handler, so the instance's first request finds it compiled.
// Handles closed, their descriptors are free again: fd 3 stays the
// lowest one free.
function warmUp(done) {
  const http = require('http');
  const name = `\0hk-node-spare.${process.pid}`;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'text/plain',
        'Content-Length': 3 });
      res.end('ok\n');
    });
  });
  const fail = () => {
    server.close();
    done();
  };
  server.on('error', fail);
  server.listen(name, () => {
    const req = http.get({ socketPath: name, path: '/',
      agent: false }, (res) => {
      res.resume();
      res.on('end', () => server.close(() => setImmediate(done)));
    });
    req.on('error', fail);
  });
}

// The loader warmed up: a service's first require of its own packages
// (Express: 128 modules under its ./node_modules, which no spare can
// load ahead, being the service's own) spends most of its time in Node's
// module loader itself: resolution (stat, package.json, "exports"),
// wrapping, require(esm) for "module-sync", all run cold, by V8's
// interpreter, and a few of Node's internal modules load at their first
// use.  So the spare runs that code ahead on a throwaway package tree of
// its own, written to a private directory (mkdtemp, mode 0700) under the
// spare's TMPDIR and removed at once, and forgets what it loaded: the
// instance's require.cache holds none of it.  Best effort: a tree that
// cannot be written is no warm-up, never a spare less.
const WARM_PACKAGES = 6;
const WARM_ROUNDS = 30;

function warmTree(d) {
  const nm = path.join(d, 'node_modules');
  for (let p = 0; p < WARM_PACKAGES; p++) {
    const pd = path.join(nm, `p${p}`);
    const next = p + 1 < WARM_PACKAGES ? `require('p${p + 1}');\n` : '';
    fs.mkdirSync(path.join(pd, 'lib'), { recursive: true });
    const pkg = [{ main: './lib/index.js' },
      { exports: { '.': './lib/index.js', './package.json': './package.json' } },
      { exports: { '.': [{ 'module-sync': './lib/index.mjs',
        default: './lib/index.js' }, './lib/index.js'] } }][p % 3];
    fs.writeFileSync(path.join(pd, 'package.json'),
        JSON.stringify({ name: `p${p}`, ...pkg }));
    fs.writeFileSync(path.join(pd, 'lib', 'index.js'),
        `'use strict';\nconst a = require('./a');\n` +
        `const d = require('./d.json');\n${next}` +
        'module.exports = (x) => a(x) + d.v + ' +
        "require('path').basename(__filename);\n");
    fs.writeFileSync(path.join(pd, 'lib', 'index.mjs'),
        "import a from './a.js';\nexport default a;\n");
    fs.writeFileSync(path.join(pd, 'lib', 'a.js'),
        "'use strict';\nmodule.exports = (x) => String(x).toLowerCase();\n");
    fs.writeFileSync(path.join(pd, 'lib', 'd.json'),
        JSON.stringify({ v: 1, types: { 'text/plain': ['txt'] } }));
  }
  fs.writeFileSync(path.join(d, 'main.js'), "module.exports = require('p0');\n");
}

// A spare killed in its warm-up (hk-scale stopped, or a reload) leaves
// its tree: the next spare of the same user removes the trees of the
// spares of its user that are gone.  Another user's, and a live
// process's, are left alone.
const WARM_PREFIX = 'hk-node-spare.';

function gone(pid) {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
}

function sweepTrees(tmp) {
  for (const name of fs.readdirSync(tmp)) {
    const m = /^hk-node-spare\.([0-9]+)\.[A-Za-z0-9]{6}$/.exec(name);
    if (m === null || Number(m[1]) === process.pid || !gone(Number(m[1])))
      continue;
    const p = path.join(tmp, name);
    try {
      const st = fs.lstatSync(p);
      if (st.isDirectory() && st.uid === process.getuid())
        fs.rmSync(p, { recursive: true, force: true });
    } catch {
      // raced with its owner: nothing to do
    }
  }
}

function warmLoader() {
  const tmp = os.tmpdir();
  let d;
  try {
    sweepTrees(tmp);
  } catch {
    // a TMPDIR not to be listed: no sweep
  }
  try {
    d = fs.mkdtempSync(path.join(tmp, `${WARM_PREFIX}${process.pid}.`));
    warmTree(d);
    for (let i = 0; i < WARM_ROUNDS; i++) {
      require(path.join(d, 'main.js'));
      for (const k of Object.keys(Module._cache))
        if (k.startsWith(d + path.sep))
          delete Module._cache[k];
      for (const k of Object.keys(Module._pathCache))
        if (k.includes(d))
          delete Module._pathCache[k];
      module.children.length = 0;
    }
  } catch {
    // no warm-up: the spare is as good as it was without
  } finally {
    if (d !== undefined)
      fs.rmSync(d, { recursive: true, force: true });
  }
}

// hk-scale gone before a wake: nothing to become.
process.on('disconnect', () => process.exit(0));
process.once('message', spawn);
warmLoader();
warmUp(() => {
  fs.closeSync(LISTEN_FD);
  process.send('ready');
});
