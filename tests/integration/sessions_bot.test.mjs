// The sessions family over Streamable HTTP with the official v2 client
// (2026-07-28) and a real browser: a LOGIN session is created, the person
// opens the link in headless Chromium and approves (or denies), the service
// polls, exchanges the approval code once for tokens; sessions expire; a call
// naming a bot that is no longer active is refused with ACTIVE_BOT_CHANGED
// and changes nothing; money sessions without a consent prompt are refused,
// and consent counts only as the answer to the form the host asked; what
// one caller can make the host keep is bounded; a session whose bot was
// removed is neither approved nor exchanged.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync, existsSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { randomBytes } from 'node:crypto';
import puppeteer from 'puppeteer-core';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { HttpHost, pageForm } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { binaryPath, MODERN, writeConfig } from './lib/host.mjs';
import { sha256Hex } from './lib/authorization_server.mjs';

const pluginPath = (name) => path.resolve(path.dirname(binaryPath()), `../lib/gatehouse/plugins/${name}`);
const CHROMIUM = process.env.GATEHOUSE_CHROMIUM ?? '/usr/bin/chromium';

// A refusal of the family, shaped like the gate's: isError, the text
// "CODE: sentence" and structuredContent {code, message, next}.
const code = (result) => {
  if (!result.isError) return undefined;
  const { code: refusal, message, next } = result.structuredContent ?? {};
  assert.equal(result.content[0].text, `${refusal}: ${message}`, JSON.stringify(result));
  assert.equal(typeof next, 'object', JSON.stringify(result));
  return refusal;
};

// The schema a tool declared, from the one the host publishes: every
// refusal's structuredContent {code, message, next} must fit the published
// outputSchema too, so the host offers the declared schema and the
// refusal's side by side (anyOf), root keywords kept at the root.
function ownOutputSchema(published) {
  if (published === undefined) return null;
  const { anyOf, type, ...root } = published;
  assert.equal(anyOf.length, 2);
  assert.deepEqual(anyOf[1].required, ['code', 'message', 'next'], 'the second branch is the refusal');
  assert.equal(type, 'object');
  return { ...root, ...anyOf[0] };
}

// The platform's published definitions of the sessions domain.
const REGISTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/registry/sessions-domain.json');

const BOTS = [
  { slug: 'shop-bot', name: 'Shop Bot', user_seq_id: 42 },
  { slug: 'other-bot', name: 'Other Bot', user_seq_id: 7 },
];

// auth: an auth section; bearer: the token the MCP client sends; bots and
// settings: the family's; stateFile: a state file to share with another host
// (default: one of this host's own).
async function startHost({ expiry_s = 300, capabilities = {}, auth, bearer, bots = BOTS, settings = {}, stateFile } = {}) {
  const host = await HttpHost.start({
    gate: true,
    plugins: [pluginPath('session.so'), pluginPath('sessions.so')],
    sections: {
      domains: { sessions: { settings: { bots, expiry_s, ...settings } } },
      session: (dir) => {
        stateFile ??= path.join(dir, 'state.sqlite3');
        return { backend: 'sqlite', state_file: stateFile, pinned: { store: 'shop', user: 'ann' }, grants: { shop: { ann: ['sessions'] } } };
      },
      ...(auth ? { auth } : {}),
    },
  });
  const requestInit = bearer ? { headers: { Authorization: `Bearer ${bearer}` } } : undefined;
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(host.url), { requestInit }));
  const client = new Client({ name: 'itest-sessions-bot', version: '2.0.0' }, { capabilities, versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport);
  const session = (await client.callTool({ name: 'session_connect', arguments: { topic: 'bots' } })).structuredContent.session;
  const call = (name, args = {}) => client.callTool({ name, arguments: { session, ...args } });
  const stop = async () => {
    await client.close().catch(() => {});
    const result = await host.stop();
    assert.equal(result.code, 0);
    assert.deepEqual(transport.problems, [], 'every message the host sent fits the schema');
  };
  return { host, client, session, call, stop, stateFile };
}

