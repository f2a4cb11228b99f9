// Topics: the searchable list with the create form, and one topic's
// partitions, configs, added partitions and deletion.

import { can, disableUnless } from './perms.js';
import { del, enc, get, mapLimit, post, put } from './api.js';
import {
  busy, confirmTyped, errorBox, field, fill, flash, fmtBytes, fmtNum, fmtTime, h, link, num, setInvalid, showError, table,
} from './ui.js';

// Topic configs ferry knows (README "Topics"), offered as suggestions.
export const KNOWN_CONFIGS = [
  'cleanup.policy', 'flush.messages', 'flush.ms', 'index.interval.bytes', 'max.message.bytes',
  'message.timestamp.type', 'min.insync.replicas', 'retention.bytes', 'retention.ms', 'segment.bytes', 'segment.ms',
];

/** validateTopicName applies Kafka's rules; it returns the problem in words, or ''. */
export function validateTopicName(name) {
  if (name === '') return 'Enter a topic name.';
  if (name === '.' || name === '..') return 'A topic cannot be named "." or "..".';
  if (name.length > 249) return `A topic name has at most 249 characters; this one has ${name.length}.`;
  const bad = [...new Set(name.replace(/[a-zA-Z0-9._-]/g, ''))];
  if (bad.length) {
    return `Only letters, digits, ".", "_" and "-" are allowed; remove ${bad.map((c) => (c === ' ' ? 'the space' : `"${c}"`)).join(', ')}.`;
  }
  return '';
}

/** internal reports ferry's own topics (__consumer_offsets), which the page does not offer to delete. */
export const internal = (name) => name.startsWith('__');

/** plural is "1 topic", "2 topics". */
export const plural = (n, word) => `${fmtNum(n)} ${word}${n === 1 ? '' : 's'}`;

/**
 * isLocal reports whether this node holds the partition's replica: on a
 * cluster, a partition held elsewhere has no offsets or size here.
 */
export const isLocal = (p) => p.local !== false;

/** underReplicated: the ISR is smaller than the replicas. */
export const underReplicated = (p) => p.under_replicated ?? (p.isr || []).length < (p.replicas || []).length;

/**
 * topicStats sums a described topic's partitions; size and messages count
 * the partitions held on this node.
 */
export function topicStats(t) {
  let size = 0; let messages = 0; let under = 0; let offline = 0;
  for (const p of t.partitions || []) {
    if (isLocal(p)) {
      size += p.size_bytes || 0;
      messages += Math.max(0, p.high_watermark - p.log_start_offset);
    }
    if (underReplicated(p)) under++;
    if (p.leader === undefined || p.leader < 0) offline++;
  }
  return { partitions: (t.partitions || []).length, size, messages, under, offline };
}

/** describeAll fetches every topic's description; topics deleted meanwhile are left out. */
export async function describeAll(names, opts) {
  const results = await mapLimit(names, 6, (n) => get(`/topics/${enc(n)}`, opts));
  const out = [];
  results.forEach((r, i) => {
    if (r.ok) out.push(r.value);
    else if (r.error.status !== 404) out.push({ name: names[i], error: r.error });
  });
  return out;
}

