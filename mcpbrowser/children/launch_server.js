// Runs on Playwright's bundled Node.js: launches one browser as a Playwright browser
// server and prints its WebSocket endpoint. Each connecting client sees only the
// contexts it creates, so sessions on one browser cannot touch each other's pages.
// argv: [node, this file, playwright-core package dir, JSON launch options]
//
// Lines on stdout, for the supervisor in core/browser_process.py:
//   pipe PATH         a Unix socket for our sessions' relays (see servePipe), when options.pipePath is set
//   ws://...          the endpoint, once the browser is up (always the last line of a launch)
//   pong              answer to a "ping" line on stdin: a context opened and closed
//   ping-failed why   the browser did not manage that
//   exited code sig   the browser process ended without being asked to; we stay, and a "launch"
//                     line on stdin starts the next browser (its pipe and ws lines follow)
// A browser that fails to launch ends this process (exit 1, the reason on stderr).
const fs = require('fs');
const net = require('net');
const path = require('path');
const readline = require('readline');
const options = JSON.parse(process.argv[3]);
// Requiring playwright-core compiles about 7 MB of JavaScript: 110 ms of a 370 ms require on
// our 2-core machine, and the launch waits for it. Node keeps the compiled code in this folder
// (it checks each file's hash, and skips the cache when it cannot write there).
if (options.compileCache) require('module').enableCompileCache?.(options.compileCache);
const playwright = require(process.argv[2]);
require('module').flushCompileCache?.();  // now, not at exit: a killed launcher never reaches its exit

// Chromium features we turn off (unless options.tuned is false: Playwright's own arguments).
// Chromium keeps only the last --disable-features, so ours must repeat Playwright's own
// list, read from its source; if that cannot be read, the browser keeps Playwright's defaults.
//  - WebUIOmniboxPopup, WebUIOmniboxAimPopup: Chromium 15x opens two WebUI renderers per
//    context for a window's address-bar popups, even headless: about 40 MB each context.
//    Off, the popups get their native views.
//  - SpareRendererForSitePerProcess (unless options.spareRenderer): Chromium keeps one
//    renderer process warm for the context that navigated last. With sessions taking turns
//    it is always the wrong one: each navigation started a renderer and killed the spare,
//    10-15 ms of CPU a call with 8 sessions. Off, a navigation to another site or a new
//    tab starts its own process (about 10-20 ms on our 2-core machine).
const EXTRA_DISABLED = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup',
  ...(options.spareRenderer ? [] : ['SpareRendererForSitePerProcess'])];

