// Resources, resource templates, prompts and completion (plugin ABI 1.2)
// against the conformance fixture, in both revisions: what each method
// answers, pagination, the not-found errors, capabilities that follow what
// the loaded families offer, and that an ABI 1.1 plugin still loads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { withHost, binaryPath, writeConfig, LEGACY, MODERN } from './lib/host.mjs';

const FIXTURE = { plugins: ['conformance.so', 'echo.so'] };

async function start(host, revision) {
  if (revision === LEGACY) return (await host.initialize()).capabilities;
  return (await host.modern('server/discover')).result.capabilities;
}

function call(host, revision, method, params = {}) {
  return revision === LEGACY ? host.request(method, params) : host.modern(method, params);
}

// Every page of a list, following nextCursor; asserts the caching hints of
// each page in 2026-07-28 and their absence in 2025-11-25.
async function listAll(host, revision, method, key) {
  const items = [];
  let cursor;
  let pages = 0;
  do {
    const answer = await call(host, revision, method, cursor ? { cursor } : {});
    assert.equal(answer.error, undefined, JSON.stringify(answer.error));
    const result = answer.result;
    if (revision === MODERN) {
      assert.equal(result.cacheScope, 'public');
      assert.ok(Number.isInteger(result.ttlMs) && result.ttlMs >= 0);
    } else {
      assert.equal(Object.hasOwn(result, 'ttlMs'), false);
    }
    items.push(...result[key]);
    cursor = result.nextCursor;
    pages += 1;
  } while (cursor);
  return { items, pages };
}

