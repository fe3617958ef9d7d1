// The memory family served by the real host binary, over stdio: the story as
// written, isolation between two principals, hostile input, and notes that
// survive the host being killed with SIGKILL in the middle of a burst.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { DatabaseSync } from 'node:sqlite';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { binary, Gatehouse, makeHome, refusalCode, text } from './gatehouse_process.mjs';

test('the story: a contract and a call, a restart, recall and forget(99)', async () => {
  const home = makeHome();
  let host = new Gatehouse(home, 'alice');
  const contract = await host.call('remember', { text: 'Договор с ООО Ромашка до 31.12', tags: ['договор'] });
  assert.equal(contract.isError, undefined, text(contract));
  const call = await host.call('remember', { text: 'Позвонить Иванову в пятницу' });
  assert.notEqual(call.structuredContent.id, contract.structuredContent.id);
  await host.stop();

  host = new Gatehouse(home, 'alice');
  const found = await host.call('recall', { query: 'договор' });
  assert.equal(found.structuredContent.notes.length, 1);
  const note = found.structuredContent.notes[0];
  assert.equal(note.id, contract.structuredContent.id);
  assert.equal(note.text, 'Договор с ООО Ромашка до 31.12');
  assert.deepEqual(note.tags, ['договор']);
  assert.equal(note.critical, false);
  assert.match(note.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.match(text(found), /Ромашка/);
  // Any form of the word finds it (Snowball stems), and the English side too.
  assert.deepEqual((await host.call('recall', { query: 'договора' })).structuredContent.notes.map((n) => n.id), [note.id]);
  assert.deepEqual((await host.call('recall', { query: 'ИВАНОВА' })).structuredContent.notes.map((n) => n.id), [call.structuredContent.id]);

  const missing = await host.call('forget', { note_id: 99 });
  assert.equal(refusalCode(missing), 'NOTE_NOT_FOUND');
  assert.match(text(missing), /^NOTE_NOT_FOUND: No note 99/);
  assert.deepEqual(missing.structuredContent, {
    code: 'NOTE_NOT_FOUND',
    message: 'No note 99: nothing was deleted. recall lists the notes and their ids.',
    next: { tool: 'recall', note_id: 99 },
  });
  await host.stop();
  fs.rmSync(home.dir, { recursive: true });
});

test('the tools are listed with schemas and risk', async () => {
  const home = makeHome();
  const host = new Gatehouse(home, 'alice');
  const list = await host.request('tools/list');
  const tools = Object.fromEntries(list.result.tools.map((t) => [t.name, t]));
  assert.deepEqual(Object.keys(tools).sort(), ['forget', 'forget_all', 'recall', 'remember']);
  assert.equal(tools.remember._meta['dev.gatehouse/risk'], 'write');
  assert.equal(tools.recall._meta['dev.gatehouse/risk'], 'read');
  assert.equal(tools.forget._meta['dev.gatehouse/risk'], 'destructive');
  assert.equal(tools.forget_all._meta['dev.gatehouse/risk'], 'destructive');
  for (const t of Object.values(tools)) assert.equal(t.outputSchema.type, 'object');
  await host.stop();
  fs.rmSync(home.dir, { recursive: true });
});

// What the host maps: its own process and, with isolation: process, the
// family's, which any of the host's threads may have started.
function hostMaps(host) {
  const children = (pid) =>
    fs.readdirSync(`/proc/${pid}/task`).flatMap((task) =>
      fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean));
  const family = (pid) => [pid, ...children(pid).flatMap(family)];
  return family(host.child.pid).map((pid) => fs.readFileSync(`/proc/${pid}/maps`, 'utf8')).join('');
}

