/**
 * The webhook-overhead bench's receiver, in a process of its own (as a receiver is on another
 * machine in real use): answers 204 to every POST and, when asked over IPC, says how many it
 * got and its own CPU time, so the bench can tell its cost from the service's.
 */
import { createServer } from 'node:http';

let delivered = 0;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    delivered++;
    res.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (message) => {
  if (message === 'stats') {
    const { user, system } = process.cpuUsage();
    process.send({ delivered, cpuUs: user + system });
  } else if (message === 'close') server.close(() => process.exit(0));
});