for (const revision of [LEGACY, MODERN]) {
  test(`capabilities advertise resources, prompts and completions only when a family offers them (${revision})`, async () => {
    await withHost(FIXTURE, async (host) => {
      const caps = await start(host, revision);
      // Changes reach 2026-07-28 clients through subscriptions/listen, and a
      // 2025-11-25 session on its own channel (an upstream family may list anew).
      assert.deepEqual(caps.prompts, { listChanged: true });
      assert.deepEqual(caps.resources, { listChanged: true, subscribe: true });
      assert.deepEqual(caps.completions, {});
    });
    await withHost({ plugins: ['echo.so'] }, async (host) => {
      const caps = await start(host, revision);
      assert.ok(caps.tools);
      for (const absent of ['resources', 'prompts', 'completions']) assert.equal(caps[absent], undefined, absent);
      for (const method of ['resources/list', 'resources/read', 'prompts/list', 'prompts/get', 'completion/complete']) {
        const answer = await call(host, revision, method, { uri: 'test://static-text', name: 'x' });
        assert.equal(answer.error?.code, -32601, method);
      }
    });
  });

  test(`resources/list and resources/templates/list (${revision})`, () =>
    withHost(FIXTURE, async (host) => {
      await start(host, revision);
      const { items: resources } = await listAll(host, revision, 'resources/list', 'resources');
      assert.deepEqual(
        resources.map((r) => r.uri),
        ['test://static-binary', 'test://static-text', 'test://watched-resource'],
      );
      const text = resources.find((r) => r.uri === 'test://static-text');
      assert.equal(text.name, 'static-text');
      assert.equal(text.title, 'Static Text Resource');
      assert.equal(text.mimeType, 'text/plain');
      const binary = resources.find((r) => r.uri === 'test://static-binary');
      assert.ok(Number.isInteger(binary.size) && binary.size > 8, 'the declared size is published');
      assert.equal(Object.hasOwn(text, 'size'), false, 'no size when none is declared');

      const { items: templates } = await listAll(host, revision, 'resources/templates/list', 'resourceTemplates');
      assert.deepEqual(templates, [
        {
          uriTemplate: 'test://template/{id}/data',
          name: 'template',
          title: 'Resource Template',
          description: 'A resource template with parameter substitution; ids are digits',
          mimeType: 'application/json',
        },
      ]);
    }));

  test(`resources/read: text, blob and a template with its variable (${revision})`, () =>
    withHost(FIXTURE, async (host) => {
      await start(host, revision);
      const text = (await call(host, revision, 'resources/read', { uri: 'test://static-text' })).result;
      assert.deepEqual(text.contents, [
        { uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
      ]);

      const blob = (await call(host, revision, 'resources/read', { uri: 'test://static-binary' })).result;
      const png = Buffer.from(blob.contents[0].blob, 'base64');
      assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
      assert.equal(blob.contents[0].mimeType, 'image/png');

      const templated = (await call(host, revision, 'resources/read', { uri: 'test://template/123/data' })).result;
      assert.equal(templated.contents[0].uri, 'test://template/123/data');
      assert.deepEqual(JSON.parse(templated.contents[0].text), {
        id: '123',
        templateTest: true,
        data: 'Data for ID: 123',
      });

      if (revision === MODERN) {
        // The plugin's own hints when it gives them; private and stale otherwise.
        assert.deepEqual([blob.ttlMs, blob.cacheScope], [60000, 'public']);
        assert.deepEqual([text.ttlMs, text.cacheScope], [0, 'private']);
      } else {
        assert.equal(Object.hasOwn(blob, 'ttlMs'), false);
      }
    }));

  test(`resources/read of what does not exist is the revision's not-found error (${revision})`, () =>
    withHost(FIXTURE, async (host) => {
      await start(host, revision);
      const code = revision === MODERN ? -32602 : -32002;
      for (const uri of [
        'test://nonexistent-resource-for-conformance-testing',
        'test://template/abc/data', // fits the template; the plugin says no such id
        'test://template/1/2/data', // {id} is one path segment
        'test://template/%FF/data', // not UTF-8 once decoded
      ]) {
        const answer = await call(host, revision, 'resources/read', { uri });
        assert.equal(answer.error?.code, code, uri);
        assert.deepEqual(answer.error.data, { uri });
        assert.match(answer.error.message, /Resource not found/);
      }
      for (const params of [{}, { uri: 7 }]) {
        const answer = await call(host, revision, 'resources/read', params);
        assert.equal(answer.error?.code, -32602);
        assert.match(answer.error.message, /params\.uri/);
      }
    }));

  test(`prompts/list and prompts/get (${revision})`, () =>
    withHost(FIXTURE, async (host) => {
      await start(host, revision);
      const { items: prompts } = await listAll(host, revision, 'prompts/list', 'prompts');
      assert.deepEqual(
        prompts.map((p) => p.name),
        [
          'test_input_required_result_prompt',
          'test_prompt_with_arguments',
          'test_prompt_with_embedded_resource',
          'test_prompt_with_image',
          'test_simple_prompt',
        ],
      );
      const withArgs = prompts.find((p) => p.name === 'test_prompt_with_arguments');
      assert.deepEqual(withArgs.arguments, [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ]);

      const simple = (await call(host, revision, 'prompts/get', { name: 'test_simple_prompt' })).result;
      assert.deepEqual(simple.messages, [
        { role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } },
      ]);

      const args = (
        await call(host, revision, 'prompts/get', {
          name: 'test_prompt_with_arguments',
          arguments: { arg1: 'testValue1', arg2: 'testValue2' },
        })
      ).result;
      assert.equal(args.messages[0].content.text, "Prompt with arguments: arg1='testValue1', arg2='testValue2'");

      const embedded = (
        await call(host, revision, 'prompts/get', {
          name: 'test_prompt_with_embedded_resource',
          arguments: { resourceUri: 'test://example-resource' },
        })
      ).result;
      assert.equal(embedded.messages[0].content.type, 'resource');
      assert.equal(embedded.messages[0].content.resource.uri, 'test://example-resource');

      const image = (await call(host, revision, 'prompts/get', { name: 'test_prompt_with_image' })).result;
      assert.equal(image.messages[0].content.type, 'image');
      assert.equal(image.messages[0].content.mimeType, 'image/png');
      assert.equal(Buffer.from(image.messages[0].content.data, 'base64').subarray(1, 4).toString('latin1'), 'PNG');
    }));

  test(`prompts/get refuses unknown prompts and wrong arguments with -32602 (${revision})`, () =>
    withHost(FIXTURE, async (host) => {
      await start(host, revision);
      const cases = [
        [{ name: 'no_such_prompt' }, /Unknown prompt: 'no_such_prompt'/],
        [{}, /params\.name/],
        [{ name: 'test_prompt_with_arguments', arguments: { arg1: 'a' } }, /needs the argument 'arg2'/],
        [{ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b', arg3: 'c' } }, /no argument 'arg3'/],
        [{ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 2 } }, /'arg2'.*must be a string/],
        [{ name: 'test_simple_prompt', arguments: ['x'] }, /JSON object/],
      ];
      for (const [params, message] of cases) {
        const answer = await call(host, revision, 'prompts/get', params);
        assert.equal(answer.error?.code, -32602, JSON.stringify(params));
        assert.match(answer.error.message, message);
      }
    }));

  test(`completion/complete for prompt arguments and template variables (${revision})`, () =>
    withHost(FIXTURE, async (host) => {
      await start(host, revision);
      const complete = (params) => call(host, revision, 'completion/complete', params);
      const prompt = await complete({
        ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
        argument: { name: 'arg1', value: 'par' },
      });
      assert.deepEqual(prompt.result.completion, { values: ['paris', 'park', 'party'] });

      const template = await complete({
        ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
        argument: { name: 'id', value: '1' },
      });
      assert.deepEqual(template.result.completion.values, ['1', '12', '123']);

      // A prompt without a completer completes to nothing rather than failing.
      const none = await complete({
        ref: { type: 'ref/prompt', name: 'test_prompt_with_embedded_resource' },
        argument: { name: 'resourceUri', value: 'x' },
      });
      assert.deepEqual(none.result.completion, { values: [] });

      for (const [params, message] of [
        [{ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'a', value: '' } }, /Unknown prompt/],
        [{ ref: { type: 'ref/prompt', name: 'test_simple_prompt' }, argument: { name: 'a', value: '' } }, /no argument 'a'/],
        [{ ref: { type: 'ref/resource', uri: 'test://template/{id}/data' }, argument: { name: 'x', value: '' } }, /no variable 'x'/],
        [{ ref: { type: 'ref/resource', uri: 'test://nope/{x}' }, argument: { name: 'x', value: '' } }, /Unknown resource template/],
        [{ ref: { type: 'ref/tool', name: 'echo' }, argument: { name: 'x', value: '' } }, /ref\.type/],
        [{ ref: { type: 'ref/prompt', name: 'test_simple_prompt' } }, /params\.argument/],
      ]) {
        const answer = await complete(params);
        assert.equal(answer.error?.code, -32602, JSON.stringify(params));
        assert.match(answer.error.message, message);
      }
    }));

  test(`lists page through cursors and refuse a cursor of another list (${revision})`, () =>
    withHost({ ...FIXTURE, limits: { page_size: 1 } }, async (host) => {
      await start(host, revision);
      const resources = await listAll(host, revision, 'resources/list', 'resources');
      assert.equal(resources.pages, 3);
      assert.equal(new Set(resources.items.map((r) => r.uri)).size, 3);
      const prompts = await listAll(host, revision, 'prompts/list', 'prompts');
      assert.equal(prompts.pages, 5);
      assert.equal(new Set(prompts.items.map((p) => p.name)).size, 5);

      const firstPrompts = (await call(host, revision, 'prompts/list')).result;
      const wrongList = await call(host, revision, 'resources/list', { cursor: firstPrompts.nextCursor });
      assert.equal(wrongList.error?.code, -32602);
      assert.match(wrongList.error.message, /Invalid cursor/);
      const garbage = await call(host, revision, 'resources/templates/list', { cursor: '!!' });
      assert.equal(garbage.error?.code, -32602);
    }));

  test(`conformance tools: content types, logging, progress, errors (${revision})`, () =>
    withHost(FIXTURE, async (host) => {
      await start(host, revision);
      const tool = async (name, meta = {}) => {
        const params = { name, arguments: {} };
        const answer = revision === LEGACY
          ? await host.request('tools/call', { ...params, _meta: meta })
          : await host.modern('tools/call', params, meta);
        assert.equal(answer.error, undefined, name);
        return answer.result;
      };
      assert.equal((await tool('test_simple_text')).content[0].text, 'This is a simple text response for testing.');
      assert.equal((await tool('test_image_content')).content[0].mimeType, 'image/png');
      const audio = (await tool('test_audio_content')).content[0];
      assert.equal(audio.type, 'audio');
      assert.equal(Buffer.from(audio.data, 'base64').subarray(0, 4).toString('latin1'), 'RIFF');
      assert.equal((await tool('test_embedded_resource')).content[0].resource.uri, 'test://embedded-resource');
      assert.deepEqual(
        (await tool('test_multiple_content_types')).content.map((c) => c.type),
        ['text', 'image', 'resource'],
      );
      const failed = await tool('test_error_handling');
      assert.equal(failed.isError, true);

      let from = host.messages.length;
      if (revision === LEGACY) await host.request('logging/setLevel', { level: 'debug' });
      await tool('test_tool_with_logging', revision === MODERN ? { 'io.modelcontextprotocol/logLevel': 'debug' } : {});
      assert.deepEqual(
        host.notifications('notifications/message', from).map((n) => n.params.data),
        ['Tool execution started', 'Tool processing data', 'Tool execution completed'],
      );

      from = host.messages.length;
      await tool('test_tool_with_progress', { progressToken: 'progress-test-1' });
      const progress = host.notifications('notifications/progress', from).map((n) => n.params);
      assert.deepEqual(progress.map((p) => p.progress), [0, 50, 100]);
      assert.ok(progress.every((p) => p.progressToken === 'progress-test-1' && p.total === 100));
    }));
}