export async function renderList(root) {
  const listSlot = h('div');
  const filter = h('input', { type: 'search', id: 'topic-filter', placeholder: 'Filter by name', autocomplete: 'off' });
  const formSlot = h('div');
  const newButton = h('button', { type: 'button', id: 'new-topic', 'aria-expanded': 'false' }, 'New topic');
  let topics = [];
  let allowed = {}; // DELETE:TOPIC:<name> → may delete

  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = topics.filter((t) => t.name.toLowerCase().includes(q));
    const rows = shown.map((t) => {
      if (t.error) {
        return h('tr', {}, h('td', {}, t.name), h('td', { colspan: 5 }, errorBox(t.error)));
      }
      const s = topicStats(t);
      return h('tr', { 'data-topic': t.name },
        h('td', {}, link(`#/topics/${enc(t.name)}`, t.name, { class: 'topic-link' }),
          internal(t.name) ? h('span', { class: 'badge' }, 'internal') : null),
        h('td', { class: 'num' }, s.partitions),
        h('td', { class: 'num' }, t.replication_factor),
        h('td', { class: 'num' }, fmtBytes(s.size)),
        h('td', { class: 'num' }, fmtNum(s.messages)),
        h('td', { class: 'row-actions' },
          link(`#/messages/${enc(t.name)}`, 'Messages', { class: 'button secondary small' }),
          internal(t.name) ? null
            : disableUnless(h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete topic ${t.name}`, onClick: () => deleteTopic(t, reload) }, 'Delete'),
              allowed[`DELETE:TOPIC:${t.name}`], `delete topic ${t.name}`)));
    });
    fill(listSlot,
      h('p', { class: 'muted', 'aria-live': 'polite' }, q ? `${shown.length} of ${plural(topics.length, 'topic')} match “${filter.value.trim()}”.` : `${plural(topics.length, 'topic')}.`),
      table(['Name', num('Partitions'), num('Replication'), num('Size'), num('Messages'), h('span', { class: 'sr-only' }, 'Actions')], rows,
        { empty: q ? 'No topic matches the filter.' : 'No topics yet. Create one with “New topic”.', class: 'topics' }));
  };
  const reload = async () => {
    try {
      topics = await describeAll(await get('/topics'));
      allowed = await can(topics.map((t) => `DELETE:TOPIC:${t.name}`));
      draw();
    } catch (e) {
      showError(listSlot, e, 'Could not list topics');
    }
  };
  filter.addEventListener('input', draw);
  newButton.addEventListener('click', () => {
    const open = formSlot.childElementCount === 0;
    newButton.setAttribute('aria-expanded', String(open));
    if (open) {
      fill(formSlot, createForm(async (name) => {
        formSlot.replaceChildren();
        newButton.setAttribute('aria-expanded', 'false');
        flash(`Topic “${name}” created.`);
        await reload();
      }, () => { formSlot.replaceChildren(); newButton.setAttribute('aria-expanded', 'false'); newButton.focus(); }));
      formSlot.querySelector('input').focus();
    } else {
      formSlot.replaceChildren();
    }
  });

  root.append(
    h('div', { class: 'view-head' }, h('h1', {}, 'Topics'), newButton),
    formSlot,
    h('div', { class: 'toolbar' }, field('Filter', filter)),
    listSlot);
  await reload();
}

function configRow(rows, key = '', value = '') {
  const listId = 'known-configs';
  const k = h('input', { type: 'text', value: key, list: listId, 'aria-label': 'Config name', placeholder: 'retention.ms', class: 'cfg-key' });
  const v = h('input', { type: 'text', value, 'aria-label': 'Config value', placeholder: 'value', class: 'cfg-value' });
  const row = h('div', { class: 'kv-row' }, k, v,
    h('button', { type: 'button', class: 'secondary small', 'aria-label': 'Remove this config', onClick: () => { row.remove(); rows.querySelector('input')?.focus(); } }, 'Remove'));
  rows.append(row);
  return k;
}

function createForm(onCreated, onCancel) {
  const name = h('input', { type: 'text', id: 'topic-name', autocomplete: 'off', spellcheck: 'false', required: true, maxlength: 249 });
  const partitions = h('input', { type: 'number', id: 'topic-partitions', min: 1, value: '1', required: true });
  const replication = h('input', { type: 'number', id: 'topic-replication', min: 1, value: '1', required: true });
  const rows = h('div', { class: 'kv-rows' });
  const errSlot = h('div');
  const submit = h('button', { type: 'submit', id: 'create-topic' }, 'Create topic');
  const checkName = () => { setInvalid(name, validateTopicName(name.value)); };
  name.addEventListener('input', checkName);
  const form = h('form', {
    class: 'panel', 'aria-labelledby': 'create-title', novalidate: true,
    onSubmit: async (ev) => {
      ev.preventDefault();
      errSlot.replaceChildren();
      const problem = validateTopicName(name.value);
      setInvalid(name, problem);
      const p = Number(partitions.value);
      const rf = Number(replication.value);
      setInvalid(partitions, Number.isInteger(p) && p >= 1 ? '' : 'Partitions must be a whole number, 1 or more.');
      setInvalid(replication, Number.isInteger(rf) && rf >= 1 ? '' : 'Replication factor must be a whole number, 1 or more.');
      const configs = {};
      let cfgProblem = '';
      for (const row of rows.children) {
        const [k, v] = row.querySelectorAll('input');
        if (!k.value.trim() && !v.value.trim()) continue;
        if (!k.value.trim()) cfgProblem = 'A config value has no name.';
        else configs[k.value.trim()] = v.value.trim();
      }
      if (cfgProblem) errSlot.append(errorBox(new Error(cfgProblem), 'Configs'));
      const firstBad = form.querySelector('[aria-invalid="true"]');
      if (firstBad || cfgProblem) { (firstBad || rows.querySelector('input'))?.focus(); return; }
      try {
        await busy(submit, 'Creating…', () => post('/topics', { name: name.value, partitions: p, replication_factor: rf, configs }));
        onCreated(name.value);
      } catch (e) {
        showError(errSlot, e, 'ferry refused to create the topic');
      }
    },
  },
  h('h2', { id: 'create-title' }, 'New topic'),
  h('div', { class: 'grid3' },
    field('Name', name, 'Letters, digits, “.”, “_” and “-”; at most 249 characters.'),
    field('Partitions', partitions),
    field('Replication factor', replication, 'Brokers holding a copy; 1 on a single node.')),
  h('fieldset', {}, h('legend', {}, 'Configs (optional)'), rows,
    h('button', { type: 'button', class: 'secondary small', onClick: () => configRow(rows).focus() }, 'Add config')),
  h('datalist', { id: 'known-configs' }, KNOWN_CONFIGS.map((c) => h('option', { value: c }))),
  errSlot,
  h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary', onClick: onCancel }, 'Cancel'), submit));
  return form;
}

async function deleteTopic(t, after) {
  const s = topicStats(t);
  const deleted = await confirmTyped({
    title: `Delete topic “${t.name}”?`,
    body: `This removes its ${s.partitions} partition(s) and ${fmtNum(s.messages)} message(s) (${fmtBytes(s.size)}) for good. Consumers of the topic will get errors.`,
    expected: t.name,
    confirmLabel: 'Delete topic',
    action: () => del(`/topics/${enc(t.name)}`),
  });
  if (deleted) {
    flash(`Topic “${t.name}” deleted.`);
    await after();
  }
}

export async function renderDetail(root, { segments }) {
  const name = segments[1];
  const body = h('div');
  root.append(h('div', { class: 'view-head' },
    h('h1', {}, h('span', { class: 'muted' }, 'Topic '), name),
    h('div', { class: 'row-actions' },
      link(`#/messages/${enc(name)}`, 'Browse messages', { class: 'button secondary' }),
      disableUnless(h('button', { type: 'button', class: 'danger', id: 'delete-topic', onClick: async () => {
        try { await deleteTopic(await get(`/topics/${enc(name)}`), async () => { location.hash = '#/topics'; }); }
        catch (e) { showError(body, e); }
      } }, 'Delete topic'), (await can([`DELETE:TOPIC:${name}`]))[`DELETE:TOPIC:${name}`], `delete topic ${name}`))),
  body);
  const draw = (t) => fill(body, summary(t), partitionsSection(t, draw), compactionSection(t), configsSection(t, draw));
  draw(await get(`/topics/${enc(name)}`));
}

function summary(t) {
  const s = topicStats(t);
  const item = (label, value) => h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value));
  return h('div', { class: 'stats' },
    item('Partitions', s.partitions), item('Replication factor', t.replication_factor),
    item('Messages', fmtNum(s.messages)), item('Size', fmtBytes(s.size)),
    item('Under-replicated', s.under), item('Topic id', h('code', {}, t.id || '—')));
}

