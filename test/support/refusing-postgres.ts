import { type AddressInfo, createServer, type Server } from 'node:net';

/**
 * A PostgreSQL server, as far as the start-up handshake goes, that asks for a cleartext
 * password and answers whatever it gets with FATAL 28P01, as a real server does for a wrong
 * password. The test server of TEST_DATABASE_URL trusts every login, so it cannot refuse one.
 * `passwords` holds what clients sent, so a test can prove the secret was sent and not logged.
 */
export class RefusingPostgres {
  readonly passwords: string[] = [];
  private server: Server | undefined;

  /** Listens on a port the kernel picks; resolves with it. */
  async start(): Promise<number> {
    this.server = createServer((socket) => {
      let buffer = Buffer.alloc(0);
      let started = false;
      socket.on('error', () => socket.destroy());
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        if (!started) {
          // StartupMessage: Int32 length (itself included), then the protocol and parameters.
          if (buffer.length < 4 || buffer.length < buffer.readInt32BE(0)) return;
          buffer = buffer.subarray(buffer.readInt32BE(0));
          started = true;
          // AuthenticationCleartextPassword.
          socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]));
        }
        // PasswordMessage: 'p', Int32 length, the password and a NUL.
        if (buffer.length < 5 || buffer.length < 1 + buffer.readInt32BE(1)) return;
        this.passwords.push(
          buffer.subarray(5, buffer.readInt32BE(1)).toString().replace(/\0$/, ''),
        );
        const fields = Buffer.from(
          'SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed for user "plants"\0\0',
        );
        const header = Buffer.alloc(5);
        header.write('E');
        header.writeInt32BE(4 + fields.length, 1);
        socket.end(Buffer.concat([header, fields]));
      });
    });
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
