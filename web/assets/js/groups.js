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
  root.append(h('div', { class: 'view-head' },
    h('h1', {}, h('span', { class: 'muted' }, 'Group '), name),
    h('button', { type: 'button', class: 'secondary', onClick: (ev) => busy(ev.currentTarget, 'Refreshing…', draw).catch((e) => showError(body, e)) }, 'Refresh')),
  body);
  async function draw() {
    const [d, topics] = await Promise.all([get(`/groups/${enc(name)}`), get('/topics')]);
    fill(body, summary(d), membersSection(d), offsetsSection(d), resetSection(d, topics, draw));
  }
  await draw();
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