// Everything the family keeps, straight from the SQLite state file (with
// each row's expiry, in ms since the epoch, when withExpiry).
function familyRows(stateFile, { withExpiry = false } = {}) {
  const db = new DatabaseSync(stateFile, { readOnly: true });
  try {
    const columns = withExpiry ? 'key, value, expires_ms' : 'key, value';
    return db.prepare(`SELECT ${columns} FROM state WHERE key LIKE 'family/sessions/%' ORDER BY key`).all();
  } finally {
    db.close();
  }
}

let browser;
before(async () => {
  assert.ok(existsSync(CHROMIUM), `headless Chromium is needed at ${CHROMIUM} (scripts/install-deps.sh installs it)`);
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
});
after(async () => browser?.close());

test('LOGIN: pending, approved in the browser, one exchange for tokens, a second refused', async () => {
  const { host, call, stop, stateFile } = await startHost();
  const page = await browser.newPage();
  try {
    assert.deepEqual((await call('get_active_bot')).structuredContent, { slug: 'shop-bot', name: 'Shop Bot' });
    const created = await call('create_session', {
      type: 'LOGIN',
      bot: 'shop-bot',
      external_user_id: 'ext-17',
      metadata: { note: '<script>alert(1)</script>', plan: 'gold' },
      redirect_url: `${host.origin}/health`,
    });
    assert.equal(created.isError, undefined, JSON.stringify(created));
    const { session_id, confirmation_url } = created.structuredContent;
    assert.equal(created.structuredContent.state, 'pending');
    assert.ok(confirmation_url.startsWith(`${host.origin}/pages/sessions/confirm/`));
    assert.match(confirmation_url.split('/').pop(), /^[0-9a-f]{64}$/, 'the link carries 256 random bits');

    const pending = (await call('get_session_status', { session_id })).structuredContent;
    assert.deepEqual(pending, { session_id, state: 'pending', user: null });

    const response = await page.goto(confirmation_url);
    assert.equal(response.status(), 200);
    assert.equal(response.headers()['cache-control'], 'no-store');
    assert.match(response.headers()['content-security-policy'], /frame-ancestors 'none'/);
    const text = await page.evaluate(() => document.body.innerText);
    for (const shown of ['Log in', 'Requesting service', 'Shop Bot', 'ext-17', 'gold', '<script>alert(1)</script>'])
      assert.ok(text.includes(shown), `the page shows ${shown}`);
    assert.equal((await page.$$('script')).length, 0, 'metadata is shown as text, never run');

    // A form posted without the page's own cookie, or from another site, is refused.
    const forged = await fetch(confirmation_url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'csrf=00&action=approve',
      redirect: 'manual',
    });
    assert.equal(forged.status, 403);
    const crossSite = await fetch(confirmation_url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'http://evil.example' },
      body: 'csrf=00&action=approve',
      redirect: 'manual',
    });
    assert.equal(crossSite.status, 403);
    // A cookie and a field the client made equal are no token the host issued.
    const madeUp = 'A'.repeat(64);
    const chosen = await fetch(confirmation_url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: `gh_page_csrf=${madeUp}` },
      body: `csrf=${madeUp}&action=approve`,
      redirect: 'manual',
    });
    assert.equal(chosen.status, 403);
    assert.equal((await call('get_session_status', { session_id })).structuredContent.state, 'pending');

    await Promise.all([page.waitForNavigation(), page.click('#action-approve')]);
    assert.equal(page.url(), `${host.origin}/health`, 'after approval the page follows redirect_url');

    const approved = (await call('get_session_status', { session_id })).structuredContent;
    assert.equal(approved.state, 'approved');
    assert.deepEqual(approved.user, { seq_id: 42 });
    assert.match(approved.approval_code, /^[0-9a-f]{48}$/);
    // get_session_status hands the code out, so it is kept in clear, but
    // apart from the session and no longer than the session is open.
    const holding = familyRows(stateFile, { withExpiry: true }).filter((row) => row.value.includes(approved.approval_code));
    assert.deepEqual(holding.map((row) => row.key), [`family/sessions/approval-code/${session_id}`]);
    assert.ok(holding[0].expires_ms <= Date.parse(created.structuredContent.expires_at) + 2000, 'kept until the session expires at most');

    // Another bot named: refused before anything runs, and nothing changed.
    const before = familyRows(stateFile);
    const stale = await call('exchange_session_approval_code', { approval_code: approved.approval_code, bot: 'other-bot' });
    assert.equal(code(stale), 'ACTIVE_BOT_CHANGED');
    assert.match(stale.content[0].text, /active bot is now 'shop-bot'/);
    assert.deepEqual(stale.structuredContent.next, { tool: 'get_active_bot', active_bot: 'shop-bot', named_bot: 'other-bot' });
    assert.equal(code(await call('create_session', { type: 'LOGIN', bot: 'other-bot' })), 'ACTIVE_BOT_CHANGED');
    // get_session_status names no bot, as published.
    const named = await call('get_session_status', { session_id, bot: 'other-bot' });
    assert.equal(named.isError, true);
    assert.match(named.content[0].text, /Invalid arguments/);
    assert.deepEqual(familyRows(stateFile), before, 'the refused calls wrote nothing');

    const exchanged = await call('exchange_session_approval_code', { approval_code: approved.approval_code, bot: 'shop-bot' });
    assert.equal(exchanged.isError, undefined, JSON.stringify(exchanged));
    const tokens = exchanged.structuredContent;
    assert.match(tokens.access_token, /^gha_[0-9a-f]{64}$/);
    assert.match(tokens.refresh_token, /^ghr_[0-9a-f]{64}$/);
    assert.equal(tokens.token_type, 'Bearer');
    assert.deepEqual(tokens.user, { seq_id: 42 });

    const again = await call('exchange_session_approval_code', { approval_code: approved.approval_code });
    assert.equal(code(again), 'APPROVAL_CODE_USED');
    const after = (await call('get_session_status', { session_id })).structuredContent;
    assert.equal(after.state, 'approved');
    assert.equal(after.approval_code, undefined, 'a spent code is no longer shown');

    const stored = JSON.stringify(familyRows(stateFile));
    for (const secret of [tokens.access_token, tokens.refresh_token, approved.approval_code, confirmation_url.split('/').pop()])
      assert.ok(!stored.includes(secret), 'secrets are stored only as hashes');
    assert.ok(!host.stderr.includes(tokens.access_token) && !host.stderr.includes(tokens.refresh_token), 'tokens are never logged');
    assert.equal(code(await call('exchange_session_approval_code', { approval_code: 'not-a-code' })), 'APPROVAL_CODE_UNKNOWN');

    // The decided page offers nothing more.
    await page.goto(confirmation_url);
    assert.match(await page.evaluate(() => document.body.innerText), /already|approved; there is nothing left/);
    assert.equal((await page.$$('button')).length, 0);
  } finally {
    await page.close();
    await stop();
  }
});