test('an ABI 1.1 plugin loads beside an ABI 1.2 one and serves its tool', () =>
  withHost({ plugins: ['abi11.so', 'conformance.so'] }, async (host) => {
    await host.initialize();
    const { tools } = (await host.request('tools/list')).result;
    assert.ok(tools.some((t) => t.name === 'abi11_ping'));
    const pong = (await host.request('tools/call', { name: 'abi11_ping', arguments: {} })).result;
    assert.deepEqual(pong.content, [{ type: 'text', text: 'pong' }]);
    // Its descriptor ends before the 1.2 fields: nothing of it is listed there.
    const { resources } = (await host.request('resources/list')).result;
    assert.equal(resources.length, 3);
    assert.doesNotMatch(host.stderr, /abi11.*(refused|failed)/i);
  }));

for (const revision of [LEGACY, MODERN]) {
  test(`a plugin's failures and malformed answers become protocol errors (${revision})`, () =>
    withHost({ plugins: ['broken_bad_answers.so'] }, async (host) => {
      await start(host, revision);
      const read = (uri) => call(host, revision, 'resources/read', { uri });
      const both = await read('bad://both');
      assert.equal(both.error?.code, -32603);
      assert.match(both.error.message, /failed; the host logged the details/);
      await host.stderrMatching(/contents\[0\] must carry exactly one of "text" and "blob"/);

      const offline = await read('bad://offline');
      assert.deepEqual([offline.error?.code, offline.error?.message], [-32603, 'The archive is offline; try again in an hour.']);
      const refused = await read('bad://refused');
      assert.deepEqual([refused.error?.code, refused.error?.message], [-32602, 'Ask for a year after 1999.']);
      const crash = await read('bad://crash');
      assert.equal(crash.error?.code, -32603);
      assert.doesNotMatch(crash.error.message, /secret/);
      await host.stderrMatching(/secret\/path/);

      const role = await call(host, revision, 'prompts/get', { name: 'bad_role' });
      assert.equal(role.error?.code, -32603);
      await host.stderrMatching(/messages\[0\]\.role is neither/);

      const many = await call(host, revision, 'completion/complete', {
        ref: { type: 'ref/prompt', name: 'many_suggestions' },
        argument: { name: 'n', value: '' },
      });
      assert.equal(many.result.completion.values.length, 100);
      assert.equal(many.result.completion.total, 150);
      assert.equal(many.result.completion.hasMore, true);
    }));
}

test('gatehouse plugins lists what each family offers besides tools', () => {
  const config = writeConfig(FIXTURE);
  try {
    const out = JSON.parse(
      execFileSync(binaryPath(), ['plugins', '--config', config.file, '--json'], { encoding: 'utf8' }),
    );
    const conformance = out.families.find((f) => f.family === 'conformance');
    assert.deepEqual(conformance.resources, ['test://static-binary', 'test://static-text', 'test://watched-resource']);
    assert.deepEqual(conformance.resource_templates, ['test://template/{id}/data']);
    assert.equal(conformance.prompts.length, 5);
    const echo = out.families.find((f) => f.family === 'echo');
    assert.deepEqual([echo.resources, echo.resource_templates, echo.prompts], [[], [], []]);
    const text = execFileSync(binaryPath(), ['plugins', '--config', config.file], { encoding: 'utf8' });
    assert.match(text, /^  resource template test:\/\/template\/\{id\}\/data$/m);
    assert.match(text, /^  prompt test_simple_prompt$/m);
  } finally {
    rmSync(config.dir, { recursive: true, force: true });
  }
});