export function replicaList(p) {
  const isr = new Set(p.isr || []);
  return h('span', { class: 'replicas' }, (p.replicas || []).map((r) => isr.has(r)
    ? h('span', { class: 'chip' }, r)
    : h('span', { class: 'chip oos', title: 'out of sync' }, r, h('span', { class: 'sr-only' }, ' (out of sync)'))));
}

/** elsewhere fills an offset cell of a partition this node holds no replica of. */
const elsewhere = () => h('span', { class: 'muted', title: 'held on another broker: ask its leader' }, '—');

function partitionsSection(t, redraw) {
  const rows = (t.partitions || []).map((p) => {
    const out = underReplicated(p);
    const local = isLocal(p);
    return h('tr', { class: out ? 'warn-row' : '', 'data-partition': p.partition },
      h('td', { class: 'num' }, p.partition),
      h('td', { class: 'num' }, p.leader < 0 ? h('span', { class: 'bad' }, 'none (offline)') : p.leader),
      h('td', {}, replicaList(p), out ? h('span', { class: 'badge warn' }, 'under-replicated') : null,
        (p.offline_replicas || []).length ? h('span', { class: 'badge bad' }, `offline: ${p.offline_replicas.join(', ')}`) : null),
      h('td', {}, (p.isr || []).join(', ') || h('span', { class: 'bad' }, 'empty')),
      h('td', { class: 'num' }, local ? fmtNum(p.log_start_offset) : elsewhere()),
      h('td', { class: 'num' }, local ? fmtNum(p.high_watermark) : elsewhere()),
      h('td', { class: 'num lso' }, local ? fmtNum(p.last_stable_offset ?? p.high_watermark) : elsewhere()),
      h('td', { class: 'num' }, local ? fmtNum(p.high_watermark - p.log_start_offset) : elsewhere()),
      h('td', { class: 'num' }, local ? fmtBytes(p.size_bytes) : elsewhere()),
      h('td', {}, link(`#/messages/${enc(t.name)}?partition=${p.partition}`, 'Browse', { 'aria-label': `Browse partition ${p.partition}` })));
  });
  const total = h('input', { type: 'number', id: 'partition-total', min: t.partitions.length + 1, value: String(t.partitions.length + 1) });
  const errSlot = h('div');
  const submit = h('button', { type: 'submit', class: 'secondary' }, 'Add partitions');
  const form = h('form', {
    class: 'inline-form',
    onSubmit: async (ev) => {
      ev.preventDefault();
      errSlot.replaceChildren();
      const n = Number(total.value);
      if (!Number.isInteger(n) || n <= t.partitions.length) {
        setInvalid(total, `The new total must be more than ${t.partitions.length}.`);
        total.focus();
        return;
      }
      setInvalid(total, '');
      try {
        const updated = await busy(submit, 'Adding…', () => post(`/topics/${enc(t.name)}/partitions`, { partitions: n }));
        flash(`“${t.name}” now has ${updated.partitions.length} partitions.`);
        redraw(updated);
      } catch (e) { showError(errSlot, e, 'Could not add partitions'); }
    },
  }, field('New partition count', total, 'Partitions can be added, never removed; keyed records may move.'), submit);
  return h('section', { 'aria-labelledby': 'parts-title' },
    h('h2', { id: 'parts-title' }, 'Partitions'),
    table([num('Partition'), num('Leader'), 'Replicas', 'In-sync replicas', num('Start offset'), num('End offset'), num('Last stable offset'), num('Messages'), num('Size'), ''], rows, { class: 'partitions' }),
    h('p', { class: 'muted legend' }, h('span', { class: 'chip oos' }, 'n'), ' marks a replica that is out of sync.',
      (t.partitions || []).some((p) => !isLocal(p)) ? ' — marks offsets of a partition with no replica on this node.' : ''),
    form, errSlot);
}