test('create_session, exchange_session_approval_code and get_session_status are published as the registry publishes them', async () => {
  const published = JSON.parse(readFileSync(REGISTRY, 'utf8')).tools;
  assert.deepEqual(published.map((t) => t.name).sort(), ['create_session', 'exchange_session_approval_code', 'get_session_status']);
  const { host, client, stop } = await startHost();
  try {
    const listed = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
    const plugins = JSON.parse(execFileSync(binaryPath(), ['plugins', '--config', host.config.file, '--json'], { encoding: 'utf8' }));
    for (const want of published) {
      const tool = listed.get(want.name);
      assert.ok(tool, `${want.name} is listed`);
      // Every field of the published definition; platform_version names the
      // platform release that published the page, not this family's version.
      for (const field of Object.keys(want)) {
        const where = `${want.name}.${field}`;
        switch (field) {
          case 'name':
            assert.equal(tool.name, want.name);
            break;
          case 'title':
            assert.equal(tool.title, want.title, where);
            break;
          case 'description':
            // Guidance may follow the published sentence, never replace it.
            assert.ok(tool.description.startsWith(want.description), `${where}: ${tool.description}`);
            break;
          case 'inputSchema': {
            // The host adds the session handle to every gated tool's schema; all else is the registry's.
            const input = structuredClone(tool.inputSchema);
            assert.deepEqual(input.properties.session.type, 'string');
            delete input.properties.session;
            input.required = input.required.filter((r) => r !== 'session');
            assert.deepEqual(input, want.inputSchema, where);
            break;
          }
          case 'outputSchema':
            assert.deepEqual(ownOutputSchema(tool.outputSchema), want.outputSchema, where);
            break;
          case 'domain': {
            const family = plugins.families.find((f) => f.tools.some((t) => t.name === want.name));
            assert.equal(family.family, want.domain, where);
            break;
          }
          case 'risk':
            assert.equal(tool._meta['dev.gatehouse/risk'], want.risk, where);
            break;
          case 'scope':
            assert.equal(tool._meta['dev.gatehouse/scope'], want.scope, where);
            break;
          case 'required_scopes':
            assert.deepEqual(tool._meta['dev.gatehouse/requiredScopes'], want.required_scopes, where);
            break;
          case 'platform_version':
            break;
          default:
            assert.fail(`${where}: a published field this test does not compare`);
        }
      }
    }
    // The published session_id pattern: UUID versions 1-8, the nil and the max UUID.
    const pattern = new RegExp(listed.get('get_session_status').inputSchema.properties.session_id.pattern);
    for (const id of ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '01890a5d-ac96-7ab2-80e2-4536629c90de'])
      assert.match(id, pattern);
    for (const id of ['00000000-0000-0000-0000-000000000001', '01890a5d-ac96-9ab2-80e2-4536629c90de', '01890a5d-ac96-7ab2-c0e2-4536629c90de'])
      assert.doesNotMatch(id, pattern);
  } finally {
    await stop();
  }
});

