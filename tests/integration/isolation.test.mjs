// Families served with isolation: process: each in a child process of its
// own. The crashy fixture ends its process every way a plugin can; the host
// must answer FAMILY_CRASHED, keep serving the echo family (in process)
// during and after, and serve crashy again from a new process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, linkSync, mkdtempSync, readFileSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { withHost, writeConfig, binaryPath, pluginDir, modernMeta, eventually } from './lib/host.mjs';

// Under AddressSanitizer the bound is the sanitizer's resident-size watch,
// and the sanitized binary alone is some 300 MiB; 640 MiB holds either build. The
// timeout leaves the allocation, slow under the sanitizer, time to reach it.
const CRASHY = { path: 'crashy.so', isolation: 'process', memory_mb: 640, tool_timeout_ms: 4000 };

function toolCall(id, name, args = {}, meta = modernMeta()) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: meta } };
}

async function pidOf(host) {
  const answer = await host.modern('tools/call', { name: 'crashy_pid', arguments: {} });
  return answer.result.isError ? null : Number(answer.result.content[0].text);
}

// Asks until the family answers again (its restart waits out a backoff).
async function servedAgain(host, timeoutMs = 15000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const pid = await pidOf(host);
    if (pid) return pid;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the crashed family did not serve again');
}

test('a segfault, an abort, an exit, unbounded memory, garbage on its pipe to the host and a hang each answer FAMILY_CRASHED; other families serve throughout, and the family again after', () =>
  withHost({ plugins: ['echo.so', CRASHY] }, async (host) => {
    await host.stderrMatching(/family 'crashy' loaded: .*\(12 tools, in a process of its own\)/);
    assert.doesNotMatch(host.stderr, /family 'echo' loaded: .*in a process of its own/);
    let pid = await servedAgain(host);
    const ways = [
      ['crashy_segfault', /process (was killed by signal|exited with status)/],
      ['crashy_abort', /process (was killed by signal 6 \(SIGABRT\)|exited with status)/],
      ['crashy_exit', /process exited with status 3/],
      ['crashy_allocate', /process (was killed by signal|exited with status)/],
      // What it writes on its pipe to the host is no frame: the host stops reading it and kills it.
      ['crashy_scribble', /it sent a broken frame \(a frame of 4294967295 bytes is beyond the bounds/],
      ['crashy_hang', /past its deadline and the grace after it, so its process was killed/],
    ];
    for (const [index, [tool, why]] of ways.entries()) {
      host.send(toolCall(`crash-${index}`, tool));
      // Another family answers while the crash is under way.
      const during = await host.modern('tools/call', { name: 'echo', arguments: { text: `during ${tool}` } });
      assert.equal(during.result.structuredContent.text, `during ${tool}`);
      const reply = (await host.response(`crash-${index}`, 30000)).message;
      const crashed = reply.result;
      assert.ok(crashed, `${tool}: ${JSON.stringify(reply)}`);
      if (tool === 'crashy_hang') {
        // The agent hears at its tool timeout; the process is killed after a grace.
        assert.equal(crashed.structuredContent.code, 'TOOL_TIMEOUT', JSON.stringify(crashed));
        await host.stderrMatching(why, 15000);
      } else {
        assert.equal(crashed.isError, true, tool);
        assert.ok(crashed.structuredContent, `${tool}: ${JSON.stringify(crashed)}`);
        assert.equal(crashed.structuredContent.code, 'FAMILY_CRASHED', JSON.stringify(crashed));
        assert.match(crashed.structuredContent.message, /The family 'crashy' stopped while serving this call/);
        assert.match(crashed.structuredContent.message, why, tool);
        assert.equal(crashed.structuredContent.next.action, 'retry');
        assert.ok(crashed.structuredContent.next.retryAfterMs > 0);
      }
      const after = await host.modern('tools/call', { name: 'echo', arguments: { text: `after ${tool}` } });
      assert.equal(after.result.structuredContent.text, `after ${tool}`);
      const next = await servedAgain(host);
      assert.notEqual(next, pid, `${tool}: a new process serves the family`);
      pid = next;
    }
    // Crashes in a row wait longer each time, and the log says how many.
    await host.stderrMatching(/family 'crashy' stopped: .*starting it again in 100 ms \(1 crash\(es\) in a row\)/);
    await host.stderrMatching(/starting it again in 3200 ms \(6 crash\(es\) in a row\)/);
    assert.match(host.stderr, /family 'crashy' serves again \(process \d+\)/);
  }));

test('a crash that leaves a process of its own behind, holding its pipes: FAMILY_CRASHED at once, the leftover killed, the family serves again', () =>
  withHost({ plugins: [CRASHY] }, async (host) => {
    const pid = await servedAgain(host);
    const began = Date.now();
    const reply = await host.modern('tools/call', { name: 'crashy_fork_abort', arguments: {} });
    const crashed = reply.result.structuredContent;
    assert.equal(crashed?.code, 'FAMILY_CRASHED', JSON.stringify(reply));
    assert.match(crashed.message, /process (was killed by signal 6 \(SIGABRT\)|exited with status)/);
    // Not at the tool's timeout (4 s): its end is seen though the helper keeps the pipes.
    assert.ok(Date.now() - began < 3000, `answered after ${Date.now() - began} ms`);
    await host.stderrMatching(/crashy helper (\d+) lives on/);
    const helper = Number(host.stderr.match(/crashy helper (\d+) lives on/)[1]);
    const until = Date.now() + 5000;
    let alive = true;
    while (alive && Date.now() < until) {
      try {
        process.kill(helper, 0);
        await new Promise((resolve) => setTimeout(resolve, 50));
      } catch {
        alive = false;
      }
    }
    assert.equal(alive, false, 'the helper went with its family');
    assert.notEqual(await servedAgain(host), pid);
  }));

test('a helper the family started in a session of its own, holding its output, does not hold up the restart', () =>
  withHost({ plugins: [CRASHY] }, async (host) => {
    const pid = await servedAgain(host);
    const reply = await host.modern('tools/call', { name: 'crashy_setsid_abort', arguments: {} });
    assert.equal(reply.result.structuredContent?.code, 'FAMILY_CRASHED', JSON.stringify(reply));
    await host.stderrMatching(/crashy daemon (\d+) lives on/);
    const daemon = Number(host.stderr.match(/crashy daemon (\d+) lives on/)[1]);
    try {
      const began = Date.now();
      // The daemon lives 20 s; the family's first restart waits 100 ms.
      const next = await servedAgain(host, 8000);
      assert.notEqual(next, pid);
      assert.ok(Date.now() - began < 8000, `served again after ${Date.now() - began} ms`);
      process.kill(daemon, 0); // still alive, still holding the pipe: the restart did not wait for it
      await host.stderrMatching(/family 'crashy' serves again/);
    } finally {
      try { process.kill(daemon, 'SIGKILL'); } catch { /* gone already */ }
    }
  }));

// A cgroup (v1 pids controller) for the host, where the system lets this
// process make one: its pids.max bounds the tasks, threads included, that the
// host and its family processes may have, as a service manager's TasksMax does.
function pidsCgroup() {
  const root = '/sys/fs/cgroup/pids';
  try {
    const dir = mkdtempSync(path.join(root, 'gatehouse-itest-'));
    return {
      dir,
      enter: (pid) => writeFileSync(path.join(dir, 'cgroup.procs'), `${pid}\n`),
      current: () => Number(readFileSync(path.join(dir, 'pids.current'), 'utf8')),
      bound: (max) => writeFileSync(path.join(dir, 'pids.max'), `${max}\n`),
      remove: () => { try { rmdirSync(dir); } catch { /* a leftover is still in it */ } },
    };
  } catch {
    return null;
  }
}

test("a family restarted at the host's task limit fails to start however far its start got, the host serving on; the family again once there is room", async (t) => {
  const cgroup = pidsCgroup();
  if (!cgroup) return t.skip('no pids cgroup can be made here (needs root and a cgroup v1 pids hierarchy)');
  try {
    await withHost({ plugins: [CRASHY, 'echo.so'] }, async (host) => {
      const first = await servedAgain(host);
      cgroup.enter(host.pid);
      // Every thread the host starts lazily runs by now.
      for (let i = 0; i < 3; ++i) await host.modern('tools/call', { name: 'echo', arguments: { text: 'warm' } });
      // As many tasks as run now: the crashed family's threads go with it,
      // and its restart finds room for some of what it starts, not all.
      cgroup.bound(cgroup.current());
      const reply = await host.modern('tools/call', { name: 'crashy_abort', arguments: {} });
      assert.equal(reply.result.structuredContent?.code, 'FAMILY_CRASHED', JSON.stringify(reply));
      const failed = () => (host.stderr.match(/family 'crashy' did not start again/g) ?? []).length;
      await eventually('a restart that fails', () => failed() >= 1);
      // Each next try finds room for one task less, down to none: a thread
      // of its own, then its process, is refused.
      for (let room = 2; room >= 0; --room) {
        const before = failed();
        cgroup.bound(cgroup.current() + room);
        await eventually(`a restart that fails with room for ${room} more`, () => failed() > before, 15000);
        const echo = await host.modern('tools/call', { name: 'echo', arguments: { text: `room ${room}` } });
        assert.equal(echo.result.structuredContent.text, `room ${room}`);
      }
      cgroup.bound('max');
      assert.notEqual(await servedAgain(host, 20000), first);
    });
  } finally {
    cgroup.remove();
  }
});

test('environment: a list gives the family\'s process the basic variables and those listed, none of the host\'s others', () =>
  withHost({
    plugins: ['echo.so', { ...CRASHY, environment: ['PGPASSWORD'] }],
    env: { PGPASSWORD: 'listed-value', GATEHOUSE_TEST_SECRET: 'not-for-families' },
  }, async (host) => {
    const pid = await servedAgain(host);
    const seen = Object.fromEntries(readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter(Boolean)
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
    assert.equal(seen.PGPASSWORD, 'listed-value');
    assert.equal(seen.GATEHOUSE_TEST_SECRET, undefined, 'a variable not listed stays the host\'s');
    assert.equal(seen.PATH, process.env.PATH);
    assert.equal(seen.GATEHOUSE_LOG, 'info', 'the host\'s own code in the child keeps its log level');
    // The host itself still has it, and an in-process family is the host.
    const hostSeen = readFileSync(`/proc/${host.pid}/environ`, 'latin1');
    assert.match(hostSeen, /GATEHOUSE_TEST_SECRET=not-for-families/);
  }));

test('a family\'s process is named for its family, as ps, top and the kernel\'s log show it', () =>
  withHost({ plugins: [CRASHY] }, async (host) => {
    const pid = await servedAgain(host);
    assert.equal(readFileSync(`/proc/${pid}/comm`, 'latin1').trim(), 'gh:crashy');
    assert.equal(readFileSync(`/proc/${host.pid}/comm`, 'latin1').trim(), 'gatehouse');
  }));

test('environment: without a list the family\'s process inherits the host\'s environment', () =>
  withHost({ plugins: [CRASHY], env: { GATEHOUSE_TEST_SECRET: 'inherited' } }, async (host) => {
    const pid = await servedAgain(host);
    assert.match(readFileSync(`/proc/${pid}/environ`, 'latin1'), /GATEHOUSE_TEST_SECRET=inherited/);
  }));

test('the host functions cross to the child: progress, log, state and the call context', () =>
  withHost({ plugins: [CRASHY] }, async (host) => {
    const answer = await host.modern('tools/call', {
      name: 'crashy_callback', arguments: { value: 'kept across' }, _meta: { progressToken: 'p1' },
    });
    assert.equal(answer.result.isError, undefined, JSON.stringify(answer));
    const out = answer.result.structuredContent;
    assert.equal(out.kept, 'kept across');
    assert.equal(out.family, 'crashy');
    assert.equal(out.tool, 'crashy_callback');
    assert.notEqual(out.pid, host.pid, 'the tool ran in another process');
    const progress = host.notifications('notifications/progress');
    assert.equal(progress.length, 1);
    assert.deepEqual([progress[0].params.progressToken, progress[0].params.progress, progress[0].params.total],
      ['p1', 1, 2]);
    await host.stderrMatching(/\[crashy\] crashy_callback keeps kept across/);
  }));

test('cancellation reaches the child: the cancelled call frees its only place', () =>
  // One place in flight for the family: the echo below runs only once the
  // cancelled slow call has returned from the plugin in its process.
  withHost({ plugins: [{ path: 'echo.so', isolation: 'process', max_in_flight: 1 }] }, async (host) => {
    host.send(toolCall('long', 'slow', { ms: 60000 }, modernMeta({ progressToken: 'long' })));
    // Its first progress says the call is inside the plugin.
    await host.waitFor((m) => m.method === 'notifications/progress' && m.params.progressToken === 'long');
    host.notify('notifications/cancelled', { requestId: 'long', reason: 'no longer needed' });
    const echo = await host.modern('tools/call', { name: 'echo', arguments: { text: 'after cancel' } });
    assert.equal(echo.result.structuredContent.text, 'after cancel');
    assert.equal(host.messages.some((m) => m.message.id === 'long'), false, 'the cancelled call got no answer');
  }));

test("a slow call in a family's process holds neither the reading there nor the family's other calls", () =>
  // The child runs each call on the thread that read it, still reading;
  // one that outlasts a tick passes the reading on, so the echo below is
  // read, run and answered while the slow call still runs.
  withHost({ plugins: [{ path: 'echo.so', isolation: 'process' }] }, async (host) => {
    host.send(toolCall('long', 'slow', { ms: 60000 }, modernMeta({ progressToken: 'long' })));
    await host.waitFor((m) => m.method === 'notifications/progress' && m.params.progressToken === 'long');
    for (const text of ['one', 'two', 'three']) {
      const echo = await host.modern('tools/call', { name: 'echo', arguments: { text } });
      assert.equal(echo.result.structuredContent.text, text);
    }
    assert.equal(host.messages.some((m) => m.message.id === 'long'), false, 'the slow call still runs');
    host.notify('notifications/cancelled', { requestId: 'long', reason: 'done' });
  }));

for (const revision of ['2026-07-28', '2025-11-25'])
  test(`calls to a family in its own process hold no thread of the host's while they run there (${revision})`, () =>
    // Two workers, and six slow calls inside the family's process at once:
    // each passed the gate and was sent, and its answer will be seen to on
    // the thread that reads that process. Were each call's thread to wait
    // for its answer, no more than the workers would be inside, and the
    // echo beside them would wait too.
    withHost({ limits: { workers: 2 }, plugins: [{ path: 'echo.so', isolation: 'process', max_in_flight: 8 }] },
      async (host) => {
        const legacy = revision === '2025-11-25';
        if (legacy) await host.initialize();
        const call = (id, name, args, progressToken) => legacy
          ? { jsonrpc: '2.0', id, method: 'tools/call',
            params: { name, arguments: args, ...(progressToken ? { _meta: { progressToken } } : {}) } }
          : toolCall(id, name, args, modernMeta(progressToken ? { progressToken } : {}));
        const echo = async (id, text) => {
          host.send(call(id, 'echo', { text }));
          return (await host.response(id)).message.result.structuredContent.text;
        };
        const ids = ['s1', 's2', 's3', 's4', 's5', 's6'];
        for (const id of ids) host.send(call(id, 'slow', { ms: 60000 }, id));
        for (const id of ids)
          await host.waitFor((m) => m.method === 'notifications/progress' && m.params.progressToken === id,
            { what: `call ${id} inside the family's process` });
        assert.equal(await echo('beside', 'beside them'), 'beside them');
        for (const id of ids) host.notify('notifications/cancelled', { requestId: id, reason: 'done' });
        assert.equal(await echo('after', 'after'), 'after');
        assert.equal(host.messages.some((m) => ids.includes(m.message.id)), false, 'a cancelled call got no answer');
      }));

test("a family's process never writes to the stdio transport: its stdout goes to the log", () =>
  withHost({ plugins: [{ path: 'noisy.so', isolation: 'process' }] }, async (host) => {
    const answer = await host.modern('tools/call', { name: 'noisy_shout', arguments: {} });
    assert.equal(answer.result.content[0].text, 'shouted');
    await host.stderrMatching(/\[noisy\] noisy printf/);
  }));

test('gatehouse plugins names the isolation; bounds without isolation: process are refused where they are written', () => {
  const { file } = writeConfig({ plugins: [CRASHY, 'echo.so'] });
  const listed = JSON.parse(execFileSync(binaryPath(), ['plugins', '--config', file, '--json'], { encoding: 'utf8' }));
  const crashy = listed.families.find((f) => f.family === 'crashy');
  assert.equal(crashy.isolation, 'process');
  assert.equal(listed.families.find((f) => f.family === 'echo').isolation, 'in_process');
  const text = execFileSync(binaryPath(), ['plugins', '--config', file], { encoding: 'utf8' });
  assert.match(text, /crashy.*isolation: process/);

  const bad = writeConfig({
    plugins: [
      { path: 'echo.so', memory_mb: 64 }, { path: 'noisy.so', isolation: 'jail' },
      { path: 'serial.so', isolation: 'in_process', environment: ['PGPASSWORD'] },
      { path: 'crashy.so', isolation: 'process', environment: ['PATH', 'A=B'] },
      { path: 'crashy.so', isolation: 'process', environment: 'all' },
    ],
  });
  const check = spawnSync(binaryPath(), ['check-config', bad.file], { encoding: 'utf8' });
  assert.equal(check.status, 1);
  assert.match(check.stderr + check.stdout, /gatehouse\.yaml:\d+:\d+: .*environment is what its own process sees: it needs isolation: process/);
  assert.match(check.stderr + check.stdout, /environment lists 'A=B', which is no variable name/);
  assert.match(check.stderr + check.stdout, /environment is inherit or a list of the host's environment variables/);
  assert.match(check.stderr + check.stdout, /gatehouse\.yaml:\d+:\d+: .*memory_mb bounds a family's own process: it needs isolation: process/);
  assert.match(check.stderr + check.stdout, /isolation must be in_process or process, not 'jail'/);
});

test('the metrics count a family’s crashes and say whether a process serves it', () =>
  withHost({ plugins: ['echo.so', CRASHY], sections: { metrics: { listen: '127.0.0.1:0', allow: ['127.0.0.1'] } } },
    async (host) => {
      await host.stderrMatching(/metrics, \/health, \/ready and \/status served on 127\.0\.0\.1:\d+/);
      const port = Number(/served on 127\.0\.0\.1:(\d+)/.exec(host.stderr)[1]);
      const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const value = (text, name) => {
        const line = text.split('\n').find((l) => l.startsWith(`${name}{family="crashy"} `));
        return line === undefined ? undefined : Number(line.split(' ').at(-1));
      };
      const before = await scrape();
      assert.equal(value(before, 'gatehouse_family_crashes_total'), 0);
      assert.equal(value(before, 'gatehouse_family_process_up'), 1);
      assert.doesNotMatch(before, /gatehouse_family_crashes_total\{family="echo"\}/, 'an in-process family has no such series');
      await host.modern('tools/call', { name: 'crashy_exit', arguments: {} });
      assert.equal(value(await scrape(), 'gatehouse_family_crashes_total'), 1);
      await servedAgain(host);
      assert.equal(value(await scrape(), 'gatehouse_family_process_up'), 1);
    }));

// Starts a program with close_range refused, as some kernels and seccomp
// profiles do (tests/fixtures/without_close_range, built beside the plugins).
const WITHOUT_CLOSE_RANGE = path.join(pluginDir(), '..', 'bin', 'without_close_range');

async function descriptorsOf(host) {
  const answer = await host.modern('tools/call', { name: 'crashy_descriptors', arguments: {} });
  assert.equal(answer.result.isError, undefined, JSON.stringify(answer));
  return answer.result.structuredContent.open;
}

// What a family's process may hold: /dev/null for stdin, the output pipe on
// 1 and 2, its pipes from and to the host on 3 and 4; nothing of the host's
// (its real stdout while plugins load, its listening sockets after).
function assertOnlyItsOwn(open, when) {
  const byFd = Object.fromEntries(open.map(({ fd, target }) => [fd, target]));
  assert.deepEqual(Object.keys(byFd).map(Number).sort((a, b) => a - b), [0, 1, 2, 3, 4], `${when}: ${JSON.stringify(open)}`);
  assert.equal(byFd[0], '/dev/null', when);
  assert.match(byFd[1], /^pipe:/, when);
  assert.equal(byFd[2], byFd[1], when);
  for (const fd of [3, 4]) assert.match(byFd[fd], /^pipe:/, when);
  assert.equal(new Set([byFd[1], byFd[3], byFd[4]]).size, 3, `three pipes: ${JSON.stringify(open)}`);
}

for (const [how, launcher] of [['', undefined], [' where close_range is refused', [WITHOUT_CLOSE_RANGE]]])
  test(`a family's process holds none of the host's descriptors, at its start and after a restart${how}`, () =>
    withHost({
      plugins: [CRASHY],
      launcher,
      // The HTTP transport beside stdio: its listening socket exists when the family starts again.
      http: { listen: '127.0.0.1:0' },
      sections: { transports: ['stdio', 'http'] },
    }, async (host) => {
      await host.stderrMatching(/serving MCP over HTTP at http:\/\/127\.0\.0\.1:\d+/);
      assertOnlyItsOwn(await descriptorsOf(host), 'at its start');
      const before = await servedAgain(host);
      const crashed = await host.modern('tools/call', { name: 'crashy_exit', arguments: {} });
      assert.equal(crashed.result.structuredContent?.code, 'FAMILY_CRASHED', JSON.stringify(crashed));
      assert.notEqual(await servedAgain(host), before);
      assertOnlyItsOwn(await descriptorsOf(host), 'after a restart');
    }));

test("a family's log lines in a call are its own: a line that looks like the host's is still under its label", () =>
  withHost({ plugins: [CRASHY] }, async (host) => {
    const forged = '2026-12-05T00:00:00.000 warning gate: FORGED host line';
    const answer = await host.modern('tools/call', { name: 'crashy_callback', arguments: { value: `v\n${forged}` } });
    assert.equal(answer.result.isError, undefined, JSON.stringify(answer));
    await host.stderrMatching(/FORGED host line/);
    const lines = host.stderr.split('\n');
    assert.equal(lines.filter((line) => line.startsWith(forged)).length, 0, 'no line of the host\'s is forged');
    for (const line of lines.filter((l) => l.includes('FORGED') || l.includes('crashy_callback keeps')))
      assert.match(line, /^\S+ \S+ \[crashy\] /, line);
  }));

test("a family that floods one call is bounded: its log lines by the allowance, its progress coalesced past its budget, its changes dropped past theirs", () =>
  withHost({ plugins: [CRASHY] }, async (host) => {
    await servedAgain(host);
    const count = 4000;
    const began = Date.now();
    const answer = await host.modern('tools/call', {
      name: 'crashy_flood', arguments: { count }, _meta: { progressToken: 'flood' },
    });
    assert.equal(answer.result.content?.[0]?.text, 'flooded', JSON.stringify(answer));
    await host.stderrMatching(/\[crashy\] writes more than 50 lines a second into the host's log; the next are counted, not written/);
    await host.stderrMatching(/\[crashy\] reports more than 20 changes a second; the next are dropped, not published/);
    const seconds = (Date.now() - began) / 1000;
    const lines = host.stderr.split('\n');
    const flood = lines.filter((line) => line.includes('crashy flood'));
    // 2 x count lines sent; the allowance's burst (500) and 50 a second reach the log.
    assert.ok(flood.length >= 1 && flood.length <= 500 + 50 * seconds + 1, `${flood.length} lines in ${seconds} s`);
    // What the plugin logs in the call (api->log, a line each or many in one)
    // belongs to the call's trace, whichever thread of the host hears it.
    for (const line of flood)
      assert.match(line, /^\S+ \S+ \[crashy\] crashy flood (message|line) \d+ trace_id=[0-9a-f]{32} span_id=[0-9a-f]{16}$/, line);
    // The process's progress budget (50 at once, 20 a second), and the latest before the answer.
    const progress = host.notifications('notifications/progress').filter((m) => m.params.progressToken === 'flood');
    assert.ok(progress.length >= 1 && progress.length <= 50 + 20 * seconds + 1, `${progress.length} in ${seconds} s`);
    assert.equal(progress.at(-1).params.progress, count);
  }));

test('a family restarts after the binary it runs was replaced on disk (an upgrade renamed a new file over it)', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-upgraded-'));
  const installed = path.join(dir, 'gatehouse');
  try {
    // A second name for the same file where the file system allows it (no copy of some 300 MiB).
    try {
      linkSync(binaryPath(), installed);
    } catch {
      copyFileSync(binaryPath(), installed);
    }
    await withHost({ plugins: [CRASHY], binary: installed }, async (host) => {
      const before = await servedAgain(host);
      // What a package upgrade does: the new file renamed over the old
      // path, so the running binary's path reads "... (deleted)". The new
      // "binary" is no gatehouse: a family started from the path would fail.
      writeFileSync(path.join(dir, 'gatehouse.new'), '#!/bin/sh\nexit 97\n', { mode: 0o755 });
      renameSync(path.join(dir, 'gatehouse.new'), installed);
      const crashed = await host.modern('tools/call', { name: 'crashy_exit', arguments: {} });
      assert.equal(crashed.result.structuredContent?.code, 'FAMILY_CRASHED', JSON.stringify(crashed));
      assert.notEqual(await servedAgain(host), before);
      assert.doesNotMatch(host.stderr, /did not start again/);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