// Playwright's own list of disabled (`disabledFeatures = [`) or enabled (`enabledFeatures = () => [`)
// features, read from its source; null when it cannot be read.
function playwrightFeatures(packageDir, listStart) {
  for (const file of ['lib/coreBundle.js', 'lib/server/chromium/chromiumSwitches.js']) {
    let source;
    try {
      source = fs.readFileSync(path.join(packageDir, file), 'utf8');
    } catch (error) {
      continue;
    }
    const at = source.indexOf(listStart);
    if (at < 0) continue;
    const list = source.slice(at + listStart.length).match(/^([\s\S]*?)\]/);
    if (!list) continue;
    const code = list[1].replace(/\/\/[^\n]*/g, '');  // drop the comments
    const names = [...code.matchAll(/["']([A-Za-z0-9_]+)["']/g)].map((m) => m[1]);
    if (names.length) return names;
  }
  return null;
}

// Playwright turns off Chromium's IPC flooding protection (--disable-ipc-flooding-protection), which
// throttles a page's History API and fragment navigations (about 200 in 10 s, then it ignores them
// and warns on its console). Without it, a page that pushed 50 history entries a millisecond sent
// the browser server an event for each, until the whole browser went down with every session on
// it (the outside review of hostile pages). Ours keeps it on.
const FLOOD_GUARD = options.browser === 'chromium' ? ['--disable-ipc-flooding-protection'] : [];

// Features we turn on (options.args' --enable-features: WebMCP, with --webmcp) join Playwright's own
// in one --enable-features, for the same reason as the disabled ones: Chromium keeps only the last.
const ENABLE = '--enable-features=';

function featureArgs() {
  const ours = options.args.filter((arg) => arg.startsWith(ENABLE)).flatMap((arg) => arg.slice(ENABLE.length).split(','));
  const args = options.args.filter((arg) => !arg.startsWith(ENABLE));
  const ignoreDefaultArgs = [];
  if (options.browser !== 'chromium') return { args: options.args, ignoreDefaultArgs };
  if (ours.length) {
    const theirs = playwrightFeatures(process.argv[2], 'enabledFeatures = () => [');
    if (theirs) ignoreDefaultArgs.push(ENABLE + theirs.join(','));
    args.push(ENABLE + [...(theirs || []), ...ours].join(','));
  }
  const theirs = options.tuned === false ? null : playwrightFeatures(process.argv[2], 'disabledFeatures = [');
  if (theirs) {
    ignoreDefaultArgs.push('--disable-features=' + theirs.join(','));
    args.push('--disable-features=' + [...theirs, ...EXTRA_DISABLED].join(','));
  }
  return { args, ignoreDefaultArgs };
}

// Sessions attach through a Unix socket, each by a small relay (pipe_relay.py) instead of
// a Node.js driver of its own; messages are JSON, each followed by a NUL byte. Each socket
// is bridged to a WebSocket connection of its own to our browser server, in this process,
// so a session sees only the contexts it creates, and its contexts close when its relay
// goes. (Browser.bind's pipe server would spare the bridge, but it shows every context
// to every client and closes none of them on disconnect.) The socket outlives a browser
// that dies: a session that connects while none runs (one opening during a restart)
// waits, its messages held, and is bridged to the next browser as soon as it is up, so
// its Playwright starts while the browser does. `pipes.serve(life)` bridges to a new browser.
function servePipe(socketPath) {
  const WS = globalThis.WebSocket || require(path.join(process.argv[2], 'lib/utilsBundle')).ws;
  try {
    fs.unlinkSync(socketPath);
  } catch (error) {}
  const waiting = new Set();  // for each socket with no browser yet, the function that bridges it
  const pipes = net.createServer((socket) => {
    let ws = null;
    const early = [];   // messages that came before the WebSocket opened
    let partial = [];   // the start of a message whose NUL has not come yet
    const end = () => {
      waiting.delete(bridge);
      socket.destroy();
      try {
        if (ws) ws.close();
      } catch (error) {}
    };
    function bridge(current) {
      waiting.delete(bridge);
      current.sockets.add(socket);
      socket.on('close', () => current.sockets.delete(socket));
      ws = new WS(current.server.wsEndpoint());
      ws.addEventListener('open', () => {
        for (const message of early.splice(0)) ws.send(message);
      });
      ws.addEventListener('message', (event) => socket.write(String(event.data) + '\0'));
      ws.addEventListener('close', end);
      ws.addEventListener('error', end);
    }
    socket.on('data', (chunk) => {
      let start = 0;
      for (let stop = chunk.indexOf(0); stop !== -1; stop = chunk.indexOf(0, start)) {
        partial.push(chunk.subarray(start, stop));
        const message = Buffer.concat(partial).toString('utf8');
        partial = [];
        if (ws && ws.readyState === 1) ws.send(message);
        else early.push(message);
        start = stop + 1;
      }
      if (start < chunk.length) partial.push(chunk.subarray(start));
    });
    socket.on('close', end);
    socket.on('error', end);
    if (life && life.bridged) bridge(life);
    else waiting.add(bridge);
  });
  pipes.serve = (current) => {
    current.bridged = true;
    for (const bridge of [...waiting]) bridge(current);
  };
  return new Promise((resolve, reject) => {
    pipes.on('error', reject);
    pipes.listen(socketPath, () => resolve(pipes));
  });
}

// The running browser's {server, sockets, probe, bridged}; null between a browser's death and the next launch.
let life = null;
let launching = false;
let closing = false;
let pipes = null;  // the sessions' socket server, once it listens (see servePipe)

// One browser's life. When the browser dies unasked, this process stays: the next browser
// starts on it (a "launch" line), without loading Node.js and playwright-core again (0.2 s
// on our idle 2-core machine, 0.3-0.8 s under load, of a restart that took about 1 s).
async function launch() {
  const features = featureArgs();
  const server = await playwright[options.browser].launchServer({
    executablePath: options.executablePath || undefined,
    headless: options.headless,
    args: features.args,
    ignoreDefaultArgs: [...features.ignoreDefaultArgs, ...FLOOD_GUARD],
    host: '127.0.0.1',
    port: 0,
  });
  const current = { server, sockets: new Set(), probe: null, bridged: false };
  life = current;
  const browserPid = server.process().pid;
  server.process().on('exit', (code, signal) => {
    if (closing || life !== current) return;
    life = null;
    // What is left of the dead browser (its helpers, in the process group Playwright started it
    // in) goes now, and its sessions' relays are cut: they learn at once.
    try {
      process.kill(-browserPid, 'SIGKILL');
    } catch (error) {}
    for (const socket of current.sockets) socket.destroy();
    process.stdout.write(`exited ${code} ${signal}\n`);
  });
  if (options.pipePath && !pipes) {
    // A relayed client gets no device list from the server (a Node.js driver would bring
    // its own): write it beside the socket, for create_session's `device`.
    try {
      fs.writeFileSync(path.join(path.dirname(options.pipePath), 'devices.json'), JSON.stringify(playwright.devices));
    } catch (error) {
      process.stderr.write(`no device list for sessions: ${error && error.message}\n`);
    }
    try {
      pipes = await servePipe(options.pipePath);
    } catch (error) {
      process.stderr.write(`no pipe for sessions, they use the WebSocket: ${error && error.message}\n`);
    }
  }
  if (life !== current) return;  // it died while the pipe opened: its exited line is out
  if (pipes) {
    pipes.serve(current);
    process.stdout.write(`pipe ${options.pipePath}\n`);
  }
  process.stdout.write(server.wsEndpoint() + '\n');
  // Our own client, for health checks only: it holds no pages between pings. It connects
  // once the endpoint is out, which comes 70 ms sooner here (the first session's attach
  // then shares this process with it: spawn to first navigate gained about 15 ms).
  current.probe = playwright[options.browser].connect(server.wsEndpoint());
  current.probe.catch(() => {});  // a failed connect is each ping's answer
}

function start() {
  launching = true;
  launch().then(() => {
    launching = false;
  }, (error) => {
    process.stderr.write(String((error && error.stack) || error) + '\n');
    process.exit(1);
  });
}

async function stop() {
  if (closing) return;
  closing = true;
  if (life) await life.server.close().catch(() => {});
  process.exit(0);
}

async function ping() {
  try {
    if (!life || !life.probe) throw new Error('no browser is running');
    const context = await (await life.probe).newContext();
    await context.close();
    process.stdout.write('pong\n');
  } catch (error) {
    process.stdout.write(`ping-failed ${String(error && error.message).split('\n')[0]}\n`);
  }
}

// Our parent closes stdin to stop us, and a dead parent closes it too.
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const word = line.trim();
  if (word === 'ping') ping();
  else if (word === 'launch' && !life && !launching && !closing) start();
});
lines.on('close', stop);
process.stdin.on('error', stop);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
start();