test('notes in SQLite never load the PostgreSQL client library', async () => {
  // libpq and the TLS, Kerberos and LDAP libraries it needs are opened only
  // when a backend asks for PostgreSQL: a host on SQLite starts without them.
  const home = makeHome();
  const host = new Gatehouse(home, 'alice');
  const stored = await host.call('remember', { text: 'Nothing from PostgreSQL here' });
  assert.equal(stored.isError, undefined, text(stored));
  const maps = hostMaps(host);
  assert.match(maps, /memory\.so/);
  assert.doesNotMatch(maps, /libpq\.so/);
  await host.stop();
  fs.rmSync(home.dir, { recursive: true });
});

test('the stemmer library is opened at the first word stemmed, not at start', async () => {
  // libstemmer relocates the tables of every Snowball language as it loads:
  // a host that has not yet stored or looked for a word has not paid for it.
  const home = makeHome();
  const host = new Gatehouse(home, 'alice');
  const list = await host.request('tools/list');
  assert.ok(list.result.tools.some((t) => t.name === 'recall'));
  let maps = hostMaps(host);
  assert.match(maps, /memory\.so/);
  assert.doesNotMatch(maps, /libstemmer/);
  const stored = await host.call('remember', { text: 'Договоры с поставщиками' });
  assert.equal(stored.isError, undefined, text(stored));
  maps = hostMaps(host);
  assert.match(maps, /libstemmer/);
  // Stemmed by it: another form of each word finds the note.
  for (const query of ['договор', 'поставщика'])
    assert.deepEqual((await host.call('recall', { query })).structuredContent.notes.map((n) => n.id),
      [stored.structuredContent.id], query);
  await host.stop();
  fs.rmSync(home.dir, { recursive: true });
});

test('alice and bob never see, find, count or delete each other\'s notes', async () => {
  const home = makeHome();
  const alice = new Gatehouse(home, 'alice');
  const bob = new Gatehouse(home, 'bob'); // two hosts on one database file
  const secret = await alice.call('remember', { text: 'alice salary review', tags: ['hr'], critical: true });
  await alice.call('remember', { text: 'alice second note', tags: ['hr'] });

  assert.deepEqual((await bob.call('recall', {})).structuredContent.notes, []);
  assert.deepEqual((await bob.call('recall', { query: 'salary' })).structuredContent.notes, []);
  assert.deepEqual((await bob.call('recall', { tags: ['hr'] })).structuredContent.notes, []);
  for (let id = 0; id <= 5; id++) {
    const r = await bob.call('forget', { note_id: id });
    assert.equal(refusalCode(r), 'NOTE_NOT_FOUND');
    assert.match(text(r), new RegExp(`^NOTE_NOT_FOUND: No note ${id}:`));
  }
  const bobs = await bob.call('remember', { text: 'bob salary too', tags: ['hr'] });
  assert.equal(bobs.structuredContent.id, 1); // numbers are per owner: nothing to count
  assert.equal((await bob.call('forget_all', { confirm: true })).structuredContent.deleted, 1);

  const still = await alice.call('recall', { query: 'salary', tags: ['HR'] });
  assert.deepEqual(still.structuredContent.notes.map((n) => n.id), [secret.structuredContent.id]);
  assert.equal(still.structuredContent.notes[0].critical, true);
  assert.equal((await alice.call('recall', {})).structuredContent.notes.length, 2);
  assert.equal((await alice.call('forget', { note_id: secret.structuredContent.id })).structuredContent.deleted, true);
  assert.equal((await alice.call('forget_all', { confirm: true })).structuredContent.deleted, 1);
  assert.deepEqual((await alice.call('recall', {})).structuredContent.notes, []);
  await alice.stop();
  await bob.stop();
  fs.rmSync(home.dir, { recursive: true });
});

