// The gate is on unless the YAML says `gate: false`: a host configured
// without sessions refuses every gated tool instead of serving it unchecked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost } from './lib/host.mjs';

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
