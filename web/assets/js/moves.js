// Moving partitions: pick topics and target brokers, see ferry's proposed
// placement next to today's, start it (throttled if asked), then watch
// the new replicas copy until every move is done, or cancel the moves.

import { del, get, post } from './api.js';
import { busy, confirmAction, errorBox, field, fill, fmtBytes, fmtNum, h, link, num, setInvalid, showError, table } from './ui.js';
import { internal, plural } from './topics.js';

const POLL_MS = 1500;
const MIB = 1024 * 1024;

// Kafka's error code for cancelling a partition that is not being moved.
export const NO_REASSIGNMENT_IN_PROGRESS = 85;

/** throttleRate reads the MiB/s field: empty is no throttle (rate 0); else a rate in bytes/s, or the problem in words. */
export function throttleRate(text) {
  const t = String(text ?? '').trim();
  if (t === '') return { rate: 0, problem: '' };
  const rate = Math.round(Number(t) * MIB);
  if (!Number.isFinite(rate) || rate < 1) return { rate: 0, problem: 'Enter a rate in MiB/s above 0, or leave it empty for no throttle.' };
  return { rate, problem: '' };
}

const sameList = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * planRows pairs each partition's current and proposed replicas, by topic
 * and partition. kind: "move" when a replica is added or removed,
 * "reorder" when only the order (and so the preferred leader) changes,
 * "same" otherwise; added and removed name the brokers that change.
 */
export function planRows(plan) {
  const key = (m) => `${m.topic}\u0000${m.partition}`;
  const current = new Map((plan.current || []).map((m) => [key(m), m.replicas || []]));
  return (plan.proposed || []).map((m) => {
    const cur = current.get(key(m)) || [];
    const proposed = m.replicas || [];
    const added = proposed.filter((r) => !cur.includes(r));
    const removed = cur.filter((r) => !proposed.includes(r));
    let kind = 'same';
    if (added.length || removed.length) kind = 'move';
    else if (!sameList(cur, proposed)) kind = 'reorder';
    return { topic: m.topic, partition: m.partition, current: cur, proposed, added, removed, kind };
  }).sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
}

/**
 * progressOf is a moving partition's copy progress ({copied, toCopy}), or
 * null when ferry did not report it (the page shows "copying…").
 */
export function progressOf(m) {
  const p = m && m.progress;
  if (!p || typeof p.bytes_to_copy !== 'number') return null;
  return { copied: Math.min(p.bytes_copied || 0, p.bytes_to_copy), toCopy: p.bytes_to_copy };
}

/**
 * totalProgress is the moves' summed progress: the reported total when it
 * has bytes to copy, nothing to copy when every move reported none, and
 * null when some move's progress is unknown.
 */
export function totalProgress(data) {
  const t = data.total;
  if (t && t.bytes_to_copy > 0) return { copied: Math.min(t.bytes_copied || 0, t.bytes_to_copy), toCopy: t.bytes_to_copy };
  const moves = data.reassignments || [];
  return moves.length && moves.every((m) => progressOf(m)) ? { copied: 0, toCopy: 0 } : null;
}

/** progressText is "12.5 MiB of 40.0 MiB (31%)", or "copying…" when the progress is unknown. */
export function progressText(p) {
  if (!p) return 'copying…';
  if (p.toCopy === 0) return 'nothing to copy';
  return `${fmtBytes(p.copied)} of ${fmtBytes(p.toCopy)} (${Math.floor((p.copied / p.toCopy) * 100)}%)`;
}

/**
 * outcomeSummary splits per-partition results (of a start or a cancel):
 * ok (0), notMoving (85: nothing to cancel, the move ended already) and
 * failed.
 */
export function outcomeSummary(results) {
  const s = { ok: 0, notMoving: 0, failed: [] };
  for (const r of results || []) {
    if (r.error_code === 0) s.ok++;
    else if (r.error_code === NO_REASSIGNMENT_IN_PROGRESS) s.notMoving++;
    else s.failed.push(r);
  }
  return s;
}