/**
 * compactionSection shows each local replica's log cleaner state for a
 * compacted topic (cleanup.policy=compact): what share of the cleanable log
 * is still dirty, where cleaning has reached, and the last pass. Nothing for
 * other topics.
 */
function compactionSection(t) {
  const parts = (t.partitions || []).filter((p) => p.cleaner);
  if (!parts.length) return null;
  const rows = parts.map((p) => h('tr', { 'data-cleaner': p.partition },
    h('td', { class: 'num' }, p.partition),
    h('td', { class: 'num' }, `${(p.cleaner.dirty_ratio * 100).toFixed(1)}%`),
    h('td', { class: 'num' }, fmtNum(p.cleaner.cleaned_to_offset)),
    h('td', {}, p.cleaner.last_pass_time ? fmtTime(Date.parse(p.cleaner.last_pass_time)) : 'none yet'),
    h('td', { class: 'num' }, p.cleaner.last_pass_time ? `${fmtNum(p.cleaner.last_pass_ms)} ms` : '—')));
  return h('section', { 'aria-labelledby': 'compaction-title' },
    h('h2', { id: 'compaction-title' }, 'Compaction'),
    table([num('Partition'), num('Dirty'), num('Cleaned to offset'), 'Last pass', num('Pass took')], rows, { class: 'compaction' }),
    h('p', { class: 'muted legend' }, 'The cleaner of this node\'s replicas: below the cleaned offset only the latest record of each key is kept.'));
}

