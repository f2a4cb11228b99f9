// Overview: brokers, topic and partition counts, partitions whose ISR is
// short of their replicas (under-replicated) or that have no leader
// (offline), and byte rates from /metrics when ferry exposes them.

import { get } from './api.js';
import { errorBox, fill, fmtBytes, fmtNum, h, link, num, table } from './ui.js';
import { describeAll, topicStats } from './topics.js';

const REFRESH_MS = 5000;

/**
 * parseMetrics reads Prometheus text format into name → summed value
 * (labels summed away). Comments and malformed lines are skipped.
 */
export function parseMetrics(text) {
  const sums = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/);
    if (!m) continue;
    const v = Number(m[3]);
    if (!Number.isFinite(v)) continue;
    sums.set(m[1], (sums.get(m[1]) || 0) + v);
  }
  return sums;
}

/**
 * byteTotals picks ferry's byte counters: ferry_topic_bytes_in_total and
 * ferry_topic_bytes_out_total (per topic, summed); failing those, any
 * ferry_…bytes…_total counter whose name says in (in, received, produced)
 * or out (out, sent, fetched, consumed); 0 when ferry serves metrics but
 * no traffic has been counted yet; null where /metrics has none.
 */
export function byteTotals(sums) {
  if (sums.has('ferry_topic_bytes_in_total') || sums.has('ferry_topic_bytes_out_total')) {
    return { inBytes: sums.get('ferry_topic_bytes_in_total') ?? 0, outBytes: sums.get('ferry_topic_bytes_out_total') ?? 0 };
  }
  let inBytes = null; let outBytes = null;
  for (const [name, v] of sums) {
    if (!name.startsWith('ferry_') || !name.endsWith('_total') || !name.includes('bytes')) continue;
    const words = name.split('_');
    if (words.some((w) => ['in', 'received', 'produced'].includes(w))) inBytes = (inBytes || 0) + v;
    else if (words.some((w) => ['out', 'sent', 'fetched', 'consumed'].includes(w))) outBytes = (outBytes || 0) + v;
  }
  if (inBytes === null && outBytes === null && sums.has('ferry_requests_total')) {
    // ferry's per-topic byte counters appear with the first produce or fetch.
    return { inBytes: 0, outBytes: 0 };
  }
  return { inBytes, outBytes };
}

async function sampleMetrics() {
  try {
    const text = await get('/metrics', { raw: true, quiet: true });
    return { at: performance.now(), ...byteTotals(parseMetrics(text)) };
  } catch {
    return null; // no /metrics on this build: the rates say n/a
  }
}

export async function render(root) {
  const body = h('div');
  const rates = { prev: null };
  root.append(h('h1', {}, 'Overview'), body);

  const rateText = (cur, key) => {
    if (!cur || cur[key] === null) return 'n/a';
    if (!rates.prev || rates.prev[key] === null) return 'measuring…';
    const secs = (cur.at - rates.prev.at) / 1000;
    return `${fmtBytes(Math.max(0, (cur[key] - rates.prev[key]) / secs))}/s`;
  };

  async function draw(quiet) {
    const opts = { quiet };
    const [brokers, cluster, names, metrics] = await Promise.all([
      get('/brokers', opts), get('/cluster', opts), get('/topics', opts), sampleMetrics()]);
    const topics = await describeAll(names, opts);
    let partitions = 0; let under = 0; let offline = 0;
    for (const t of topics) {
      if (t.error) continue;
      const s = topicStats(t);
      partitions += s.partitions; under += s.under; offline += s.offline;
    }
    // ferry's /cluster counts every partition of the cluster; older ones do not.
    if (cluster.partitions !== undefined) {
      ({ partitions, under_replicated_partitions: under, offline_partitions: offline } = cluster);
    }
    const card = (label, value, cls = '', href) => h('div', { class: `stat ${cls}` },
      h('div', { class: 'stat-label' }, label),
      h('div', { class: 'stat-value' }, href ? link(href, String(value)) : value));
    const bytesIn = rateText(metrics, 'inBytes');
    const bytesOut = rateText(metrics, 'outBytes');
    if (metrics) rates.prev = metrics;
    fill(body,
      h('div', { class: 'stats', id: 'overview-stats' },
        card('Brokers', brokers.brokers.length),
        card('Topics', fmtNum(names.length), '', '#/topics'),
        card('Partitions', fmtNum(partitions)),
        card('Under-replicated partitions', under, under ? 'warn' : ''),
        card('Offline partitions', offline, offline ? 'bad' : ''),
        card('Bytes in', bytesIn, 'rate'),
        card('Bytes out', bytesOut, 'rate')),
      topics.filter((t) => t.error).map((t) => errorBox(t.error, `Could not describe ${t.name}`)),
      h('section', { 'aria-labelledby': 'brokers-title' },
        h('h2', { id: 'brokers-title' }, 'Brokers'),
        table([num('Id'), 'Address', 'Rack', 'Controller'], brokers.brokers.map((b) => h('tr', { 'data-broker': b.broker_id },
          h('td', { class: 'num' }, b.broker_id),
          h('td', {}, h('code', {}, `${b.host || '(all interfaces)'}:${b.port}`)),
          h('td', {}, b.rack || h('span', { class: 'muted' }, 'none')),
          h('td', {}, (b.controller ?? b.broker_id === cluster.controller_id) ? h('span', { class: 'badge accent' }, 'controller') : '')))),
        h('p', { class: 'muted' }, 'Cluster id ', h('code', {}, cluster.cluster_id || '—'),
          metrics && metrics.inBytes === null && metrics.outBytes === null ? ' · /metrics has no ferry byte counters yet, so rates show n/a.' : '',
          !metrics ? ' · /metrics is not served by this node, so rates show n/a.' : '')));
  }

  await draw(false);
  let stopped = false;
  let errShown = false;
  const timer = setInterval(async () => {
    if (stopped) return;
    try { await draw(true); errShown = false; } catch (e) {
      if (!errShown) body.prepend(errorBox(e, 'Refreshing the overview failed; retrying'));
      errShown = true;
    }
  }, REFRESH_MS);
  return () => { stopped = true; clearInterval(timer); };
}