export async function renderMove(root, { params }) {
  // A gateway without the cluster answers 503 here: the form still shows, with the reason.
  const [names, brokers, moving] = await Promise.all([get('/topics'), get('/brokers'),
    get('/admin/reassignments').catch((error) => ({ reassignments: [], error }))]);
  const throttle = h('input', { type: 'number', id: 'move-throttle', class: 'narrow', min: '0', step: 'any', inputmode: 'decimal', placeholder: 'none' });
  const planSlot = h('div', { id: 'move-plan' });
  const startSlot = h('div', { id: 'move-started' });
  const watchSlot = h('div', { id: 'move-progress' });
  let watcher = null;
  const watch = (throttled) => {
    if (watcher) watcher.stop();
    watcher = watchMoves(watchSlot, throttled);
  };

  async function propose(topics, brokerIds, button) {
    planSlot.replaceChildren();
    startSlot.replaceChildren();
    try {
      const answer = await busy(button, 'Proposing…', () => post('/admin/reassignments', { topics, brokers: brokerIds }));
      fill(planSlot, planSection(answer.plan, execute));
      planSlot.querySelector('h2').focus();
    } catch (e) { showError(planSlot, e, 'ferry could not propose a placement'); }
  }

  async function execute(plan, button) {
    const { rate, problem } = throttleRate(throttle.value);
    setInvalid(throttle, problem);
    if (problem) { throttle.focus(); return; }
    startSlot.replaceChildren();
    const body = { partitions: plan.proposed };
    // Only a throttle the person asked for is sent: a build without
    // replication throttles refuses any.
    if (rate > 0) body.throttle_bytes_per_sec = rate;
    let answer;
    try {
      answer = await busy(button, 'Starting…', () => post('/admin/reassignments', body));
    } catch (e) { showError(startSlot, e, 'ferry did not start the moves'); return; }
    const s = outcomeSummary(answer.results);
    if (s.ok) { button.disabled = true; button.textContent = 'Started'; }
    fill(startSlot, h('section', { 'aria-labelledby': 'started-title' },
      h('h2', { id: 'started-title', tabindex: '-1' }, 'Started'),
      outcomeTable(answer.results, 'started', `${plural(s.ok, 'move')} started${s.failed.length ? `, ${s.failed.length} refused` : ''}.`)));
    startSlot.querySelector('h2').focus();
    if (s.ok) watch(rate > 0);
  }

  root.append(
    h('div', { class: 'view-head' }, h('h1', {}, 'Move partitions'), link('#/cluster', 'Back to the cluster', { class: 'button secondary' })),
    h('p', { class: 'muted' }, 'ferry proposes where the picked topics’ partitions go on the picked brokers (rack-aware, the replication factor kept). New replicas copy the data and join the in-sync replicas before the old ones are dropped; clients keep working meanwhile.'),
    pickForm(names, brokers.brokers, params.getAll('topic'), throttle, propose),
    planSlot, startSlot, watchSlot);
  if (moving.error) showError(watchSlot, moving.error, 'Could not list the moves in progress');
  else if (moving.reassignments.length) watch(false);
  return () => { if (watcher) watcher.stop(); };
}

function pickForm(names, brokers, preselected, throttle, onPropose) {
  const box = (name, value, checked, ...label) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name, value: String(value), checked }), ...label);
  const topics = h('div', { class: 'checks', id: 'move-topics' }, names.length
    ? names.map((n) => box('move-topic', n, preselected.includes(n), n, internal(n) ? h('span', { class: 'badge' }, 'internal') : null))
    : h('span', { class: 'muted' }, 'No topics yet.'));
  const targets = h('div', { class: 'checks', id: 'move-brokers' }, brokers.map((b) => box('move-broker', b.broker_id, false,
    `Broker ${b.broker_id}`, h('span', { class: 'muted' }, ` ${b.host || '(all interfaces)'}:${b.port}${b.rack ? ` · rack ${b.rack}` : ''}`))));
  throttle.addEventListener('input', () => {
    const { rate, problem } = throttleRate(throttle.value);
    setInvalid(throttle, problem);
    if (!problem) {
      const msg = document.getElementById(`${throttle.id}-msg`);
      if (msg) msg.textContent = rate ? `${fmtNum(rate)} bytes/s on each broker taking part.` : msg.dataset.hint;
    }
  });
  const errSlot = h('div');
  const submit = h('button', { type: 'submit', id: 'move-propose' }, 'Propose');
  const checked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => i.value);
  const form = h('form', {
    class: 'panel', 'aria-labelledby': 'pick-title', novalidate: true,
    onSubmit: async (ev) => {
      ev.preventDefault();
      errSlot.replaceChildren();
      const picked = checked('move-topic');
      const ids = checked('move-broker').map(Number);
      const problems = [];
      if (!picked.length) problems.push('Pick at least one topic.');
      if (!ids.length) problems.push('Pick at least one target broker.');
      const { problem } = throttleRate(throttle.value);
      setInvalid(throttle, problem);
      if (problem) problems.push(problem);
      if (problems.length) { errSlot.append(errorBox(new Error(problems.join(' ')), 'Cannot propose yet')); return; }
      await onPropose(picked, ids, submit);
    },
  },
  h('h2', { id: 'pick-title' }, 'What to move, and where'),
  h('div', { class: 'grid2' },
    h('fieldset', {}, h('legend', {}, 'Topics'), topics),
    h('fieldset', {}, h('legend', {}, 'Target brokers'), targets)),
  field('Throttle in MiB/s (optional)', throttle, 'Limits how fast the new replicas copy. Empty: no throttle.'),
  errSlot,
  h('div', { class: 'actions left' }, submit));
  return form;
}

