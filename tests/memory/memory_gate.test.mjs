// The memory family behind the gate, over stdio with the real host and the
// session family: critical notes listed at session_connect, other tools
// refused until recall has shown them, and the session's store as part of
// the owner key.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Gatehouse, connect, makeSessionHome, refusalCode, stopAll, text } from './gatehouse_process.mjs';

after(stopAll); // a failed assertion must not leave a host running (the test would never end)

test('critical notes: listed at connect, other tools refused until recall shows them', async () => {
  const home = makeSessionHome();
  let host = new Gatehouse(home, 'alice');
  const first = await connect(host, 'setup');
  assert.deepEqual(first.critical_notes, []);
  const till = await host.call('remember', { session: first.session, text: 'Close the till at six, every day', critical: true });
  assert.equal(till.isError, undefined, text(till));
  const long = 'Never refund in cash without the owner: ' + 'ask first, write it down, '.repeat(10);
  const refund = await host.call('remember', { session: first.session, text: long, tags: ['rules'], critical: true });
  const plain = await host.call('remember', { session: first.session, text: 'The till sticks in the morning' });
  assert.equal(plain.isError, undefined, text(plain));
  // A note remembered in this session does not join this session's list.
  assert.equal((await host.call('remember', { session: first.session, text: 'still open' })).isError, undefined);
  await host.stop();

  host = new Gatehouse(home, 'alice');
  const second = await connect(host, 'morning');
  const tillId = String(till.structuredContent.id);
  const refundId = String(refund.structuredContent.id);
  assert.equal(second.unread_critical_notes, 2);
  assert.deepEqual(second.critical_notes.map((c) => [c.family, c.id]), [['memory', tillId], ['memory', refundId]]);
  assert.equal(second.critical_notes[0].title, 'Close the till at six, every day');
  const title = second.critical_notes[1].title;
  assert.ok(title.startsWith('Never refund in cash') && title.endsWith('…') && title.length < 70, title);

  // Every other gated tool is refused, listing the unread notes; nothing ran.
  const refused = await host.call('remember', { session: second.session, text: 'should not be kept' });
  assert.equal(refusalCode(refused), 'CRITICAL_NOTES_UNREAD', text(refused));
  assert.deepEqual(refused.structuredContent.next.unread.map((c) => c.id), [tillId, refundId]);
  assert.equal(refusalCode(await host.call('forget', { session: second.session, note_id: 3 })), 'CRITICAL_NOTES_UNREAD');
  assert.equal(refusalCode(await host.call('forget_all', { session: second.session, confirm: true })), 'CRITICAL_NOTES_UNREAD');

  // recall shows one of them: the other still blocks, and only it is listed.
  const one = await host.call('recall', { session: second.session, query: 'till' });
  assert.equal(one.isError, undefined, text(one));
  assert.ok(one.structuredContent.notes.some((n) => n.critical && String(n.id) === tillId));
  assert.equal(one.structuredContent.unread_critical_notes, 1);
  assert.match(text(one), /still unread: recall with critical: true/);
  const still = await host.call('forget', { session: second.session, note_id: Number(plain.structuredContent.id) });
  assert.equal(refusalCode(still), 'CRITICAL_NOTES_UNREAD');
  assert.deepEqual(still.structuredContent.next.unread.map((c) => c.id), [refundId]);

  // recall(critical: true) shows the rest; the same call now goes through.
  const rest = await host.call('recall', { session: second.session, critical: true });
  assert.deepEqual(rest.structuredContent.notes.map((n) => String(n.id)).sort(), [tillId, refundId].sort());
  assert.equal(rest.structuredContent.unread_critical_notes, 0);
  const done = await host.call('forget', { session: second.session, note_id: Number(plain.structuredContent.id) });
  assert.equal(done.isError, undefined, text(done));
  assert.equal(done.structuredContent.deleted, true);
  assert.equal((await host.call('remember', { session: second.session, text: 'kept now' })).isError, undefined);

  // Read in one session is not read in the next: a new conversation has not seen them.
  const third = await connect(host, 'evening');
  assert.equal(third.unread_critical_notes, 2);
  assert.equal(refusalCode(await host.call('remember', { session: third.session, text: 'x' })), 'CRITICAL_NOTES_UNREAD');
  await host.stop();
  fs.rmSync(home.dir, { recursive: true });
});

