// Port forwarder run INSIDE a network-less sandbox with the host's node:
//   node forwarder.mjs PORT=SOCKET [PORT=SOCKET ...]
// listens on 127.0.0.1:PORT for each pair and pipes every connection to the unix
// SOCKET (a host socket bound into the sandbox: the model gateway, the egress proxy).
// Prints `ready` on stdout once every listener is up, and nothing else there: the
// sandbox wrapper waits for that line. Errors go to stderr and exit non-zero.
// Plain JavaScript without dependencies on purpose: it must run from a read-only
// bind with nothing but node.
import net from 'node:net';

const pairs = process.argv.slice(2).map((arg) => {
  const m = /^(\d{1,5})=(.+)$/.exec(arg);
  if (!m || Number(m[1]) < 1 || Number(m[1]) > 65535) fail(`expected PORT=SOCKET, got "${arg}"`);
  return { port: Number(m[1]), socket: m[2] };
});

let pending = pairs.length;
const listening = () => {
  if (--pending <= 0) process.stdout.write('ready\n');
};
if (pending === 0) listening();

for (const { port, socket } of pairs) {
  // allowHalfOpen: a client may finish sending and still wait for the answer.
  net
    .createServer({ allowHalfOpen: true }, (client) => {
      const upstream = net.connect({ path: socket, allowHalfOpen: true });
      // Normal ends travel through pipe() (FIN for FIN); an error on either side drops both.
      const drop = () => (client.destroy(), upstream.destroy());
      client.on('error', drop);
      upstream.on('error', drop);
      client.pipe(upstream).pipe(client);
    })
    .on('error', (e) => fail(`cannot listen on 127.0.0.1:${port}: ${e.message}`))
    .listen(port, '127.0.0.1', listening);
}

function fail(message) {
  process.stderr.write(`pairbench forwarder: ${message}\n`);
  process.exit(1);
}