test('the published schemas hold at run time: the nil session id is looked up, product 0 and a bot on get_session_status are refused', async () => {
  const { call, stop } = await startHost();
  try {
    assert.equal(code(await call('get_session_status', { session_id: '00000000-0000-0000-0000-000000000000' })), 'SESSION_UNKNOWN');
    assert.equal(code(await call('get_session_status', { session_id: 'ffffffff-ffff-ffff-ffff-ffffffffffff' })), 'SESSION_UNKNOWN');
    assert.equal(code(await call('get_session_status', { session_id: '0190A5D0-AC96-7AB2-80E2-4536629C90DE' })), 'SESSION_UNKNOWN');
    const version9 = await call('get_session_status', { session_id: '01890a5d-ac96-9ab2-80e2-4536629c90de' });
    assert.equal(version9.isError, true);
    assert.match(version9.content[0].text, /Invalid arguments.*session_id/);
    const zero = await call('create_session', { type: 'PAY_PRODUCT', product_seq_id: 0 });
    assert.equal(zero.isError, true);
    assert.match(zero.content[0].text, /Invalid arguments.*product_seq_id/);
    // Published without a minimum length: an empty external_user_id is taken.
    const created = await call('create_session', { type: 'LOGIN', external_user_id: '' });
    assert.equal(created.isError, undefined, JSON.stringify(created));
  } finally {
    await stop();
  }
});