test("another owner's critical notes never appear in this owner's list", async () => {
  const home = makeSessionHome({ store: 'shop-a' });
  const alice = new Gatehouse(home, 'alice');
  const bob = new Gatehouse(home, 'bob');
  const bobs = await connect(bob, 'setup');
  assert.equal((await bob.call('remember', { session: bobs.session, text: 'bob: the safe code rule', critical: true })).isError, undefined);
  home.setProgram('shop-b', 'ann');
  const aliceB = await connect(alice, 'setup');
  assert.equal(aliceB.store, 'shop-b');
  assert.equal((await alice.call('remember', { session: aliceB.session, text: 'alice in shop b: count the stock', critical: true })).isError, undefined);
  home.setProgram('shop-a', 'ann');

  const aliceA = await connect(alice, 'work');
  assert.equal(aliceA.store, 'shop-a');
  assert.deepEqual(aliceA.critical_notes, []); // bob's (same store) and her own in shop-b are not hers here
  assert.equal(aliceA.unread_critical_notes, 0);
  assert.equal((await alice.call('remember', { session: aliceA.session, text: 'alice in shop a' })).isError, undefined);
  const found = await alice.call('recall', { session: aliceA.session, critical: true });
  assert.deepEqual(found.structuredContent.notes, []);

  const bobAgain = await connect(bob, 'work');
  assert.deepEqual(bobAgain.critical_notes.map((c) => c.title), ['bob: the safe code rule']);
  await alice.stop();
  await bob.stop();
  fs.rmSync(home.dir, { recursive: true });
});

test("inside a session the owner key is the session's store", async () => {
  const home = makeSessionHome({ store: 'shop-a' });
  const host = new Gatehouse(home, 'alice');
  const a = await connect(host, 'suppliers');
  assert.equal(refusalCode(await host.call('recall', { query: 'supplier' })), 'NOT_CONNECTED');
  const kept = await host.call('remember', { session: a.session, text: 'Supplier for shop A is Petrov', tags: ['supplier'] });
  assert.equal(kept.structuredContent.id, 1);
  assert.equal((await host.call('recall', { session: a.session, query: 'supplier' })).structuredContent.notes.length, 1);

  home.setProgram('shop-b', 'ann');
  assert.equal(refusalCode(await host.call('recall', { session: a.session, query: 'supplier' })), 'STORE_SWITCHED');
  const b = await connect(host, 'suppliers');
  assert.equal(b.store, 'shop-b');
  assert.deepEqual((await host.call('recall', { session: b.session, query: 'supplier' })).structuredContent.notes, []);
  assert.deepEqual((await host.call('recall', { session: b.session, tags: ['supplier'] })).structuredContent.notes, []);
  assert.deepEqual((await host.call('recall', { session: b.session })).structuredContent.notes, []);
  const missing = await host.call('forget', { session: b.session, note_id: 1 });
  assert.equal(refusalCode(missing), 'NOTE_NOT_FOUND');
  assert.match(text(missing), /^NOTE_NOT_FOUND: No note 1:/);
  const other = await host.call('remember', { session: b.session, text: 'Supplier for shop B is Sidorov' });
  assert.equal(other.structuredContent.id, 1); // numbers are per owner, and this is another owner
  assert.equal((await host.call('forget_all', { session: b.session, confirm: true })).structuredContent.deleted, 1);

  home.setProgram('shop-a', 'ann');
  const again = await connect(host, 'suppliers');
  const found = await host.call('recall', { session: again.session, query: 'supplier' });
  assert.deepEqual(found.structuredContent.notes.map((n) => n.text), ['Supplier for shop A is Petrov']);
  await host.stop();

  // Outside a session (a host without the gate) the same principal is yet another owner.
  const plain = new Gatehouse({ config: writePlainConfig(home) }, 'alice');
  assert.deepEqual((await plain.call('recall', { query: 'supplier' })).structuredContent.notes, []);
  await plain.stop();
  fs.rmSync(home.dir, { recursive: true });
});

// The same data folder served without a session section and with gate: false:
// no gate, no store.
function writePlainConfig(home) {
  const gated = fs.readFileSync(home.config, 'utf8').split('\n');
  const plain = gated.slice(0, gated.indexOf('session:')).map((l) => (l.startsWith('plugins:') ? 'plugins: [memory.so]' : l));
  const file = home.config.replace(/\.yaml$/, '-plain.yaml');
  plain.push('gate: false');
  fs.writeFileSync(file, plain.join('\n') + '\n');
  return file;
}
