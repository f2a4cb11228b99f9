// Consumer groups: the list, one group's members, assignments, committed
// offsets and lag, and resetting an Empty group's offsets.

import { enc, get, post } from './api.js';
import { busy, field, fill, flash, fmtNum, fmtTime, h, link, num, setInvalid, showError, table } from './ui.js';

const stateBadge = (state) => h('span', {
  class: `badge ${state === 'Stable' ? 'ok' : state === 'Empty' ? '' : state === 'Dead' ? 'bad' : 'warn'}`,
}, state);

export async function renderList(root) {
  const ans = await get('/groups');
  const rows = ans.groups.map((g) => h('tr', { 'data-group': g.group },
    h('td', {}, link(`#/groups/${enc(g.group)}`, g.group)),
    h('td', {}, stateBadge(g.state)),
    h('td', { class: 'num' }, g.members),
    h('td', {}, g.protocol_type || '—'),
    h('td', {}, g.protocol || '—')));
  root.append(h('h1', {}, 'Consumer groups'),
    h('p', { class: 'muted' }, 'Groups of Kafka clients and of HTTP consumers that this node coordinates.'),
    table(['Group', 'State', num('Members'), 'Protocol type', 'Assignor'], rows,
      { empty: 'No consumer groups yet. They appear when a consumer joins or commits.', class: 'groups' }));
}

export async function renderDetail(root, { segments }) {
  const name = segments[1];
  const body = h('div');
  const lagSlot = h('section', { 'aria-labelledby': 'lag-title', id: 'lag-history' });
  root.append(h('div', { class: 'view-head' },
    h('h1', {}, h('span', { class: 'muted' }, 'Group '), name),
    h('button', { type: 'button', class: 'secondary', onClick: (ev) => busy(ev.currentTarget, 'Refreshing…', draw).catch((e) => showError(body, e)) }, 'Refresh')),
  body);
  async function draw() {
    const [d, topics] = await Promise.all([get(`/groups/${enc(name)}`), get('/topics')]);
    fill(body, summary(d), lagSlot, membersSection(d), offsetsSection(d), resetSection(d, topics, draw));
  }
  await draw();
  // The lag chart follows the coordinator's samples while the view is open.
  let timer = null;
  let stopped = false;
  async function drawLag() {
    try {
      const hist = await get(`/groups/${enc(name)}/lag/history`, { quiet: true });
      fill(lagSlot, h('h2', { id: 'lag-title' }, 'Lag over time'), lagChart(hist));
      if (!stopped) timer = setTimeout(drawLag, Math.min(Math.max(hist.interval_ms, 2000), 30000));
    } catch (e) {
      fill(lagSlot, h('h2', { id: 'lag-title' }, 'Lag over time'));
      showError(lagSlot, e, 'Could not read the lag history');
    }
  }
  await drawLag();
  return () => { stopped = true; clearTimeout(timer); };
}