test('a bot user the published status cannot carry (seq_id above 2147483647) keeps the family from loading, saying why', () => {
  const { dir, file } = writeConfig({
    plugins: [pluginPath('sessions.so')],
    sections: { domains: { sessions: { settings: { bots: [{ slug: 'big-bot', user_seq_id: 2147483648 }] } } } },
  });
  try {
    const listed = spawnSync(binaryPath(), ['plugins', '--config', file, '--json'], { encoding: 'utf8' });
    assert.equal(listed.status, 1, 'a load failure is reported');
    const report = JSON.parse(listed.stdout);
    assert.deepEqual(report.families, []);
    assert.match(report.failures[0].reason, /settings\.bots\[0\]\.user_seq_id must be an integer from 1 to 2147483647/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Deny: the session is denied, has no user and no code', async () => {
  const { call, stop } = await startHost();
  const page = await browser.newPage();
  try {
    const created = (await call('create_session', { type: 'LINK', login_session_id: 'svc-9' })).structuredContent;
    await page.goto(created.confirmation_url);
    assert.ok((await page.evaluate(() => document.body.innerText)).includes('Link an account'));
    await Promise.all([page.waitForNavigation(), page.click('#action-deny')]);
    assert.match(await page.evaluate(() => document.body.innerText), /Denied/);
    const denied = (await call('get_session_status', { session_id: created.session_id })).structuredContent;
    assert.deepEqual(denied, { session_id: created.session_id, state: 'denied', user: null });

    // Pressing Approve on a stale copy of the page changes nothing.
    await page.goBack();
    await page.reload();
    assert.equal((await page.$$('button')).length, 0);
    assert.equal((await call('get_session_status', { session_id: created.session_id })).structuredContent.state, 'denied');
  } finally {
    await page.close();
    await stop();
  }
});

test('expiry: an undecided session expires; its page offers nothing', async () => {
  const { call, stop } = await startHost({ expiry_s: 1 });
  const page = await browser.newPage();
  try {
    const created = (await call('create_session', { type: 'OPEN_SUPPORT' })).structuredContent;
    await page.goto(created.confirmation_url);
    assert.equal((await page.$$('button')).length, 2, 'Approve and Deny while pending');
    await new Promise((r) => setTimeout(r, 1300));
    assert.equal((await call('get_session_status', { session_id: created.session_id })).structuredContent.state, 'expired');
    await Promise.all([page.waitForNavigation(), page.click('#action-approve')]);
    assert.match(await page.evaluate(() => document.body.innerText), /already expired/);
    assert.equal((await call('get_session_status', { session_id: created.session_id })).structuredContent.state, 'expired');
  } finally {
    await page.close();
    await stop();
  }
});

test('money sessions need consent, redirects must be safe: refused, and nothing is created', async () => {
  const { call, stop, stateFile } = await startHost();
  try {
    const before = familyRows(stateFile);
    for (const type of ['PAY_PRODUCT', 'OPEN_BILLING']) {
      const refused = await call('create_session', { type, product_seq_id: 5 });
      assert.equal(code(refused), 'CONSENT_REQUIRED');
      assert.match(refused.content[0].text, /cannot show a consent prompt/);
    }
    for (const redirect_url of ['javascript:alert(1)', 'http://user@evil.example/', 'https://ok.example/a b'])
      assert.equal(code(await call('create_session', { type: 'LOGIN', redirect_url })), 'INVALID_REDIRECT_URL');
    assert.deepEqual(familyRows(stateFile), before);
    const unknown = await call('get_session_status', { session_id: '00000000-0000-4000-8000-000000000000' });
    assert.equal(code(unknown), 'SESSION_UNKNOWN');
    assert.deepEqual(unknown.structuredContent.next, { tool: 'create_session', session_id: '00000000-0000-4000-8000-000000000000' });
  } finally {
    await stop();
  }
});

test('gatehouse bot use switches the active bot of a running host; calls naming the old one are refused', async () => {
  const { host, call, stop } = await startHost();
  try {
    const run = (...args) => execFileSync(binaryPath(), [...args, '--config', host.config.file], { encoding: 'utf8' });
    assert.match(run('bot'), /\* shop-bot/);
    assert.throws(() => run('bot', 'use', 'no-such-bot'), /no bot 'no-such-bot'/);
    assert.match(run('bot', 'use', 'other-bot'), /active bot: other-bot/);
    assert.deepEqual((await call('get_active_bot')).structuredContent, { slug: 'other-bot', name: 'Other Bot' });
    assert.equal(code(await call('create_session', { type: 'LOGIN', bot: 'shop-bot' })), 'ACTIVE_BOT_CHANGED');
    assert.equal(readFileSync(path.join(host.config.dir, 'data', 'sessions', 'active-bot'), 'utf8'), 'other-bot\n');
  } finally {
    await stop();
  }
});

test('money sessions ask the person through elicitation: created only on an explicit yes', async () => {
  const { client, call, stop, stateFile } = await startHost({ capabilities: { elicitation: { form: {} } } });
  try {
    const asked = [];
    let answer;
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      return answer;
    });
    const before = familyRows(stateFile);
    // Declined, or accepted without ticking the box: refused, nothing created.
    for (const reply of [{ action: 'decline' }, { action: 'accept', content: { confirm: false } }]) {
      answer = reply;
      const refused = await call('create_session', { type: 'PAY_PRODUCT', product_seq_id: 5 });
      assert.equal(code(refused), 'CONSENT_DECLINED');
      assert.deepEqual(familyRows(stateFile), before, 'nothing kept before the yes');
    }
    // An explicit yes: the session is created, once.
    answer = { action: 'accept', content: { confirm: true } };
    const created = await call('create_session', { type: 'PAY_PRODUCT', product_seq_id: 5 });
    assert.equal(created.isError, undefined, JSON.stringify(created));
    assert.equal(created.structuredContent.type, 'PAY_PRODUCT');
    assert.equal(created.structuredContent.state, 'pending');
    assert.equal(asked.length, 3, 'asked once per attempt');
    assert.match(asked[0].message, /PAY_PRODUCT.*product 5/);
    assert.equal(asked[0].requestedSchema.properties.confirm.type, 'boolean');
    const status = await call('get_session_status', { session_id: created.structuredContent.session_id });
    assert.equal(status.structuredContent.state, 'pending');
    // A LOGIN session moves no money and asks nothing.
    await call('create_session', { type: 'LOGIN' });
    assert.equal(asked.length, 3);
  } finally {
    await stop();
  }
});

