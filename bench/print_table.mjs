// Prints the JSON lines of run_stdio_bench.sh as a Markdown table, with the
// figures the floor (a line echo) also has as ratios to the floor's.
import { readFileSync } from 'node:fs';

const rows = readFileSync(process.argv[2], 'utf8').trim().split('\n').map(line => JSON.parse(line));
const floor = rows.find(r => r.server === 'floor');
const f0 = n => n.toFixed(0);
const f1 = n => n.toFixed(1);
const ratio = (n, limit) => (limit > 0 ? (n / limit).toFixed(2) + 'x' : '-');
const header = [
    'server', 'era',
    'seq calls/s', 'seq p50 µs', 'seq p99 µs', 'seq p50 / floor', 'seq CPU µs/call',
    `${floor.concurrent.in_flight}-in-flight calls/s`, 'p50 µs', 'p99 µs', 'CPU µs/call', 'CPU / floor',
    'cold start ms', 'cold / floor', 'idle RSS MiB', 'RSS / floor',
];
const lines = [header, header.map(() => '---')];
for (const r of rows) {
    const s = r.sequential, c = r.concurrent;
    if (!s) {
        // A start-up only row (stdio_load --calls 0).
        lines.push([r.server, r.era, ...Array(10).fill('-'),
            r.cold_start_ms.median.toFixed(1), ratio(r.cold_start_ms.median, floor.cold_start_ms.median),
            (r.idle_rss_kib / 1024).toFixed(1), ratio(r.idle_rss_kib, floor.idle_rss_kib)]);
        continue;
    }
    lines.push([
        r.server, r.server === 'floor' || r.server.startsWith('relay') ? '-' : r.era,
        f0(s.calls_per_s), f1(s.p50_us), f1(s.p99_us), (s.p50_us / floor.sequential.p50_us).toFixed(2) + 'x',
        f1(s.server_cpu_us_per_call),
        f0(c.calls_per_s), f1(c.p50_us), f1(c.p99_us), f1(c.server_cpu_us_per_call),
        ratio(c.server_cpu_us_per_call, floor.concurrent.server_cpu_us_per_call),
        r.cold_start_ms.median.toFixed(1), ratio(r.cold_start_ms.median, floor.cold_start_ms.median),
        (r.idle_rss_kib / 1024).toFixed(1), ratio(r.idle_rss_kib, floor.idle_rss_kib),
    ]);
}
for (const l of lines) console.log('| ' + l.join(' | ') + ' |');
