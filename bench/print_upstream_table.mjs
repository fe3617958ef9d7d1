// Prints the JSON lines of run_upstream_bench.sh as a Markdown table: each
// row beside the server it reaches directly, where it goes through a host.
import { readFileSync } from 'node:fs';

const rows = readFileSync(process.argv[2], 'utf8').trim().split('\n').map(line => JSON.parse(line));
const byName = new Map(rows.map(r => [r.server, r]));
const f0 = n => n.toFixed(0);
const f1 = n => n.toFixed(1);
const ratio = (through, direct) => (direct ? (through / direct).toFixed(2) + 'x' : '-');
const added = (through, direct) => (direct !== undefined ? f1(through - direct) : '-');
const header = [
    'server', 'seq calls/s', 'seq p50 µs', 'seq p99 µs', 'seq p50 / direct', 'seq CPU µs/call', 'added',
    `${rows[0].concurrent.in_flight}-in-flight calls/s`, 'p50 µs', 'p99 µs', 'p50 / direct', 'CPU µs/call', 'added',
    'cold start ms', 'idle RSS MiB',
];
const lines = [header, header.map(() => '---')];
for (const r of rows) {
    const s = r.sequential, c = r.concurrent;
    const d = byName.get(r.direct);
    lines.push([
        r.server,
        f0(s.calls_per_s), f1(s.p50_us), f1(s.p99_us), ratio(s.p50_us, d?.sequential.p50_us),
        f1(s.server_cpu_us_per_call), added(s.server_cpu_us_per_call, d?.sequential.server_cpu_us_per_call),
        f0(c.calls_per_s), f1(c.p50_us), f1(c.p99_us), ratio(c.p50_us, d?.concurrent.p50_us),
        f1(c.server_cpu_us_per_call), added(c.server_cpu_us_per_call, d?.concurrent.server_cpu_us_per_call),
        r.cold_start_ms.median.toFixed(1), (r.idle_rss_kib / 1024).toFixed(1),
    ]);
}
for (const l of lines) console.log('| ' + l.join(' | ') + ' |');
