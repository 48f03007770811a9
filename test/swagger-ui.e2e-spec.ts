import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';

// Swagger UI's "Try it out" in a real browser: Debian's chromium, driven by playwright-core
// (never `playwright install`). Without the plugin in src/openapi/swagger-ui-options.ts, the
// response body of GET /plants/9007199254740993 shows "id": 9007199254740992.
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
// Skipped on a machine without chromium; CI installs it (.ci/install-chromium.sh), so there a
// missing browser fails the test instead of hiding it.
const skipReason =
  existsSync(CHROMIUM) || process.env.CI
    ? undefined
    : `${CHROMIUM} is absent; install it with .ci/install-chromium.sh`;

const BIG_ID = '9007199254740993'; // 2^53 + 1: a double rounds it to 9007199254740992
const MAX_ID = '9223372036854775807'; // int64 max

describe('Swagger UI at /docs shows and sends int64 ids exactly', () => {
  let app: RunningApp;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    if (skipReason) return;
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing; CI must run .ci/install-chromium.sh first`);
    }
    app = await startApp();
    const created = await fetch(`${app.apiUrl}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.token}`, 'content-type': 'application/json' },
      body: `{"id": ${BIG_ID}, "name": "Big Monstera"}`,
    });
    expect(created.status).toBe(200);
    userDataDir = mkdtempSync(join(tmpdir(), 'plant-store-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 1000 },
      timeout: 30_000,
    });
    context.setDefaultTimeout(15_000);
    page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${app.apiUrl}/docs`);
    await authorize(page, app.token);
  });

  afterAll(async () => {
    await context?.close();
    await app?.stop();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it('GET /plants/{id}: Try it out, Execute shows the exact id', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const get = await tryItOut(page, 'getPlant');
    await get.locator('input[placeholder="id"]').fill(BIG_ID);
    await get.locator('button.execute').click();
    expect(await shownBody(get, 'Big Monstera')).toBe(
      `{\n  "id": ${BIG_ID},\n  "name": "Big Monstera"\n}`,
    );
  });

  it('GET /plants: Try it out shows the array with exact ids and the Link to the next page', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const second = await fetch(`${app.apiUrl}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.token}`, 'content-type': 'application/json' },
      body: `{"id": 9007199254740995, "name": "Next Palm"}`,
    });
    expect(second.status).toBe(200);
    const list = await tryItOut(page, 'listPlants');
    await list.locator('input[placeholder="limit"]').fill('1');
    await list.locator('button.execute').click();
    expect(await shownBody(list, 'Big Monstera')).toBe(
      `[\n  {\n    "id": ${BIG_ID},\n    "name": "Big Monstera"\n  }\n]`,
    );
    const headers = list.locator('.live-responses-table .response-col_description').filter({
      hasText: 'Response headers',
    });
    await expect
      .poll(() => headers.first().innerText())
      .toMatch(/link: <\?limit=1&cursor=[\w-]{11}>; rel="next"/);
  });

  it('POST /plants from the request body editor stores the exact id', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const post = await tryItOut(page, 'createPlant');
    await post
      .locator('textarea.body-param__text')
      .fill(`{\n  "id": ${MAX_ID},\n  "name": "Max Fern"\n}`);
    await post.locator('button.execute').click();
    expect(await shownBody(post, 'Max Fern')).toBe('{\n  "name": "Max Fern"\n}');
    const stored = await fetch(`${app.apiUrl}/plants/${MAX_ID}`, {
      headers: { authorization: `Bearer ${app.token}` },
    });
    expect(await stored.text()).toBe(`{"id":${MAX_ID},"name":"Max Fern"}`);
  });
});

/** Authorize → the bearer token → Authorize → Close. */
async function authorize(page: Page, token: string): Promise<void> {
  await page.locator('button.authorize').first().click();
  const modal = page.locator('.modal-ux');
  await modal.locator('input').first().fill(token);
  await modal.locator('.auth-btn-wrapper button.authorize').click();
  await modal.locator('button.btn-done').click();
  await modal.waitFor({ state: 'detached' });
}

/** Opens an operation by its operationId and presses "Try it out". */
async function tryItOut(page: Page, operationId: string): Promise<Locator> {
  const operation = page.locator(`#operations-plants-${operationId}`);
  await operation.locator('.opblock-summary').click();
  await operation.locator('button.try-out__btn').click();
  return operation;
}

/** The response body text shown after Execute, once it mentions `marker`. */
async function shownBody(operation: Locator, marker: string): Promise<string> {
  const body = operation
    .locator('.live-responses-table .response-col_description pre')
    .filter({ hasText: marker })
    .first();
  await body.waitFor();
  return body.innerText();
}