test('a token whose subject is the local user\'s name is another owner: one host, stdio and HTTP', async () => {
  const key = crypto.randomBytes(24).toString('base64url');
  const sha256 = crypto.createHash('sha256').update(key).digest('hex');
  const home = makeHome({}, [
    'transports: [stdio, http]',
    'http: {listen: "127.0.0.1:0"}',
    `auth: {mode: api_keys, api_keys: [{sha256: "${sha256}", subject: alice}]}`,
  ]);
  const local = new Gatehouse(home, 'alice', { GATEHOUSE_LOG: 'info' });
  const deadline = Date.now() + 20000;
  let url;
  while (!(url = /serving MCP over HTTP at (http:\/\/\S+)/.exec(local.stderr)?.[1]) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  assert.ok(url, `the host serves HTTP too; stderr:\n${local.stderr}`);
  let nextId = 1;
  const overHttp = async (name, args) => {
    const message = {
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'memory-itests', version: '1.0.0' },
        },
      },
    };
    // One connection per request (no keep-alive pool outliving the host).
    const response = await new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: 'POST',
          agent: false,
          headers: {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            Authorization: `Bearer ${key}`,
            'MCP-Protocol-Version': '2026-07-28',
            'Mcp-Method': 'tools/call',
            'Mcp-Name': name,
            Connection: 'close',
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'] ?? '', text }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(message));
    });
    const body = response.text;
    assert.equal(response.status, 200, body);
    const data = response.type.startsWith('text/event-stream')
      ? body.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5))).find((m) => m.id === message.id)
      : JSON.parse(body);
    assert.equal(data.error, undefined, body);
    return data.result;
  };
  try {
    const operators = await local.call('remember', { text: 'the safe code is 0451', tags: ['office'], critical: true });
    assert.equal(operators.isError, undefined, text(operators));

    // The token's sub is "alice", the local user's name: still nobody's notes but its own.
    assert.deepEqual((await overHttp('recall', {})).structuredContent.notes, []);
    assert.deepEqual((await overHttp('recall', { query: 'safe code' })).structuredContent.notes, []);
    assert.deepEqual((await overHttp('recall', { tags: ['office'] })).structuredContent.notes, []);
    const theft = await overHttp('forget', { note_id: operators.structuredContent.id });
    assert.equal(theft.isError, true);
    const tokens = await overHttp('remember', { text: 'the token\'s own note' });
    assert.equal(tokens.structuredContent.id, 1, 'numbers are per owner');
    assert.equal((await overHttp('forget_all', { confirm: true })).structuredContent.deleted, 1);

    const still = await local.call('recall', {});
    assert.deepEqual(still.structuredContent.notes.map((n) => n.text), ['the safe code is 0451']);
  } finally {
    await local.stop();
  }
  // The local user's notes are kept under its plain name, as before owner
  // keys: a database written by an earlier version is still the operator's.
  const db = new DatabaseSync(home.database, { readOnly: true });
  const owners = db.prepare('SELECT subject FROM owners ORDER BY subject').all().map((r) => r.subject);
  db.close();
  assert.ok(owners.includes('alice'), JSON.stringify(owners));
  assert.ok(owners.every((o) => o === 'alice' || o.startsWith('token:')), JSON.stringify(owners));
  fs.rmSync(home.dir, { recursive: true });
});

// The schema version 1 wrote (before stemming): a file from an earlier
// version, made here as that version made it.
const VERSION_1_SCHEMA = `
CREATE TABLE owners (id INTEGER PRIMARY KEY, subject TEXT NOT NULL, store TEXT NOT NULL,
  next_number INTEGER NOT NULL DEFAULT 1, note_count INTEGER NOT NULL DEFAULT 0,
  token_count INTEGER NOT NULL DEFAULT 0, UNIQUE (subject, store));
CREATE TABLE notes (id INTEGER PRIMARY KEY, owner_id INTEGER NOT NULL REFERENCES owners(id),
  number INTEGER NOT NULL, text TEXT NOT NULL, tags TEXT NOT NULL, critical INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL, token_count INTEGER NOT NULL, UNIQUE (owner_id, number));
CREATE INDEX notes_critical ON notes (owner_id, number) WHERE critical = 1;
CREATE TABLE note_tags (owner_id INTEGER NOT NULL, tag_key TEXT NOT NULL,
  note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, PRIMARY KEY (owner_id, tag_key, note_id)) WITHOUT ROWID;
CREATE INDEX note_tags_by_note ON note_tags (note_id);
CREATE TABLE critical_reads (owner_id INTEGER NOT NULL, note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
  first_read_ms INTEGER NOT NULL, PRIMARY KEY (owner_id, note_id)) WITHOUT ROWID;
CREATE INDEX critical_reads_by_note ON critical_reads (note_id);
CREATE VIRTUAL TABLE notes_fts USING fts5(text, tags, content = 'notes', content_rowid = 'id',
  tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
  INSERT INTO notes_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags); END;
CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
  INSERT INTO notes_fts (notes_fts, rowid, text, tags) VALUES ('delete', old.id, old.text, old.tags); END;
PRAGMA user_version = 1;`;

