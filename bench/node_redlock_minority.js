#!/usr/bin/env node
// node-redlock (the peers' pinned redlock + ioredis) on Redlock nodes of which
// scripts/bench holds a minority paused: the uncontended cycle of
// ../shared/peers/redlock_bench.js (acquire with retryCount 0, release), timed
// for --seconds. That runner cannot be used here: it PINGs every node before
// starting and reads INFO commandstats from every node, and a paused node
// answers neither, so it would stall in its own set-up.
//
//   node_redlock_minority.js --ports P1,...,P5 --seconds S [--max-cycles N] [--margin S]
//
// node-redlock has no per-node deadline: a cycle that waits on a paused node
// waits until it is resumed. So the run is bounded here: if the window plus
// --margin seconds pass, it prints what it has with "stalled": true and exits.
// Prints one JSON line.
'use strict';
const path = require('path');

const NODE_DIR = process.env.PEERS_NODE_DIR || path.join(process.env.HOME || '.', '.cache', 'dlock-peers', 'node');
const req = (m) => require(require.resolve(m, { paths: [NODE_DIR] }));
const Redis = req('ioredis');
const Redlock = req('redlock').default;

function parseArgs(argv) {
  const a = { ports: null, seconds: 4, maxCycles: 200000, margin: 5 };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(k in a)) throw new Error('unknown option ' + argv[i]);
    a[k] = argv[i + 1];
  }
  a.ports = String(a.ports).split(',').map(Number);
  for (const p of a.ports) if (!(p >= 1024 && p <= 65535)) throw new Error('--ports: 1024-65535 (loopback only)');
  for (const k of ['seconds', 'maxCycles', 'margin']) a[k] = Number(a[k]);
  return a;
}

const now = () => Number(process.hrtime.bigint()) / 1e9;
const pct = (s, p) => (s.length ? s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))] : null);

const state = { cycles: 0, failures: 0, lat: [], start: null };

function report(a, stalled) {
  const elapsed = state.start === null ? 0 : now() - state.start;
  const lat = state.lat.slice().sort((x, y) => x - y);
  console.log(JSON.stringify({
    impl: 'node-redlock', workload: 'redlock-minority', nodes: a.ports.length, stalled,
    cycles: state.cycles, failures: state.failures, elapsed_s: elapsed,
    cycles_per_s: elapsed > 0 ? state.cycles / elapsed : 0,
    us_per_cycle_p50: pct(lat, 50), us_per_cycle_p99: pct(lat, 99),
    // what the paused nodes' unanswered commands cost the process meanwhile
    rss_bytes: process.memoryUsage().rss,
  }));
}

// Acquire+release cycles until `end`, counted into `tally` (null: not
// counted); a refused or failed cycle is counted, not retried.
async function cycles(redlock, end, max, tally) {
  let prev = now();
  for (let n = 0; n < max && prev < end; n++) {
    let ok = true;
    try {
      const lock = await redlock.acquire(['bench:node-redlock-minority'], 30000, { retryCount: 0 });
      await lock.release();
    } catch (e) {
      ok = false;
    }
    const t = now();
    if (tally && ok) {
      tally.cycles++;
      tally.lat.push((t - prev) * 1e6);
    } else if (tally) {
      tally.failures++;
    }
    prev = t;
  }
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  // The watchdog runs from the start: the warm-up may stall as well.
  setTimeout(() => { report(a, true); process.exit(0); }, (a.seconds + a.margin) * 1000 + 200).unref();
  // As the peers' runner, without its PING of every node.
  const clients = a.ports.map((port) => new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 }));
  const redlock = new Redlock(clients, {});
  await cycles(redlock, now() + 0.2, 1000, null); // warm-up (loads scripts on NOSCRIPT)
  state.start = now();
  await cycles(redlock, state.start + a.seconds, a.maxCycles, state);
  report(a, false);
  process.exit(0); // the paused nodes' commands are still queued in ioredis
}
main().catch((e) => { console.error(e); process.exit(1); });
