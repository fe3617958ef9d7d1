// tools/list pagination with a small limits.page_size: walking every page
// yields each tool exactly once, and any cursor the host did not mint is
// refused with -32602.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost, listedToolNames, LEGACY, MODERN } from './lib/host.mjs';

const PAGE_SIZE = 2;

async function list(host, revision, cursor) {
  const params = cursor === undefined ? {} : { cursor };
  return revision === MODERN ? host.modern('tools/list', params) : host.request('tools/list', params);
}

function base64urlDecode(text) {
  return Buffer.from(text, 'base64url').toString('latin1');
}
function base64urlEncode(text) {
  return Buffer.from(text, 'latin1').toString('base64url');
}

for (const revision of [LEGACY, MODERN]) {
  test(`walking all pages lists every tool once (${revision})`, () =>
    withHost({ limits: { page_size: PAGE_SIZE } }, async (host) => {
      if (revision === LEGACY) await host.initialize();
      const expected = listedToolNames(host.config.file).sort();
      assert.ok(expected.length > PAGE_SIZE * 2, 'enough tools for several pages');

      const seen = [];
      let cursor;
      let pages = 0;
      do {
        const answer = await list(host, revision, cursor);
        assert.ok(answer.result, JSON.stringify(answer.error));
        assert.ok(answer.result.tools.length <= PAGE_SIZE);
        seen.push(...answer.result.tools.map((t) => t.name));
        cursor = answer.result.nextCursor;
        pages += 1;
        assert.ok(pages <= expected.length, 'the walk ends');
      } while (cursor !== undefined);

      assert.equal(pages, Math.ceil(expected.length / PAGE_SIZE));
      assert.deepEqual(seen, expected, 'every tool once, in name order');

      // A cursor can be used again: pages are a pure function of the cursor.
      const first = await list(host, revision);
      const again1 = await list(host, revision, first.result.nextCursor);
      const again2 = await list(host, revision, first.result.nextCursor);
      assert.deepEqual(again1.result.tools, again2.result.tools);
    }));

  test(`invalid and tampered cursors are -32602 (${revision})`, () =>
    withHost({ limits: { page_size: PAGE_SIZE } }, async (host) => {
      if (revision === LEGACY) await host.initialize();
      const first = await list(host, revision);
      const valid = first.result.nextCursor;
      assert.equal(typeof valid, 'string');

      const decoded = base64urlDecode(valid);
      const lastColon = decoded.lastIndexOf(':');
      const fingerprintStart = decoded.indexOf(':') + 1;
      const flip = (c) => (c === 'a' ? 'b' : 'a');
      const tampered = [
        'garbage!!',
        '',
        'x'.repeat(1000),
        valid.slice(0, 5) + (valid[5] === 'A' ? 'B' : 'A') + valid.slice(6), // a character inside the fingerprint
        valid + 'AAAA',
        // the offset moved past the end
        base64urlEncode(decoded.slice(0, lastColon + 1) + '999'),
        // a negative or non-numeric offset
        base64urlEncode(decoded.slice(0, lastColon + 1) + '-1'),
        base64urlEncode(decoded.slice(0, lastColon + 1) + '1x'),
        // the fingerprint of another list
        base64urlEncode(decoded.slice(0, fingerprintStart) + flip(decoded[fingerprintStart]) + decoded.slice(fingerprintStart + 1)),
      ];
      for (const cursor of tampered) {
        const answer = await list(host, revision, cursor);
        assert.equal(answer.error?.code, -32602, `cursor ${JSON.stringify(cursor).slice(0, 60)}`);
        assert.match(answer.error.message, /cursor/i);
      }
      for (const cursor of [42, { offset: 2 }, true]) {
        const answer = await list(host, revision, cursor);
        assert.equal(answer.error?.code, -32602, `cursor ${JSON.stringify(cursor)}`);
      }
      // Whatever single character is changed, the host answers either -32602
      // or a page some cursor of its own would give, never anything else.
      const legitimatePages = [];
      for (let page = await list(host, revision); ; page = await list(host, revision, page.result.nextCursor)) {
        legitimatePages.push(JSON.stringify(page.result.tools));
        if (page.result.nextCursor === undefined) break;
      }
      legitimatePages.push('[]');
      let refused = 0;
      for (let i = 0; i < valid.length; i++) {
        const changed = valid.slice(0, i) + (valid[i] === 'x' ? 'y' : 'x') + valid.slice(i + 1);
        const answer = await list(host, revision, changed);
        if (answer.error) {
          assert.equal(answer.error.code, -32602);
          refused += 1;
        } else {
          assert.ok(legitimatePages.includes(JSON.stringify(answer.result.tools)), `cursor ${changed} gave a page of its own`);
        }
      }
      assert.ok(refused > 0);

      // The valid cursor still works after all that.
      const second = await list(host, revision, valid);
      assert.equal(second.result.tools.length, PAGE_SIZE);
    }));
}
