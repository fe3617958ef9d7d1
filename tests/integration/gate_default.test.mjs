// The gate is on unless the YAML says `gate: false`: a host configured
// without sessions refuses every gated tool instead of serving it unchecked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { withHost, binaryPath } from './lib/host.mjs';

const sessionPlugin = path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');

test('without a session section, gated tools are refused with NOT_CONNECTED and never run', () =>
  withHost({ gate: true }, async (host) => {
    const answer = await host.modern('tools/call', { name: 'echo', arguments: { text: 'hello' } });
    const result = answer.result;
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.code, 'NOT_CONNECTED');
    assert.match(result.structuredContent.message, /no session configuration/);
    assert.ok(!JSON.stringify(result).includes('hello'), 'the plugin must not have run');
    await host.stderrMatching(/gated tools are refused/);
  }));

test('gate: false serves gated tools unchecked, and says so on stderr', () =>
  withHost({ gate: false }, async (host) => {
    const answer = await host.modern('tools/call', { name: 'echo', arguments: { text: 'hello' } });
    assert.equal(answer.result.isError, undefined);
    assert.equal(answer.result.structuredContent.text, 'hello');
    await host.stderrMatching(/WITHOUT the gate's checks/);
  }));

// A fresh install: `gatehouse serve` with no --config runs on the default
// compiled into the binary, and that default puts rules on forget_all.
test('the embedded default: forget_all is refused with RULES_NOT_ACCEPTED until its rules are accepted', () =>
  withHost({ embedded: true }, async (host) => {
    const call = async (name, args) => (await host.modern('tools/call', { name, arguments: args })).result;
    const listed = (await host.modern('tools/list')).result.tools.find((t) => t.name === 'forget_all');
    assert.ok(listed, 'forget_all is listed');
    assert.equal(listed._meta['dev.gatehouse/hasRules'], true);
    assert.ok(listed.inputSchema.required.includes('session'), 'a gated tool takes the session handle');

    const session = (await call('session_connect', { topic: 'groceries' })).structuredContent.session;
    assert.equal((await call('remember', { session, text: 'buy milk' })).isError, undefined);

    const refused = await call('forget_all', { session, confirm: true });
    assert.equal(refused.isError, true);
    assert.equal(refused.structuredContent.code, 'RULES_NOT_ACCEPTED');
    assert.match(refused.structuredContent.next.rules, /forget_all deletes every note/);
    assert.equal((await call('recall', { session })).structuredContent.notes.length, 1, 'nothing was deleted');

    // A code accepts the rules of this session only.
    const other = (await call('session_connect', { topic: 'errands' })).structuredContent.session;
    const code = refused.structuredContent.next.code;
    assert.equal((await call('session_rules_accept', { session: other, code })).isError, true);
    assert.equal((await call('session_rules_accept', { session, code })).structuredContent.accepted, 'forget_all');

    const done = await call('forget_all', { session, confirm: true });
    assert.equal(done.isError, undefined, JSON.stringify(done));
    assert.equal(done.structuredContent.deleted, 1);
    assert.equal((await call('recall', { session })).structuredContent.notes.length, 0);
  }));

// The operator's tool settings are what the gate checks: gated or not, the
// scopes required, the rules.
test('tool settings decide what the gate checks: gated, required scopes, rules', () =>
  withHost(
    {
      gate: true,
      plugins: [sessionPlugin, 'ledger.so'],
      sections: {
        session: { backend: 'memory', pinned: { store: 'shop', user: 'ann' }, grants: { shop: { ann: ['books'] } } },
        domains: {
          ledger: {
            tools: {
              ledger_balance: { gated: false },
              ledger_close: { gated: true },
              ledger_refund: { required_scopes: ['books'], rules: 'Refund only what the person named.' },
            },
          },
        },
      },
    },
    async (host) => {
      const call = async (name, args) => (await host.modern('tools/call', { name, arguments: args })).result;
      // Ungated: runs with no session at all.
      assert.equal((await call('ledger_balance', {})).structuredContent.balance, 100);
      // Declared gate-exempt, made gated: needs a session now.
      assert.equal((await call('ledger_close', {})).structuredContent.code, 'NOT_CONNECTED');
      const session = (await call('session_connect', { topic: 'books' })).structuredContent.session;
      assert.equal((await call('ledger_close', { session })).content[0].text, 'closed');
      // The family asks for books and refunds; the operator asks for books only,
      // which ann holds: the grant check passes and the operator's rules come next.
      const refund = await call('ledger_refund', { session, amount: 5 });
      assert.equal(refund.structuredContent.code, 'RULES_NOT_ACCEPTED');
      assert.equal(refund.structuredContent.next.rules, 'Refund only what the person named.');
      await call('session_rules_accept', { session, code: refund.structuredContent.next.code });
      assert.equal((await call('ledger_refund', { session, amount: 5 })).content[0].text, 'refunded 5');
    },
  ));