function replicaChips(ids, marked, cls, note) {
  return h('span', { class: 'replicas' }, ids.map((id) => (marked.includes(id)
    ? h('span', { class: `chip ${cls}`, title: note }, id, h('span', { class: 'sr-only' }, ` (${note})`))
    : h('span', { class: 'chip' }, id))));
}

function planSection(plan, execute) {
  const rows = planRows(plan);
  const changing = rows.filter((r) => r.kind !== 'same').length;
  const badge = (kind) => ({
    move: h('span', { class: 'badge accent' }, 'moves'),
    reorder: h('span', { class: 'badge' }, 'new preferred leader'),
    same: h('span', { class: 'muted' }, 'unchanged'),
  })[kind];
  const trs = rows.map((r) => h('tr', {
    class: r.kind === 'same' ? '' : 'changed-row', 'data-topic': r.topic, 'data-partition': r.partition, 'data-change': r.kind,
    'data-current': r.current.join(','), 'data-proposed': r.proposed.join(','),
  },
  h('td', {}, r.topic),
  h('td', { class: 'num' }, r.partition),
  h('td', {}, replicaChips(r.current, r.removed, 'del', 'leaves')),
  h('td', {}, replicaChips(r.proposed, r.added, 'add', 'new')),
  h('td', {}, badge(r.kind))));
  const button = h('button', { type: 'button', id: 'move-execute', disabled: changing === 0 }, 'Execute');
  button.addEventListener('click', () => execute(plan, button));
  return h('section', { 'aria-labelledby': 'plan-title' },
    h('h2', { id: 'plan-title', tabindex: '-1' }, 'Proposed plan'),
    h('p', { id: 'plan-summary' }, changing
      ? `${fmtNum(changing)} of ${plural(rows.length, 'partition')} change; Execute starts the moves.`
      : `The ${plural(rows.length, 'partition')} already sit where ferry proposes: nothing to move.`),
    table(['Topic', num('Partition'), 'Current replicas', 'Proposed replicas', 'Change'], trs, { class: 'plan' }),
    h('p', { class: 'muted legend' }, h('span', { class: 'chip add' }, 'n'), ' a broker that gets a replica, ',
      h('span', { class: 'chip del' }, 'n'), ' one that gives it up. The first replica is the preferred leader.'),
    h('div', { class: 'actions left' }, button));
}

function outcomeTable(results, okLabel, summary) {
  const rows = (results || []).map((r) => h('tr', { 'data-topic': r.topic, 'data-partition': r.partition, 'data-code': r.error_code },
    h('td', {}, r.topic),
    h('td', { class: 'num' }, r.partition),
    h('td', {}, r.error_code === 0 ? h('span', { class: 'badge ok' }, okLabel)
      : r.error_code === NO_REASSIGNMENT_IN_PROGRESS ? h('span', { class: 'badge' }, 'not moving')
        : h('span', { class: 'badge bad' }, `error ${r.error_code}`)),
    h('td', {}, r.message || (r.error_code === NO_REASSIGNMENT_IN_PROGRESS ? 'No move in progress: it ended already.' : ''))));
  return [h('p', { class: 'outcome-summary' }, summary),
    table(['Topic', num('Partition'), 'Outcome', 'Message'], rows, { class: 'outcomes', empty: 'No partition was named.' })];
}

function progressBar(p, label) {
  if (!p) return h('progress', { 'aria-label': label, 'aria-valuetext': 'copying' });
  // max before value: a value above the default max of 1 would be clamped.
  return h('progress', { max: String(Math.max(1, p.toCopy)), value: p.toCopy ? p.copied : 1, 'aria-label': label, 'aria-valuetext': progressText(p) });
}

