// Cluster: the brokers with the partitions and leaders each holds (a
// table and a chart, so a leader imbalance shows at a glance), the
// partitions that are under-replicated or offline, and the preferred
// leader election that gives partitions back to their first replica.

import { can, disableUnless } from './perms.js';
import { get, post } from './api.js';
import { confirmAction, errorBox, fill, h, link, num, table } from './ui.js';
import { describeAll, plural, underReplicated } from './topics.js';

const REFRESH_MS = 5000;

// Kafka's error code for a partition whose preferred replica leads already.
export const ELECTION_NOT_NEEDED = 84;

/**
 * brokerLoad counts, per broker, the replicas it holds, the partitions it
 * leads and those it is the preferred (first) replica of, from described
 * topics. Brokers are the live ones from /brokers plus any a replica
 * names that is not live (live false), in id order.
 */
export function brokerLoad(brokers, controllerId, topics) {
  const byId = new Map();
  const entry = (id) => {
    if (!byId.has(id)) {
      byId.set(id, { id, host: '', port: 0, rack: '', controller: false, live: false, replicas: 0, leaders: 0, preferred: 0 });
    }
    return byId.get(id);
  };
  for (const b of brokers) {
    Object.assign(entry(b.broker_id), {
      host: b.host, port: b.port, rack: b.rack || '', controller: Boolean(b.controller) || b.broker_id === controllerId, live: true,
    });
  }
  for (const t of topics) {
    for (const p of t.error ? [] : t.partitions || []) {
      const replicas = p.replicas || [];
      for (const r of replicas) entry(r).replicas++;
      if (p.leader >= 0) entry(p.leader).leaders++;
      if (replicas.length) entry(replicas[0]).preferred++;
    }
  }
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/**
 * leaderSpread says how evenly the live brokers that hold replicas lead:
 * the fewest and most leaders one holds (and which broker), and how many
 * partitions are led by a replica other than their preferred one (what a
 * preferred leader election moves back).
 */
export function leaderSpread(load, topics) {
  const holders = load.filter((b) => b.live && b.replicas > 0);
  let fewest = null; let most = null;
  for (const b of holders) {
    if (!fewest || b.leaders < fewest.leaders) fewest = b;
    if (!most || b.leaders > most.leaders) most = b;
  }
  let notPreferred = 0;
  for (const t of topics) {
    for (const p of t.error ? [] : t.partitions || []) {
      if (p.leader >= 0 && (p.replicas || []).length && p.leader !== p.replicas[0]) notPreferred++;
    }
  }
  return {
    min: fewest ? fewest.leaders : 0, minBroker: fewest ? fewest.id : -1,
    max: most ? most.leaders : 0, maxBroker: most ? most.id : -1,
    imbalanced: Boolean(fewest) && most.leaders - fewest.leaders > 1, notPreferred,
  };
}

/** troubledPartitions lists partitions with no leader (offline) or an ISR short of their replicas, by topic and partition. */
export function troubledPartitions(topics) {
  const out = [];
  for (const t of topics) {
    for (const p of t.error ? [] : t.partitions || []) {
      const offline = p.leader === undefined || p.leader < 0;
      const under = underReplicated(p);
      if (offline || under) {
        out.push({ topic: t.name, partition: p.partition, leader: offline ? -1 : p.leader, replicas: p.replicas || [], isr: p.isr || [], offline, under });
      }
    }
  }
  return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
}

/**
 * electionSummary counts an election's results: elected (0), not needed
 * (84: the preferred replica leads already, not a failure) and the failed
 * ones with their codes.
 */
export function electionSummary(results) {
  const s = { elected: 0, notNeeded: 0, failed: [] };
  for (const r of results || []) {
    if (r.error_code === 0) s.elected++;
    else if (r.error_code === ELECTION_NOT_NEEDED) s.notNeeded++;
    else s.failed.push(r);
  }
  return s;
}

export async function render(root) {
  const body = h('div');
  const electionSlot = h('div', { id: 'election-result' });
  const electButton = h('button', { type: 'button', id: 'elect-preferred', class: 'secondary' }, 'Preferred leader election');
  const moveLink = link('#/cluster/move', 'Move partitions', { class: 'button', id: 'move-partitions' });
  // Both ask ALTER on the cluster, as Kafka's ElectLeaders and
  // AlterPartitionReassignments do.
  const alter = (await can(['ALTER:CLUSTER:kafka-cluster']))['ALTER:CLUSTER:kafka-cluster'];
  disableUnless(electButton, alter, 'run leader elections');
  disableUnless(moveLink, alter, 'move partitions');
  root.append(
    h('div', { class: 'view-head' }, h('h1', {}, 'Cluster'),
      h('div', { class: 'actions' }, electButton, moveLink)),
    electionSlot, body);

  async function draw(quiet) {
    const opts = { quiet };
    const [brokers, cluster, names] = await Promise.all([get('/brokers', opts), get('/cluster', opts), get('/topics', opts)]);
    const topics = await describeAll(names, opts);
    const load = brokerLoad(brokers.brokers, cluster.controller_id, topics);
    fill(body,
      topics.filter((t) => t.error).map((t) => errorBox(t.error, `Could not describe ${t.name}`)),
      brokersSection(load, cluster),
      chartSection(load, leaderSpread(load, topics)),
      troubledSection(troubledPartitions(topics)));
  }

  electButton.addEventListener('click', async () => {
    let answer = null;
    const done = await confirmAction({
      title: 'Run a preferred leader election?',
      body: 'Every partition whose preferred (first) replica is live and in sync but does not lead is led by it again, as after a failover. Clients follow the new leaders; no record is lost.',
      confirmLabel: 'Run the election',
      action: async () => { answer = await post('/admin/preferred-leader-election'); },
    });
    electButton.focus();
    if (!done) return;
    fill(electionSlot, electionResult(answer.results));
    try { await draw(true); } catch (e) { electionSlot.append(errorBox(e, 'Refreshing the cluster failed')); }
  });

  await draw(false);
  let stopped = false;
  let errShown = false;
  const timer = setInterval(async () => {
    if (stopped) return;
    try { await draw(true); errShown = false; } catch (e) {
      if (!errShown) body.prepend(errorBox(e, 'Refreshing the cluster failed; retrying'));
      errShown = true;
    }
  }, REFRESH_MS);
  return () => { stopped = true; clearInterval(timer); };
}

function brokersSection(load, cluster) {
  const rows = load.map((b) => h('tr', { 'data-broker': b.id, class: b.live ? '' : 'warn-row' },
    h('td', { class: 'num' }, b.id),
    h('td', {}, b.live ? h('code', {}, `${b.host || '(all interfaces)'}:${b.port}`) : h('span', { class: 'muted' }, 'unknown')),
    h('td', {}, b.rack || h('span', { class: 'muted' }, 'none')),
    h('td', {}, b.controller ? h('span', { class: 'badge accent' }, 'controller') : ''),
    h('td', {}, b.live ? h('span', { class: 'badge ok' }, 'live') : h('span', { class: 'badge bad' }, 'not live')),
    h('td', { class: 'num', 'data-count': 'replicas' }, b.replicas),
    h('td', { class: 'num', 'data-count': 'leaders' }, b.leaders),
    h('td', { class: 'num', 'data-count': 'preferred' }, b.preferred)));
  return h('section', { 'aria-labelledby': 'cluster-brokers-title' },
    h('h2', { id: 'cluster-brokers-title' }, 'Brokers'),
    table([num('Id'), 'Address', 'Rack', 'Controller', 'Live', num('Partitions'), num('Leaders'), num('Preferred leader of')], rows,
      { class: 'brokers', empty: 'No broker has registered.' }),
    h('p', { class: 'muted legend' }, 'Partitions counts the replicas a broker holds; a broker a replica names that is not registered shows as not live. Cluster id ',
      h('code', {}, cluster.cluster_id || '—'), '.'));
}

function chartSection(load, spread) {
  const max = Math.max(1, ...load.map((b) => b.replicas));
  const bar = (kind, n) => {
    const length = h('span', { class: `bar-fill ${kind}` });
    // Set through the CSSOM: the page's CSP refuses style attributes.
    length.style.width = `${(n / max) * 100}%`;
    return h('div', { class: 'bar' }, length, h('span', { class: 'bar-num', 'data-count': kind }, n));
  };
  const rows = load.map((b) => h('div', {
    class: 'chart-row', 'data-broker': b.id, role: 'img',
    'aria-label': `Broker ${b.id}: ${plural(b.replicas, 'partition')}, ${plural(b.leaders, 'leader')}`,
  },
  h('div', { class: 'chart-label' }, `Broker ${b.id}`, b.live ? null : h('span', { class: 'sr-only' }, ' (not live)')),
  h('div', { class: 'chart-bars' }, bar('replicas', b.replicas), bar('leaders', b.leaders))));
  let note = 'Leaders are spread evenly.';
  if (spread.imbalanced) note = `Leaders are uneven: broker ${spread.minBroker} leads ${spread.min}, broker ${spread.maxBroker} leads ${spread.max}.`;
  if (spread.notPreferred) note += ` ${plural(spread.notPreferred, 'partition')} ${spread.notPreferred === 1 ? 'is' : 'are'} not led by the preferred replica; a preferred leader election moves ${spread.notPreferred === 1 ? 'it' : 'them'} back.`;
  return h('section', { 'aria-labelledby': 'chart-title' },
    h('h2', { id: 'chart-title' }, 'Partitions and leaders per broker'),
    h('figure', { class: 'chart panel', id: 'broker-chart', 'aria-labelledby': 'chart-title' },
      rows,
      h('figcaption', { class: 'muted legend' },
        h('span', { class: 'swatch replicas', 'aria-hidden': 'true' }), ' partitions (replicas) ',
        h('span', { class: 'swatch leaders', 'aria-hidden': 'true' }), ' leaders · ',
        h('span', { id: 'leader-note', class: spread.imbalanced || spread.notPreferred ? 'warn-text' : '' }, note))));
}

function troubledSection(troubled) {
  const chips = (ids) => (ids.length ? ids.join(', ') : h('span', { class: 'bad' }, 'none'));
  const rows = troubled.map((p) => h('tr', { class: p.offline ? 'bad-row' : 'warn-row', 'data-topic': p.topic, 'data-partition': p.partition },
    h('td', {}, link(`#/topics/${encodeURIComponent(p.topic)}`, p.topic)),
    h('td', { class: 'num' }, p.partition),
    h('td', { class: 'num' }, p.offline ? h('span', { class: 'bad' }, 'none') : p.leader),
    h('td', {}, chips(p.replicas)),
    h('td', {}, chips(p.isr)),
    h('td', {}, p.offline ? h('span', { class: 'badge bad' }, 'offline') : h('span', { class: 'badge warn' }, 'under-replicated'))));
  return h('section', { 'aria-labelledby': 'troubled-title' },
    h('h2', { id: 'troubled-title' }, 'Under-replicated and offline partitions'),
    table(['Topic', num('Partition'), num('Leader'), 'Replicas', 'In-sync replicas', 'State'], rows,
      { class: 'troubled', empty: 'None: every partition has a leader and all its replicas in sync.' }));
}

function electionResult(results) {
  const s = electionSummary(results);
  const rows = (results || []).map((r) => h('tr', {},
    h('td', {}, r.topic), h('td', { class: 'num' }, r.partition),
    h('td', {}, r.error_code === 0 ? h('span', { class: 'badge ok' }, 'elected')
      : r.error_code === ELECTION_NOT_NEEDED ? h('span', { class: 'badge' }, 'not needed')
        : h('span', { class: 'badge bad' }, `error ${r.error_code}`)),
    h('td', {}, r.message || '')));
  return h('div', { class: `verdict ${s.failed.length ? 'bad' : 'ok'}`, id: 'election-summary', role: 'status' },
    h('strong', {}, 'Preferred leader election: '),
    `${plural(s.elected, 'partition')} elected, ${s.notNeeded} not needed (led by the preferred replica already), ${s.failed.length} failed.`,
    s.failed.length ? h('ul', {}, s.failed.map((r) => h('li', {}, `${r.topic}-${r.partition}: ${r.message || 'failed'} (error ${r.error_code})`))) : null,
    rows.length ? h('details', {}, h('summary', {}, `All ${plural(rows.length, 'result')}`),
      table(['Topic', num('Partition'), 'Outcome', 'Message'], rows)) : null);
}