const CHART_W = 640;
const CHART_H = 180;
const PAD = { left: 56, right: 12, top: 10, bottom: 28 };
const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** lagChart draws the samples and the lag now as a line over time. */
export function lagChart(hist) {
  const points = hist.samples.concat([hist.current]);
  const t0 = points[0].time;
  const t1 = Math.max(points[points.length - 1].time, t0 + 1);
  const maxLag = Math.max(1, ...points.map((p) => p.lag));
  const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * (CHART_W - PAD.left - PAD.right);
  const y = (l) => CHART_H - PAD.bottom - (l / maxLag) * (CHART_H - PAD.top - PAD.bottom);
  const line = points.map((p) => `${x(p.time).toFixed(1)},${y(p.lag).toFixed(1)}`).join(' ');
  const last = points[points.length - 1];
  const label = `Lag of ${hist.group} over the last ${Math.round((t1 - t0) / 1000)} s: ${points.length} point(s), now ${fmtNum(last.lag)}, at most ${fmtNum(maxLag)}.`;
  const chart = svg('svg', { viewBox: `0 0 ${CHART_W} ${CHART_H}`, class: 'lag-chart', role: 'img', 'aria-label': label, 'data-points': points.length },
    svg('title', {}, label),
    svg('line', { x1: PAD.left, y1: CHART_H - PAD.bottom, x2: CHART_W - PAD.right, y2: CHART_H - PAD.bottom, class: 'axis' }),
    svg('line', { x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: CHART_H - PAD.bottom, class: 'axis' }),
    svg('text', { x: PAD.left - 6, y: PAD.top + 10, 'text-anchor': 'end', class: 'tick' }, fmtNum(maxLag)),
    svg('text', { x: PAD.left - 6, y: CHART_H - PAD.bottom, 'text-anchor': 'end', class: 'tick' }, '0'),
    svg('text', { x: PAD.left, y: CHART_H - 8, class: 'tick' }, new Date(t0).toLocaleTimeString()),
    svg('text', { x: CHART_W - PAD.right, y: CHART_H - 8, 'text-anchor': 'end', class: 'tick' }, new Date(t1).toLocaleTimeString()),
    svg('polyline', { points: line, class: 'lag-line' }),
    ...points.map((p) => svg('circle', { cx: x(p.time).toFixed(1), cy: y(p.lag).toFixed(1), r: 2.5, class: 'lag-point' },
      svg('title', {}, `${fmtTime(p.time)}: lag ${fmtNum(p.lag)}`))));
  return h('figure', { class: 'panel' }, chart,
    h('figcaption', { class: 'muted', id: 'lag-caption' }, `Now ${fmtNum(last.lag)}; ${hist.samples.length} sample(s), one every ${hist.interval_ms < 1000 ? `${hist.interval_ms} ms` : `${Math.round(hist.interval_ms / 1000)} s`}, kept by the group's coordinator.`));
}

function summary(d) {
  const item = (label, value) => h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value));
  return h('div', { class: 'stats', id: 'group-stats' },
    item('State', stateBadge(d.state)), item('Members', d.members.length), item('Total lag', fmtNum(d.total_lag)),
    item('Generation', d.generation), item('Assignor', d.protocol || '—'));
}

function assignmentText(a) {
  return (a || []).map((tp) => `${tp.topic}: ${tp.partitions.join(', ')}`).join('; ') || '—';
}

function membersSection(d) {
  const rows = d.members.map((m) => h('tr', {},
    h('td', {}, h('code', {}, m.member_id), m.member_id === d.leader ? h('span', { class: 'badge accent' }, 'leader') : null,
      m.instance_id ? h('div', { class: 'muted' }, `static: ${m.instance_id}`) : null),
    h('td', {}, m.client_id || '—', m.consumer_instance ? h('span', { class: 'badge' }, 'HTTP consumer') : null),
    h('td', {}, m.client_host || '—'),
    h('td', {}, assignmentText(m.assignment))));
  return h('section', { 'aria-labelledby': 'members-title' }, h('h2', { id: 'members-title' }, 'Members'),
    table(['Member', 'Client id', 'Host', 'Assignment'], rows, { empty: 'No members: the group is not consuming now.' }));
}

function offsetsSection(d) {
  const rows = d.offsets.map((o) => h('tr', {},
    h('td', {}, link(`#/topics/${enc(o.topic)}`, o.topic)),
    h('td', { class: 'num' }, o.partition),
    h('td', { class: 'num' }, o.committed_offset < 0 ? h('span', { class: 'muted' }, 'none') : fmtNum(o.committed_offset)),
    h('td', { class: 'num' }, o.high_watermark < 0 ? '—' : fmtNum(o.high_watermark)),
    h('td', { class: 'num lso' }, o.last_stable_offset == null || o.last_stable_offset < 0 ? '—' : fmtNum(o.last_stable_offset)),
    h('td', { class: `num ${o.lag > 0 ? 'lagging' : ''}` }, o.lag < 0 ? '—' : fmtNum(o.lag)),
    h('td', {}, o.member_id ? h('code', {}, o.member_id) : h('span', { class: 'muted' }, 'unassigned'))));
  return h('section', { 'aria-labelledby': 'offsets-title' }, h('h2', { id: 'offsets-title' }, 'Committed offsets and lag'),
    table(['Topic', num('Partition'), num('Committed'), num('End offset'), num('Last stable offset'), num('Lag'), 'Member'], rows, { empty: 'Nothing committed or assigned yet.', class: 'group-offsets' }),
    h('p', { class: 'muted legend' }, 'Lag is the end offset minus the committed offset; without a commit, the messages from the log start. Read-committed members stop at the last stable offset while a transaction is open.'));
}