test('with auth on, pages need no bearer token: their unguessable link is the credential', async () => {
  const key = randomBytes(24).toString('base64url');
  const { host, call, stop } = await startHost({
    auth: { mode: 'api_keys', api_keys: [{ sha256: sha256Hex(key), subject: 'desk', scopes: ['sessions'] }] },
    bearer: key,
  });
  const page = await browser.newPage();
  try {
    const mcp = await fetch(host.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    assert.equal(mcp.status, 401, 'the MCP endpoint still needs a token');
    const first = (await call('create_session', { type: 'LOGIN' })).structuredContent;
    const second = (await call('create_session', { type: 'LOGIN' })).structuredContent;

    // A link of the family's own is served without a token; one made up is not found.
    const response = await page.goto(first.confirmation_url);
    assert.equal(response.status(), 200);
    assert.equal((await page.$$('button')).length, 2);
    const pages = first.confirmation_url.slice(0, first.confirmation_url.lastIndexOf('/') + 1);
    assert.equal((await fetch(pages + 'f'.repeat(64))).status, 404, 'a guessed link of the right form');
    assert.equal((await fetch(pages + 'abc')).status, 404, 'a link too short to be unguessable');

    // The form token of one page does not fit another's form.
    const { cookie, csrf } = await pageForm(first.confirmation_url);
    const elsewhere = await fetch(second.confirmation_url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
      body: `csrf=${encodeURIComponent(csrf)}&action=approve`,
      redirect: 'manual',
    });
    assert.equal(elsewhere.status, 403);
    assert.equal((await call('get_session_status', { session_id: second.session_id })).structuredContent.state, 'pending');

    await Promise.all([page.waitForNavigation(), page.click('#action-approve')]);
    assert.equal((await call('get_session_status', { session_id: first.session_id })).structuredContent.state, 'approved');
  } finally {
    await page.close();
    await stop();
  }
});

// Shows the page and presses `action` as a browser would: the form's token
// in the cookie and the field. Resolves with the response.
async function press(url, action) {
  const { cookie, csrf } = await pageForm(url);
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
    body: `csrf=${encodeURIComponent(csrf)}&action=${action}`,
    redirect: 'manual',
  });
}

// A link another host handed out, on `host` (a restarted host listens elsewhere).
const onHost = (host, url) => host.origin + new URL(url).pathname;

