// The memory family served by the real host binary, over stdio: the story as
// written, isolation between two principals, hostile input, and notes that
// survive the host being killed with SIGKILL in the middle of a burst.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { Gatehouse, makeHome, refusalCode, text } from './gatehouse_process.mjs';

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

  const db = new DatabaseSync(home.database);
  assert.equal(db.prepare('PRAGMA integrity_check').get().integrity_check, 'ok');
  db.exec("INSERT INTO notes_fts(notes_fts) VALUES('integrity-check')"); // throws if the index disagrees
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
