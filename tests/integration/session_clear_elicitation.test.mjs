// session_clear asks the person: with a client that can show forms, the
// person ticks the conversation folders to delete and confirms — through a
// real 2025-11-25 client (@modelcontextprotocol/sdk 1.x, the host sends
// elicitation/create on the request's stream) and a real 2026-07-28 client
// (@modelcontextprotocol/client 2.x, InputRequiredResult and a retry). A
// client without forms keeps the list-then-name flow. The form names the
// session's store and user; once the program has left them (another store or
// user, no store, not running), session_clear refuses STORE_SWITCHED and
// deletes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { existsSync, writeFileSync } from 'node:fs';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { binaryPath, writeConfig, MODERN } from './lib/host.mjs';

const sessionPlugin = () => path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');

const options = () => ({
  gate: true,
  plugins: [sessionPlugin()],
  sections: {
    session: (dir) => {
      writeFileSync(
        path.join(dir, 'program.json'),
        JSON.stringify({ running: true, store: 'shop', user: 'ann', updated: '2026-11-30T10:00:00Z' }),
      );
      return { backend: 'sqlite', program_state_file: path.join(dir, 'program.json') };
    },
  },
});

// Opens three conversations, runs session_clear (the agent proposing
// `proposed`), and answers the form with `answer`; resolves with the tool
// result and the form the person saw.
async function clearThroughForm(client, setHandler, answer, proposed) {
  let form;
  setHandler(async (request) => {
    form = request.params;
    return answer;
  });
  const call = (name, args) => client.callTool({ name, arguments: args });
  let session;
  for (const topic of ['orders', 'returns', 'stock']) session = (await call('session_connect', { topic })).structuredContent.session;
  const args = proposed ? { session, delete: proposed } : { session };
  return { result: await call('session_clear', args), form };
}

function assertDeletedReturns({ result, form }) {
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.deepEqual(form.requestedSchema.properties.folders.items.enum.sort(), ['orders', 'returns', 'stock']);
  assert.deepEqual(form.requestedSchema.properties.folders.default, ['returns']);
  assert.match(form.message, /store 'shop', user 'ann'/);
  assert.equal(result.structuredContent.asked_person, true);
  assert.deepEqual(result.structuredContent.deleted, ['returns']);
  assert.deepEqual(result.structuredContent.folders.map((f) => f.name).sort(), ['orders', 'stock']);
}

const pick = (folders) => ({ action: 'accept', content: { folders, confirm: true } });

const writeProgram = (dir, state) =>
  writeFileSync(path.join(dir, 'program.json'), JSON.stringify({ ...state, updated: '2026-11-30T10:05:00Z' }));

function assertStoreSwitched(result, topic) {
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.equal(result.structuredContent.code, 'STORE_SWITCHED', JSON.stringify(result));
  assert.deepEqual(result.structuredContent.next, { tool: 'session_connect', topic });
  assert.equal(result.content[0].text, `STORE_SWITCHED: ${result.structuredContent.message}`);
}

