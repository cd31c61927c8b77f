// Runs on Playwright's bundled Node.js: launches one browser as a Playwright browser
// server and prints its WebSocket endpoint. Each connecting client sees only the
// contexts it creates, so sessions on one browser cannot touch each other's pages.
// argv: [node, this file, playwright-core package dir, JSON launch options]
const playwright = require(process.argv[2]);
const options = JSON.parse(process.argv[3]);

(async () => {
  const server = await playwright[options.browser].launchServer({
    executablePath: options.executablePath || undefined,
    headless: options.headless,
    args: options.args,
    host: '127.0.0.1',
    port: 0,
  });
  process.stdout.write(server.wsEndpoint() + '\n');
  let closing = false;
  const stop = async () => {
    if (closing) return;
    closing = true;
    await server.close().catch(() => {});
    process.exit(0);
  };
  // Our parent closes stdin to stop us, and a dead parent closes it too.
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
})().catch((error) => {
  process.stderr.write(String((error && error.stack) || error) + '\n');
  process.exit(1);
});
