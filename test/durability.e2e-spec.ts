import { Agent, request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import { storeVariants } from './support/postgres.js';

const create = (apiUrl: string, token: string, id: number) =>
  call(`${apiUrl}/plants`, { method: 'POST', token, body: `{"id": ${id}, "name": "p${id}"}` });

/**
 * Every id answers 200 on the restarted app. The reads go at once (up to 500 of them): one after
 * another they were most of these tests' time on a loaded machine, each waiting its turn twice.
 */
async function expectAllStored(app: RunningApp, token: string, ids: number[]): Promise<void> {
  const statuses = await Promise.all(
    ids.map((id) => call(`${app.apiUrl}/plants/${id}`, { token }).then((answer) => answer.status)),
  );
  for (const status of statuses) expect(status).toBe(200);
}

describe.each(storeVariants)('durability on $name', (store) => {
  it('keeps every acknowledged plant across a restart and across kill -9', async () => {
    const env = await store.env();
    const first = await startApp({ env });
    const token = first.token;
    const ids = Array.from({ length: 300 }, (_, i) => i + 1);
    const answers = await Promise.all(ids.map((id) => create(first.apiUrl, token, id)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // No goodbye: SIGKILL right after the last acknowledgement.
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');

    const second = await startApp({ env: { ...env, API_TOKENS: token }, dataDir: first.dataDir });
    for (const id of [1, 150, 300]) {
      expect((await call(`${second.apiUrl}/plants/${id}`, { token })).text).toBe(
        `{"id":${id},"name":"p${id}"}`,
      );
    }
    let count = 0;
    let url: string | undefined = `${second.apiUrl}/plants?limit=100`;
    while (url !== undefined) {
      const page = await call(url, { token });
      count += (page.json as unknown[]).length;
      const next = /^<([^>]*)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
      url = next === undefined ? undefined : new URL(next, url).href;
    }
    expect(count).toBe(300);
    expect(await second.stop('SIGTERM')).toBe(0);

    const third = await startApp({ env: { ...env, API_TOKENS: token }, dataDir: first.dataDir });
    expect((await call(`${third.apiUrl}/plants/300`, { token })).status).toBe(200);
    await third.stop();
  });

  it('loses no acknowledged plant to kill -9 while requests are in flight', async () => {
    const env = await store.env();
    const app = await startApp({ env });
    const ids = Array.from({ length: 500 }, (_, i) => 5000 + i);
    let acknowledged = 0;
    // Killed at the 50th 200 as it is read, not at a later poll: a fast store answers all 500
    // within a poll's interval.
    const inFlight = ids.map((id) =>
      create(app.apiUrl, app.token, id).then(
        (answer) => {
          if (answer.status === 200 && ++acknowledged === 50) app.child.kill('SIGKILL');
          return answer;
        },
        () => undefined,
      ),
    );
    const answers = await Promise.all(inFlight);
    // The precondition: the kill landed while requests were still unanswered.
    expect(answers.some((a) => a === undefined)).toBe(true);
    const stored = ids.filter((_, i) => answers[i]?.status === 200);
    expect(stored.length).toBeGreaterThanOrEqual(50);

    const again = await startApp({ env: { ...env, API_TOKENS: app.token }, dataDir: app.dataDir });
    await expectAllStored(again, app.token, stored);
    await again.stop();
  });

  it('finishes in-flight requests on SIGTERM, exits 0, and every 200 was stored', async () => {
    const env = await store.env();
    const app = await startApp({ env });
    // More than one group commit holds (128): the signal goes at the first answer, while the
    // later commits' requests are still being served.
    const ids = Array.from({ length: 300 }, (_, i) => 1000 + i);
    let answered = 0;
    const inFlight = ids.map((id) =>
      create(app.apiUrl, app.token, id).then(
        (answer) => {
          if (++answered === 1) app.child.kill('SIGTERM');
          return answer;
        },
        () => undefined,
      ),
    );
    const answers = await Promise.all(inFlight);
    expect(await app.exited).toBe(0);
    // The precondition: requests were answered after the signal (their log lines follow it).
    const lines = app.output().split('\n');
    const signalAt = lines.findIndex((line) => line.includes('"msg":"shutting down"'));
    expect(signalAt).toBeGreaterThan(-1);
    const servedAfter = lines
      .slice(signalAt)
      .filter((line) => line.includes('"msg":"request"') && line.includes('"status":200'));
    expect(servedAfter.length).toBeGreaterThan(0);
    const acknowledged = ids.filter((_, i) => answers[i]?.status === 200);
    // Whatever was answered was answered properly: 200, never a 5xx or a half response.
    expect(answers.filter((a) => a !== undefined).every((a) => a.status === 200)).toBe(true);

    const again = await startApp({ env: { ...env, API_TOKENS: app.token }, dataDir: app.dataDir });
    await expectAllStored(again, app.token, acknowledged);
    await again.stop();
  });
});

describe('SIGTERM', () => {
  it('stops accepting, still answers the request in flight, then exits 0 with it stored', async () => {
    const app = await startApp();
    const body = '{"id": 777, "name": "in flight"}';
    const request = httpRequest(`${app.apiUrl}/plants`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${app.token}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        // Node's server answers 100 Continue once it has parsed the headers: the condition
        // "the server has the request" to wait for.
        expect: '100-continue',
      },
    });
    const answer = new Promise<{ status?: number; text: string }>((resolve, reject) => {
      request.on('error', reject);
      request.on('response', (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode, text }));
      });
    });
    const parsed = new Promise((resolve) => request.once('continue', resolve));
    request.flushHeaders();
    await parsed;
    // Half the body: the server has the request and waits for the rest.
    await new Promise<void>((resolve, reject) =>
      request.write(body.slice(0, 10), (error) => (error ? reject(error) : resolve())),
    );
    app.child.kill('SIGTERM');
    const accepts = () =>
      fetch(`${app.healthUrl}/health/live`).then(
        () => 'accepted',
        () => 'refused',
      );
    await expect.poll(accepts, { timeout: 5_000 }).toBe('refused');
    request.end(body.slice(10));
    expect(await answer).toEqual({ status: 200, text: '{"name":"in flight"}' });
    expect(await app.exited).toBe(0);

    const again = await startApp({ dataDir: app.dataDir, env: { API_TOKENS: app.token } });
    expect((await call(`${again.apiUrl}/plants/777`, { token: app.token })).status).toBe(200);
    await again.stop();
  });
});