// `gatehouse notes check`: the family reads its whole database (the index
// needs its tokenizer, so no other SQLite can).
function checkNotes(home) {
  const run = spawnSync(binary, ['notes', 'check', '--config', home.config], { encoding: 'utf8', env: { ...process.env, GATEHOUSE_LOG: 'warn' } });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  return run.stdout;
}

test('a file an earlier version wrote is migrated: the local user\'s notes are still its own, found by stem', async () => {
  const home = makeHome();
  fs.mkdirSync(path.dirname(home.database), { recursive: true });
  // What an earlier version wrote: schema 1, the owner row keyed by the plain subject.
  const db = new DatabaseSync(home.database);
  db.exec(VERSION_1_SCHEMA);
  db.exec("INSERT INTO owners (subject, store, next_number, note_count, token_count) VALUES ('bob', '', 8, 1, 7)");
  const owner = db.prepare("SELECT id FROM owners WHERE subject = 'bob'").get().id;
  db.prepare("INSERT INTO notes (owner_id, number, text, tags, critical, created_ms, token_count) VALUES (?, 7, 'Договор с ООО Ромашка до 31.12', '[]', 0, 1800000000000, 7)").run(owner);
  db.close();
  const host = new Gatehouse(home, 'bob');
  try {
    const found = await host.call('recall', {});
    assert.deepEqual(found.structuredContent.notes.map((n) => [n.id, n.text]), [[7, 'Договор с ООО Ромашка до 31.12']]);
    const byStem = await host.call('recall', { query: 'договоров' });
    assert.deepEqual(byStem.structuredContent.notes.map((n) => n.id), [7]);
    assert.equal((await host.call('remember', { text: 'new after the upgrade' })).structuredContent.id, 8);
  } finally {
    await host.stop();
  }
  assert.match(checkNotes(home), /^ok: 2 notes of 1 owners/);
  fs.rmSync(home.dir, { recursive: true });
});