function configsSection(t, redraw) {
  const errSlot = h('div');
  const inputs = [];
  const rows = (t.configs || []).map((c) => {
    const input = h('input', { type: 'text', value: c.value, 'aria-label': c.name, 'data-config': c.name, class: 'cfg-value' });
    inputs.push({ entry: c, input });
    return h('tr', {},
      h('th', { scope: 'row' }, h('code', {}, c.name)),
      h('td', {}, input),
      h('td', {}, c.is_default ? h('span', { class: 'badge' }, 'default') : h('span', { class: 'badge accent' }, 'override')),
      h('td', {}, c.is_default ? '' : h('button', {
        type: 'button', class: 'secondary small', 'aria-label': `Reset ${c.name} to its default`,
        onClick: (ev) => save({ [c.name]: null }, ev.currentTarget, `${c.name} reset to its default.`),
      }, 'Reset')));
  });
  const saveButton = h('button', { type: 'submit', id: 'save-configs' }, 'Save changes');
  async function save(changes, button, message) {
    errSlot.replaceChildren();
    try {
      const updated = await busy(button, 'Saving…', () => put(`/topics/${enc(t.name)}/configs`, { configs: changes }));
      flash(message);
      redraw(updated);
    } catch (e) { showError(errSlot, e, 'ferry refused the config change'); }
  }
  return h('section', { 'aria-labelledby': 'cfg-title' },
    h('h2', { id: 'cfg-title' }, 'Configs'),
    h('form', {
      onSubmit: (ev) => {
        ev.preventDefault();
        const changes = {};
        for (const { entry, input } of inputs) if (input.value.trim() !== entry.value) changes[entry.name] = input.value.trim();
        if (!Object.keys(changes).length) { showError(errSlot, new Error('Nothing changed: edit a value first.'), 'Configs'); return; }
        save(changes, saveButton, `Saved ${Object.keys(changes).join(', ')}.`);
      },
    }, table(['Name', 'Value', 'Source', ''], rows, { class: 'configs' }), errSlot, h('div', { class: 'actions' }, saveButton)));
}