test('@modelcontextprotocol/sdk 1.x over HTTP: the person picks the folders in a form (2025-11-25)', async () => {
  const host = await HttpHost.start(options());
  const transport = new CheckedTransport(new HttpV1(new URL(host.url)));
  const client = new ClientV1({ name: 'itest-clear-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  try {
    await client.connect(transport);
    const outcome = await clearThroughForm(client, (h) => client.setRequestHandler(ElicitRequestSchema, h), pick(['returns']), ['returns', 'no-such']);
    assertDeletedReturns(outcome);
    assert.ok(transport.received.some((m) => m.method === 'elicitation/create'), 'asked on the request stream');
    assert.deepEqual(transport.problems, []);
  } finally {
    await client.close();
    await host.stop();
  }
});

test('@modelcontextprotocol/sdk 1.x over stdio: a declined or unconfirmed form deletes nothing', async () => {
  const config = writeConfig(options());
  const transport = new CheckedTransport(
    new StdioV1({ command: binaryPath(), args: ['serve', '--config', config.file], env: { PATH: process.env.PATH, GATEHOUSE_LOG: 'warn' }, stderr: 'pipe' }),
  );
  const client = new ClientV1({ name: 'itest-clear-v1-stdio', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  try {
    await client.connect(transport);
    const declined = await clearThroughForm(client, (h) => client.setRequestHandler(ElicitRequestSchema, h), { action: 'decline' });
    assert.equal(declined.result.structuredContent.deleted, undefined);
    assert.equal(declined.result.structuredContent.folders.length, 3);
    assert.match(declined.result.content[0].text, /The person deleted nothing/);
    const unconfirmed = await clearThroughForm(client, (h) => client.setRequestHandler(ElicitRequestSchema, h), {
      action: 'accept',
      content: { folders: ['orders'], confirm: false },
    });
    assert.equal(unconfirmed.result.structuredContent.folders.length, 3);
    const confirmed = await clearThroughForm(client, (h) => client.setRequestHandler(ElicitRequestSchema, h), pick(['returns']), ['returns']);
    assertDeletedReturns(confirmed);
    assert.deepEqual(transport.problems, []);
  } finally {
    await client.close();
  }
});

test('@modelcontextprotocol/client 2.x over HTTP: the same form by InputRequiredResult and retry (2026-07-28)', async () => {
  const host = await HttpHost.start(options());
  const transport = new CheckedTransport(new HttpV2(new URL(host.url)));
  const client = new ClientV2(
    { name: 'itest-clear-v2', version: '2.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } },
  );
  try {
    await client.connect(transport);
    const outcome = await clearThroughForm(client, (h) => client.setRequestHandler('elicitation/create', h), pick(['returns']), ['returns']);
    assertDeletedReturns(outcome);
    const asked = transport.received.find((m) => m.result?.resultType === 'input_required');
    assert.ok(asked, 'the first answer asked for input');
    assert.equal(typeof asked.result.requestState, 'string');
    assert.ok(!transport.received.some((m) => m.method === 'elicitation/create'), 'never a request of the server');
    assert.deepEqual(transport.problems, []);
  } finally {
    await client.close();
    await host.stop();
  }
});

test('a 2026-07-28 client without forms keeps the list-then-name flow', async () => {
  const host = await HttpHost.start(options());
  const client = new ClientV2({ name: 'itest-clear-v2-plain', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  try {
    await client.connect(new HttpV2(new URL(host.url)));
    const call = (name, args) => client.callTool({ name, arguments: args });
    let session;
    for (const topic of ['orders', 'returns']) session = (await call('session_connect', { topic })).structuredContent.session;
    const listed = (await call('session_clear', { session })).structuredContent;
    assert.equal(listed.asked_person, undefined);
    assert.equal(listed.folders.length, 2);
    const cleared = (await call('session_clear', { session, delete: ['orders'] })).structuredContent;
    assert.deepEqual(cleared.deleted, ['orders']);
    assert.deepEqual(cleared.folders.map((f) => f.name), ['returns']);
  } finally {
    await client.close();
    await host.stop();
  }
});

test('a session whose store or user the program has left is refused STORE_SWITCHED, its folders kept', async () => {
  const host = await HttpHost.start(options());
  const transport = new CheckedTransport(new HttpV1(new URL(host.url)));
  const client = new ClientV1({ name: 'itest-clear-switched', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const forms = [];
  let onForm = async () => pick(['orders', 'returns']);
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    forms.push(request.params);
    return onForm();
  });
  try {
    await client.connect(transport);
    const call = (name, args) => client.callTool({ name, arguments: args });
    const folders = [];
    let session;
    for (const topic of ['orders', 'returns']) {
      const opened = (await call('session_connect', { topic })).structuredContent;
      folders.push(opened.folder);
      session = opened.session;
    }
    const dir = host.config.dir;
    for (const state of [
      { running: true, store: 'other-shop', user: 'bob' },
      { running: true, store: 'shop', user: 'bob' },
      { running: true, store: null, user: null },
    ]) {
      writeProgram(dir, state);
      assertStoreSwitched(await call('session_clear', { session, delete: ['orders'] }), 'returns');
    }
    assert.equal(forms.length, 0, 'no form was shown for a store the program has left');
    assert.ok(folders.every((f) => existsSync(f)), 'every folder is still there');

    // The person switches the program while the form is open: nothing is deleted.
    writeProgram(dir, { running: true, store: 'shop', user: 'ann' });
    onForm = async () => {
      writeProgram(dir, { running: true, store: 'other-shop', user: 'ann' });
      return pick(['orders', 'returns']);
    };
    assertStoreSwitched(await call('session_clear', { session }), 'returns');
    assert.equal(forms.length, 1);
    assert.match(forms[0].message, /store 'shop', user 'ann'/);
    assert.ok(folders.every((f) => existsSync(f)), 'every folder is still there');

    // Back to the session's store and user: the form asks, and the ticked folder goes.
    writeProgram(dir, { running: true, store: 'shop', user: 'ann' });
    onForm = async () => pick(['orders']);
    const cleared = await call('session_clear', { session });
    assert.equal(cleared.isError, undefined, JSON.stringify(cleared));
    assert.deepEqual(cleared.structuredContent.deleted, ['orders']);
    assert.equal(existsSync(folders[0]), false);
    assert.equal(existsSync(folders[1]), true);
    assert.deepEqual(transport.problems, []);
  } finally {
    await client.close();
    await host.stop();
  }
});

test('with the program not running, session_clear refuses STORE_SWITCHED rather than failing (2026-07-28)', async () => {
  const host = await HttpHost.start(options());
  const transport = new CheckedTransport(new HttpV2(new URL(host.url)));
  const client = new ClientV2(
    { name: 'itest-clear-not-running', version: '2.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } },
  );
  let forms = 0;
  client.setRequestHandler('elicitation/create', async () => {
    forms += 1;
    return pick(['orders']);
  });
  try {
    await client.connect(transport);
    const opened = (await client.callTool({ name: 'session_connect', arguments: { topic: 'orders' } })).structuredContent;
    writeProgram(host.config.dir, { running: false });
    const result = await client.callTool({ name: 'session_clear', arguments: { session: opened.session, delete: ['orders'] } });
    assertStoreSwitched(result, 'orders');
    assert.match(result.structuredContent.message, /no longer has this session's store open/);
    assert.equal(forms, 0);
    assert.ok(existsSync(opened.folder));
    assert.deepEqual(transport.problems, []);
  } finally {
    await client.close();
    await host.stop();
  }
});