// A folder of its own for a state file two hosts share in turn.
function sharedStateFile() {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-sessions-'));
  return { stateFile: path.join(dir, 'state.sqlite3'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

test('metadata is kept up to 4096 bytes; more is refused naming the argument and the limit, and nothing is created', async () => {
  const { call, stop, stateFile } = await startHost();
  try {
    const sized = (bytes) => ({ note: 'x'.repeat(bytes - JSON.stringify({ note: '' }).length) });
    assert.equal(JSON.stringify(sized(4096)).length, 4096);
    const fits = await call('create_session', { type: 'LOGIN', metadata: sized(4096) });
    assert.equal(fits.isError, undefined, JSON.stringify(fits));

    const before = familyRows(stateFile);
    const over = await call('create_session', { type: 'LOGIN', metadata: sized(4097) });
    assert.equal(code(over), 'METADATA_TOO_LARGE');
    assert.match(over.content[0].text, /metadata is 4097 bytes .* at most 4096/);
    assert.deepEqual(over.structuredContent.next, { argument: 'metadata', limit_bytes: 4096, size_bytes: 4097 });
    assert.deepEqual(familyRows(stateFile), before, 'nothing kept');
  } finally {
    await stop();
  }
});

test('live sessions are capped per caller (max_live_sessions), across a restart; a decided one frees its place', async () => {
  const shared = sharedStateFile();
  const settings = { max_live_sessions: 2 };
  let running;
  try {
    running = await startHost({ settings, stateFile: shared.stateFile });
    let { host, call, stateFile } = running;
    const first = (await call('create_session', { type: 'LOGIN' })).structuredContent;
    const second = await call('create_session', { type: 'LINK' });
    assert.equal(second.isError, undefined, JSON.stringify(second));
    // An undecided session is kept a short grace past its expiry, not the whole retention.
    const row = familyRows(stateFile, { withExpiry: true }).find((r) => r.key === `family/sessions/session/${first.session_id}`);
    assert.ok(row.expires_ms <= Date.parse(first.expires_at) + 5 * 60 * 1000 + 2000, `kept until ${new Date(row.expires_ms).toISOString()}`);

    const before = familyRows(stateFile);
    const third = await call('create_session', { type: 'LOGIN' });
    assert.equal(code(third), 'TOO_MANY_SESSIONS');
    assert.match(third.content[0].text, /You have 2 sessions pending or approved/);
    assert.equal(third.structuredContent.next.limit, 2);
    assert.equal(third.structuredContent.next.retry_at, first.expires_at);
    assert.deepEqual(familyRows(stateFile), before, 'a refused call keeps nothing');
    await running.stop();
    running = undefined;

    // The count lives in the state backend, not in the process.
    running = await startHost({ settings, stateFile: shared.stateFile });
    ({ host, call, stateFile } = running);
    assert.equal(code(await call('create_session', { type: 'LOGIN' })), 'TOO_MANY_SESSIONS');
    // Denied: no longer live, so there is room for one more.
    assert.equal((await press(onHost(host, first.confirmation_url), 'deny')).status, 200);
    const denied = familyRows(stateFile, { withExpiry: true }).find((r) => r.key === `family/sessions/session/${first.session_id}`);
    assert.ok(denied.expires_ms >= Date.now() + 86000 * 1000, 'a decided session is kept for the retention');
    const again = await call('create_session', { type: 'LOGIN' });
    assert.equal(again.isError, undefined, JSON.stringify(again));
    assert.equal(code(await call('create_session', { type: 'LOGIN' })), 'TOO_MANY_SESSIONS');
  } finally {
    await running?.stop();
    shared.remove();
  }
});

// A 2026-07-28 tools/call of create_session sent as is (no SDK in between),
// from a client that declares forms: resolves with the JSON-RPC result.
async function createRaw(host, params) {
  const reply = await host.modern('tools/call', { name: 'create_session', ...params }, {
    meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } },
  });
  assert.equal(reply.status, 200, reply.text);
  assert.ok(reply.answer.result, JSON.stringify(reply.answer));
  return reply.answer.result;
}

test('money consent counts only as the answer to a form the host asked: inputResponses sent unasked are asked again', async () => {
  const { host, session, stop, stateFile } = await startHost({ capabilities: { elicitation: { form: {} } } });
  try {
    const args = { session, type: 'PAY_PRODUCT', product_seq_id: 5 };
    const yes = { action: 'accept', content: { confirm: true } };
    const before = familyRows(stateFile);
    // A yes the client made up, without the requestState of an asking round.
    const unasked = await createRaw(host, { arguments: args, inputResponses: { money_consent: yes } });
    assert.equal(unasked.resultType, 'input_required', JSON.stringify(unasked));
    const [key] = Object.keys(unasked.inputRequests);
    assert.equal(unasked.inputRequests[key].method, 'elicitation/create');
    assert.deepEqual(familyRows(stateFile), before, 'nothing created');
    // Nor does the key of an earlier round fit without that round's state.
    const guessed = await createRaw(host, { arguments: args, inputResponses: { [key]: yes } });
    assert.equal(guessed.resultType, 'input_required', JSON.stringify(guessed));
    assert.deepEqual(familyRows(stateFile), before, 'nothing created');

    // The answer to the form asked, with its requestState: a non-boolean
    // confirm is no yes (and no fault), a true one creates the session.
    const round = (answer) =>
      createRaw(host, { arguments: args, inputResponses: { [Object.keys(guessed.inputRequests)[0]]: answer }, requestState: guessed.requestState });
    for (const answer of [{ action: 'accept', content: { confirm: 'yes' } }, { action: 'accept', content: {} }, { action: 7 }]) {
      const declined = await round(answer);
      assert.equal(code(declined), 'CONSENT_DECLINED', JSON.stringify(declined));
    }
    assert.deepEqual(familyRows(stateFile), before, 'nothing created');
    const created = await round(yes);
    assert.equal(created.isError, undefined, JSON.stringify(created));
    assert.equal(created.structuredContent.type, 'PAY_PRODUCT');
  } finally {
    await stop();
  }
});

test('money consent through a 2025-11-25 client: the host asks on the request stream, a yes creates the session', async () => {
  const { host, stop: stopHost, stateFile } = await startHost();
  const transport = new CheckedTransport(new HttpV1(new URL(host.url)));
  const client = new ClientV1({ name: 'itest-sessions-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  try {
    await client.connect(transport);
    const asked = [];
    let answer;
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return answer;
    });
    const call = (name, args) => client.callTool({ name, arguments: args });
    const { session } = (await call('session_connect', { topic: 'bots-v1' })).structuredContent;
    const before = familyRows(stateFile);
    answer = { action: 'decline' };
    assert.equal(code(await call('create_session', { session, type: 'OPEN_BILLING' })), 'CONSENT_DECLINED');
    assert.deepEqual(familyRows(stateFile), before, 'nothing created');
    answer = { action: 'accept', content: { confirm: true } };
    const created = await call('create_session', { session, type: 'OPEN_BILLING' });
    assert.equal(created.isError, undefined, JSON.stringify(created));
    assert.equal(created.structuredContent.type, 'OPEN_BILLING');
    assert.equal(asked.length, 2, 'asked once per attempt');
    assert.match(asked[1].message, /OPEN_BILLING/);
    assert.ok(transport.received.some((m) => m.method === 'elicitation/create'), 'asked on the request stream');
    assert.deepEqual(transport.problems, []);
  } finally {
    await client.close().catch(() => {});
    await stopHost();
  }
});