function resetSection(d, topicNames, redraw) {
  const known = [...new Set(d.offsets.map((o) => o.topic))];
  const others = topicNames.filter((t) => !known.includes(t) && !t.startsWith('__'));
  const topic = h('select', { id: 'reset-topic' },
    known.map((t) => h('option', { value: t }, t)),
    others.length ? h('optgroup', { label: 'Other topics' }, others.map((t) => h('option', { value: t }, t))) : null);
  const to = h('select', { id: 'reset-to' },
    h('option', { value: 'earliest' }, 'Earliest (reprocess everything kept)'),
    h('option', { value: 'latest' }, 'Latest (skip to the end)'),
    h('option', { value: 'timestamp' }, 'A point in time'));
  const when = h('input', { type: 'datetime-local', id: 'reset-time', step: 1 });
  const whenField = field('Time (your local time)', when);
  whenField.hidden = true;
  to.addEventListener('change', () => { whenField.hidden = to.value !== 'timestamp'; });
  const errSlot = h('div');
  const result = h('div', { role: 'status', 'aria-live': 'polite' });
  const preview = h('button', { type: 'button', class: 'secondary', id: 'reset-preview' }, 'Preview');
  const submit = h('button', { type: 'submit', id: 'reset-submit' }, 'Reset offsets');
  const empty = d.state === 'Empty';
  if (!empty) { submit.disabled = true; preview.disabled = true; }

  function bodyOf(dryRun) {
    const b = { topic: topic.value, to: to.value, dry_run: dryRun };
    if (to.value === 'timestamp') {
      if (!when.value) { setInvalid(when, 'Pick a date and time.'); when.focus(); return null; }
      setInvalid(when, '');
      b.timestamp = new Date(when.value).getTime();
    }
    return b;
  }
  async function run(button, dryRun) {
    errSlot.replaceChildren();
    result.replaceChildren();
    if (!topic.value) { showError(errSlot, new Error('There is no topic to reset.')); return; }
    const b = bodyOf(dryRun);
    if (!b) return;
    try {
      const ans = await busy(button, dryRun ? 'Computing…' : 'Resetting…', () => post(`/groups/${enc(d.group)}/offsets/reset`, b));
      const rows = ans.offsets.map((o) => h('tr', {}, h('td', { class: 'num' }, o.partition),
        h('td', { class: 'num' }, o.previous_offset < 0 ? 'none' : fmtNum(o.previous_offset)), h('td', { class: 'num' }, fmtNum(o.offset))));
      fill(result, h('p', { class: `notice ${dryRun ? 'warn' : 'ok'}`, id: 'reset-result' },
        dryRun ? `Preview for ${ans.topic}: nothing is committed yet.` : `Offsets of ${ans.topic} reset${b.timestamp ? ` to ${fmtTime(b.timestamp)}` : ` to ${b.to}`}.`),
      table([num('Partition'), num('Before'), num('After')], rows));
      if (!dryRun) {
        flash(`Offsets of ${d.group} on ${ans.topic} reset.`);
        await redraw();
      }
    } catch (e) { showError(errSlot, e, 'ferry refused the reset'); }
  }
  preview.addEventListener('click', () => run(preview, true));
  return h('section', { 'aria-labelledby': 'reset-title' },
    h('h2', { id: 'reset-title' }, 'Reset offsets'),
    h('form', { class: 'panel', onSubmit: (ev) => { ev.preventDefault(); run(submit, false); } },
      empty ? h('p', { class: 'muted' }, 'Every partition of the topic gets the new committed offset. Consumers that join later start there.')
        : h('p', { class: 'notice warn', id: 'reset-blocked' }, `Offsets can be reset only while the group is Empty; it is ${d.state} with ${d.members.length} member(s). Stop its consumers first.`),
      h('div', { class: 'grid3' }, field('Topic', topic), field('Reset to', to), whenField),
      errSlot, result,
      h('div', { class: 'actions' }, preview, submit)));
}

