// The checker every other test relies on must itself refuse what the
// protocol forbids; otherwise "every line validated" would prove nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLine, MODERN, LEGACY } from './lib/spec.mjs';

const modernList = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/list',
  params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } },
};
const legacyInit = { jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: LEGACY } };
const requests = new Map([
  ['1', modernList],
  ['2', legacyInit],
]);

const problemsOf = (message) => checkLine(typeof message === 'string' ? message : JSON.stringify(message), requests, undefined).problems;

test('a well-formed answer of each revision passes', () => {
  assert.deepEqual(
    problemsOf({
      jsonrpc: '2.0',
      id: 1,
      result: { tools: [], resultType: 'complete', ttlMs: 0, cacheScope: 'public' },
    }),
    [],
  );
  assert.deepEqual(
    problemsOf({
      jsonrpc: '2.0',
      id: 2,
      result: { protocolVersion: LEGACY, capabilities: {}, serverInfo: { name: 's', version: '1' } },
    }),
    [],
  );
  assert.deepEqual(problemsOf({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' } }), []);
});

test('what the protocol forbids is reported', () => {
  const cases = {
    'modern result without resultType': { jsonrpc: '2.0', id: 1, result: { tools: [], ttlMs: 0, cacheScope: 'public' } },
    'tools/list without ttlMs': { jsonrpc: '2.0', id: 1, result: { tools: [], resultType: 'complete', cacheScope: 'public' } },
    'a tool without inputSchema': {
      jsonrpc: '2.0',
      id: 1,
      result: { tools: [{ name: 'x' }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' },
    },
    '-32022 without data': { jsonrpc: '2.0', id: 1, error: { code: -32022, message: 'x' } },
    'InitializeResult without serverInfo': { jsonrpc: '2.0', id: 2, result: { protocolVersion: LEGACY, capabilities: {} } },
    'an answer to an id never sent': { jsonrpc: '2.0', id: 99, result: {} },
    'an id of null': { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'x' } },
    'no jsonrpc member': { id: 1, result: {} },
    'a log level that does not exist': { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'loud', data: 1 } },
    'a notification the server has no business sending': { jsonrpc: '2.0', method: 'notifications/initialized' },
    'a request from the server': { jsonrpc: '2.0', id: 5, method: 'sampling/createMessage', params: {} },
    'text that is not JSON': 'hello from a stray printf',
    'a JSON array': '[1,2]',
  };
  for (const [what, message] of Object.entries(cases)) assert.ok(problemsOf(message).length > 0, what);
});