test('a session whose bot is no longer configured is neither approved nor exchanged', async () => {
  const shared = sharedStateFile();
  let running;
  try {
    running = await startHost({ stateFile: shared.stateFile });
    let { host, call } = running;
    const pending = (await call('create_session', { type: 'LOGIN' })).structuredContent;
    const approved = (await call('create_session', { type: 'LINK' })).structuredContent;
    assert.equal((await press(approved.confirmation_url, 'approve')).status, 200);
    const { approval_code } = (await call('get_session_status', { session_id: approved.session_id })).structuredContent;
    assert.match(approval_code, /^[0-9a-f]{48}$/);
    await running.stop();
    running = undefined;

    // The operator removed shop-bot, which both sessions were made for.
    running = await startHost({ stateFile: shared.stateFile, bots: [BOTS[1]] });
    ({ host, call } = running);
    const url = onHost(host, pending.confirmation_url);
    const shown = await (await fetch(url)).text();
    assert.match(shown, /no longer configured/);
    assert.doesNotMatch(shown, /action-approve/, 'the page offers no Approve');
    // A form naming Approve anyway is refused by the host, before the family is asked.
    const refused = await press(url, 'approve');
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /did not offer that choice/);
    assert.deepEqual((await call('get_session_status', { session_id: pending.session_id })).structuredContent, {
      session_id: pending.session_id,
      state: 'pending',
      user: null,
    });

    const exchange = await call('exchange_session_approval_code', { approval_code });
    assert.equal(code(exchange), 'BOT_REMOVED');
    assert.deepEqual(exchange.structuredContent.next, { tool: 'create_session', session_id: approved.session_id, bot: 'shop-bot' });
    const still = (await call('get_session_status', { session_id: approved.session_id })).structuredContent;
    assert.equal(still.approval_code, approval_code, 'the code was not spent');
    // Denying still works: it names no bot user.
    assert.equal((await press(url, 'deny')).status, 200);
    assert.equal((await call('get_session_status', { session_id: pending.session_id })).structuredContent.state, 'denied');
  } finally {
    await running?.stop();
    shared.remove();
  }
});