describe('SIGHUP', () => {
  it('stops the service like SIGTERM: shutdown hooks run, exit 0, plants kept', async () => {
    const app = await startApp();
    expect((await create(app.apiUrl, app.token, 778)).status).toBe(200);
    app.child.kill('SIGHUP');
    expect(await app.exited).toBe(0);
    expect(app.output()).toMatch(/"signal":"SIGHUP".*shutting down/);
    expect(app.output()).toContain('"msg":"stopped"');

    const again = await startApp({ dataDir: app.dataDir, env: { API_TOKENS: app.token } });
    expect((await call(`${again.apiUrl}/plants/778`, { token: app.token })).status).toBe(200);
    await again.stop();
  });
});

describe('SIGTERM and keep-alive clients', () => {
  interface Reply {
    status?: number;
    connection?: string;
  }
  /** One request on `agent`; `hold` keeps the body back until the caller releases it. */
  function send(app: RunningApp, agent: Agent, hold?: Promise<void>) {
    const body = '{"id": 779, "name": "kept alive"}';
    const request = httpRequest(`${app.apiUrl}/plants${hold ? '' : '?limit=1'}`, {
      agent,
      method: hold ? 'POST' : 'GET',
      headers: {
        authorization: `Bearer ${app.token}`,
        ...(hold
          ? {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              // The server's "100 Continue" proves it has the request in hand.
              expect: '100-continue',
            }
          : {}),
      },
    });
    const inHand = new Promise<void>((resolve) => request.once('continue', resolve));
    const reply = new Promise<Reply>((resolve, reject) => {
      request.on('error', reject);
      request.on('response', (response) => {
        response.resume();
        response.on('end', () =>
          resolve({ status: response.statusCode, connection: response.headers.connection }),
        );
      });
    });
    if (hold) void hold.then(() => request.end(body));
    else request.end();
    return { inHand, reply };
  }

  it('answers Connection: close from the signal on and exits once the requests in flight are done', async () => {
    const app = await startApp();
    const [first, second] = [new Agent({ keepAlive: true }), new Agent({ keepAlive: true })];
    // Both clients hold a kept-alive connection.
    for (const agent of [first, second]) {
      expect(await send(app, agent).reply).toEqual({ status: 200, connection: 'keep-alive' });
    }
    let release = () => {};
    const held = send(app, first, new Promise<void>((resolve) => (release = resolve)));
    await held.inHand;

    app.child.kill('SIGTERM');
    await expect.poll(() => app.output(), { timeout: 5_000 }).toContain('shutting down');
    // A new request on the other kept-alive connection: answered, and told to close.
    expect(await send(app, second).reply).toEqual({ status: 200, connection: 'close' });
    // The request in flight at the signal: answered, and told to close.
    release();
    expect(await held.reply).toEqual({ status: 200, connection: 'close' });
    expect(await app.exited).toBe(0);
    // The old code waited out the 10 s grace for the kept-alive connections, then cut them.
    expect(app.output()).not.toContain('still in flight after 10 s');
    first.destroy();
    second.destroy();
  });
});

describe('embedded store', () => {
  it('refuses a second process on the same DATA_DIR with a clear message', async () => {
    const first = await startApp();
    const second = await startApp({ dataDir: first.dataDir, waitForHealth: false });
    expect(await second.exited).not.toBe(0);
    expect(second.output()).toMatch(/in use by another Plant Store process/);
    // The first one is untouched.
    expect((await call(`${first.apiUrl}/plants`, { token: first.token })).status).toBe(200);
    await first.stop();
  });
});