function progressView(data) {
  const total = totalProgress(data);
  const rows = data.reassignments.map((m) => {
    const p = progressOf(m);
    return h('tr', { 'data-topic': m.topic, 'data-partition': m.partition },
      h('td', {}, m.topic),
      h('td', { class: 'num' }, m.partition),
      h('td', {}, (m.replicas || []).join(', ')),
      h('td', {}, (m.adding_replicas || []).join(', ') || '—'),
      h('td', {}, (m.removing_replicas || []).join(', ') || '—'),
      h('td', { class: 'progress-cell' }, progressBar(p, `Copied of ${m.topic}-${m.partition}`), h('span', { class: 'progress-text' }, progressText(p))));
  });
  const rate = data.throttle_bytes_per_sec > 0 ? `throttled to ${fmtBytes(data.throttle_bytes_per_sec)}/s` : 'no throttle';
  return [
    h('div', { class: 'move-total', id: 'move-total' },
      h('strong', {}, `${plural(data.reassignments.length, 'partition')} moving`),
      progressBar(total, 'Copied of all moves'),
      h('span', { class: 'progress-text' }, progressText(total)),
      h('span', { class: 'muted' }, ` · ${rate}`)),
    table(['Topic', num('Partition'), 'Replicas', 'Adding', 'Removing', 'Copied'], rows, { class: 'moving' }),
  ];
}

/**
 * watchMoves polls the moves in progress into slot until none is left,
 * then says so and removes the replication throttle if one was set (by
 * this page, or reported by ferry). Its stop ends the polling.
 */
function watchMoves(slot, throttled) {
  let stopped = false;
  let timer = null;
  let throttleSeen = throttled;
  let cancelled = false;
  const errSlot = h('div');
  const listSlot = h('div', { 'aria-live': 'off' });
  const cancelSlot = h('div', { id: 'cancel-result' });
  const title = h('h2', { id: 'progress-title' }, 'Moves in progress');
  const cancelButton = h('button', { type: 'button', class: 'danger', id: 'cancel-moves' }, 'Cancel the moves');
  fill(slot, h('section', { 'aria-labelledby': 'progress-title' },
    h('div', { class: 'section-head' }, title, cancelButton), errSlot, cancelSlot, listSlot));

  cancelButton.addEventListener('click', async () => {
    let answer = null;
    const done = await confirmAction({
      title: 'Cancel the moves in progress?',
      body: 'Every partition being moved goes back to the replicas it had before; the replicas the moves added are deleted with what they copied.',
      confirmLabel: 'Cancel the moves', dismissLabel: 'Keep moving', danger: true,
      action: async () => { answer = await del('/admin/reassignments'); },
    });
    if (!done) { cancelButton.focus(); return; }
    const s = outcomeSummary(answer.results);
    cancelled = s.ok > 0;
    fill(cancelSlot, h('h3', {}, 'Cancelled'),
      outcomeTable(answer.results, 'cancelled',
        `${plural(s.ok, 'move')} cancelled${s.notMoving ? `, ${s.notMoving} had ended already` : ''}${s.failed.length ? `, ${s.failed.length} failed` : ''}.`));
  });

  const schedule = () => { if (!stopped) timer = setTimeout(tick, POLL_MS); };
  async function tick() {
    let data;
    try {
      data = await get('/admin/reassignments', { quiet: true });
    } catch (e) {
      if (!stopped) showError(errSlot, e, 'Could not read the moves in progress; retrying');
      schedule();
      return;
    }
    if (stopped) return;
    errSlot.replaceChildren();
    if (data.throttle_bytes_per_sec > 0) throttleSeen = true;
    if (!data.reassignments.length) { await finish(); return; }
    fill(listSlot, progressView(data));
    schedule();
  }

  async function finish() {
    stopped = true;
    cancelButton.remove();
    title.textContent = 'Moves finished';
    const verdict = h('div', { class: 'verdict ok', id: 'moves-done', role: 'status' }, h('strong', {}, 'Done: '),
      cancelled ? 'the moves were cancelled; the partitions are back on their original replicas.' : 'no partition is being moved any more; each is on its new replicas.');
    fill(listSlot, verdict, h('p', {}, link('#/cluster', 'See the cluster')));
    if (!throttleSeen) return;
    try {
      await del('/admin/reassignments/throttle');
      verdict.append(' The replication throttle was removed.');
    } catch (e) {
      listSlot.append(errorBox(e, 'The moves are done, but the replication throttle could not be removed'));
    }
  }

  tick();
  return { stop: () => { stopped = true; clearTimeout(timer); } };
}