test('hostile input gets a result or a clear error, and the memory keeps working', async () => {
  const home = makeHome({ max_text_bytes: 65536 });
  const host = new Gatehouse(home, 'mallory');
  const odd = await host.call('remember', { text: `x'); DROP TABLE notes; -- "NEAR" OR * col:umn` });
  assert.equal(odd.isError, undefined, text(odd));
  for (const query of ['"', '"unbalanced', '*', 'NEAR(a b)', 'a OR', 'AND', 'text:x', "'; DROP TABLE notes; --", '(']) {
    const r = await host.call('recall', { query });
    assert.equal(r.isError, undefined, `${query}: ${text(r)}`);
  }
  assert.equal((await host.call('recall', { query: 'DROP' })).structuredContent.notes.length, 1);

  const big = await host.call('remember', { text: 'я'.repeat(512 * 1024) }); // 1 MiB of UTF-8
  assert.equal(big.isError, true);
  assert.match(text(big), /1048576 bytes.*65536/);
  for (const blank of ['', '   ', '\n\t ']) {
    const r = await host.call('remember', { text: blank });
    assert.equal(r.isError, true);
    assert.match(text(r), /empty/);
  }
  const tags = await host.call('remember', { text: 'many tags', tags: Array.from({ length: 10000 }, (_, i) => `t${i}`) });
  assert.equal(tags.isError, true);
  assert.match(text(tags), /10000 tags.*32/);
  const longTag = await host.call('remember', { text: 'long tag', tags: ['x'.repeat(1000)] });
  assert.equal(longTag.isError, true);
  assert.match(text(longTag), /1000 characters/);
  const card = await host.call('remember', { text: 'card 4111-1111-1111-1111 exp 12/30' });
  assert.equal(refusalCode(card), 'CARD_NUMBER_IN_NOTE');
  assert.match(text(card), /card number/);
  assert.doesNotMatch(JSON.stringify(card), /4111-1111-1111-1111/);
  assert.deepEqual(card.structuredContent.next, { argument: 'text', last4: '1111' });
  const hidden = await host.call('remember', { text: 'card \u0664\u0661\u0661\u0661\u00a01111\u200b1111.1111' });
  assert.equal(refusalCode(hidden), 'CARD_NUMBER_IN_NOTE');
  const wrongType = await host.call('remember', { text: 42 });
  assert.equal(wrongType.isError, true);
  const noConfirm = await host.call('forget_all', { confirm: false });
  assert.equal(noConfirm.isError, true);
  assert.equal((await host.call('recall', { limit: 1000 })).structuredContent.notes.length, 1);

  // Invalid UTF-8 never reaches the plugin: the host refuses the line.
  host.writeRaw(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":777,"method":"tools/call","params":{"name":"remember","arguments":{"text":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}}}\n')]));
  const after = await host.call('remember', { text: 'still working' });
  assert.equal(after.isError, undefined, text(after));
  assert.equal(host.untagged.length, 1);
  assert.equal(host.untagged[0].error.code, -32700);
  assert.deepEqual((await host.call('recall', { query: 'working' })).structuredContent.notes.map((n) => n.text), ['still working']);
  await host.stop();
  fs.rmSync(home.dir, { recursive: true });
});

test('every acknowledged note survives SIGKILL in the middle of a burst', async (t) => {
  const home = makeHome();
  const host = new Gatehouse(home, 'alice');
  await host.call('remember', { text: 'warm-up' }); // the database exists before the burst
  const acknowledged = [];
  const burst = [];
  for (let i = 0; i < 3000; i++) {
    burst.push(
      host.request('tools/call', { name: 'remember', arguments: { text: `burst note ${i}`, tags: ['burst'] } }).then((m) => {
        if (m.result && !m.result.isError) acknowledged.push(m.result.structuredContent.id);
      }),
    );
  }
  await new Promise((resolve) => {
    const poll = setInterval(() => {
      if (acknowledged.length >= 200) {
        clearInterval(poll);
        resolve();
      }
    }, 1);
  });
  host.child.kill('SIGKILL');
  const { signal } = await host.exited;
  await Promise.all(burst);
  assert.equal(signal, 'SIGKILL');
  assert.ok(acknowledged.length >= 200 && acknowledged.length < 3000, `killed after ${acknowledged.length} answers`);

  checkNotes(home); // the file, the index and the counts agree
  const db = new DatabaseSync(home.database);
  const stored = new Set(db.prepare("SELECT n.number FROM notes n JOIN owners o ON o.id = n.owner_id WHERE o.subject = 'alice'").all().map((r) => r.number));
  db.close();
  t.diagnostic(`killed after ${acknowledged.length} of 3000 answers; ${stored.size} notes on disk`);
  const lost = acknowledged.filter((id) => !stored.has(id));
  assert.deepEqual(lost, []);

  const again = new Gatehouse(home, 'alice');
  const last = acknowledged[acknowledged.length - 1];
  const found = await again.call('recall', { query: `burst note`, tags: ['burst'], limit: 50 });
  assert.equal(found.structuredContent.notes.length, 50);
  assert.equal((await again.call('forget', { note_id: last })).structuredContent.deleted, true);
  await again.stop();
  fs.rmSync(home.dir, { recursive: true });
});
