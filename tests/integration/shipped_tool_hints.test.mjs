// Every shipped tool's annotations say what the tool does: a client that
// trusts readOnlyHint to skip a confirmation, or destructiveHint to ask for
// one, is told the truth. Each tool's four hints are pinned here, so a
// change to what a tool does has to change its hints (and this table) too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { withHost, binaryPath } from './lib/host.mjs';

const shipped = (name) => path.resolve(path.dirname(binaryPath()), `../lib/gatehouse/plugins/${name}`);

// [readOnlyHint, destructiveHint, idempotentHint, openWorldHint]; null where
// the spec gives the hint no meaning (destructive and idempotent of a tool
// that only reads) and the tool leaves it out.
const HINTS = {
  // session: session_connect ends the topic's previous session and makes a
  // folder; accepting rules is recorded in the session.
  session_init: [true, null, true, false],
  session_connect: [false, true, false, false],
  session_rules_accept: [false, false, true, false],
  session_clear: [false, true, false, false],
  // sessions: state of this server only; every exchange spends its code.
  create_session: [false, false, false, false],
  exchange_session_approval_code: [false, false, false, false],
  get_session_status: [true, null, true, false],
  get_active_bot: [true, null, true, false],
  // memory: recall writes the read marks of the critical notes it shows.
  remember: [false, false, false, false],
  recall: [false, false, true, false],
  forget: [false, true, true, false],
  forget_all: [false, true, true, false],
  // the host's meta tools: call_tool does whatever the tool it calls does.
  list_domains: [true, false, true, false],
  load_domain: [true, false, true, false],
  describe_tool: [true, false, true, false],
  call_tool: [false, true, false, true],
};

const hintsOf = (tool) =>
  ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'].map((h) => tool.annotations?.[h] ?? null);

test('every shipped tool carries the hints that say what it does', () =>
  withHost(
    {
      plugins: [shipped('session.so'), shipped('sessions.so'), shipped('memory.so')],
      // An on-demand domain brings the meta tools into tools/list.
      sections: { domains: { sessions: { exposure: 'on_demand' } } },
    },
    async (host) => {
      const listed = (await host.modern('tools/list')).result;
      assert.equal(listed.nextCursor, undefined);
      const loaded = await host.modern('tools/call', { name: 'load_domain', arguments: { domain: 'sessions' } });
      const tools = [...listed.tools, ...loaded.result.structuredContent.tools];
      assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(HINTS).sort(), 'each shipped tool is pinned');
      for (const tool of tools) assert.deepEqual(hintsOf(tool), HINTS[tool.name], tool.name);
    },
  ));
