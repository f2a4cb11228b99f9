// Search: find records of a topic across its partitions by key, value
// text, header, a JSON field and time range; newest or oldest first,
// bounded by a scan budget, continued with the server's cursor; export
// the same selection as JSON lines or CSV; republish chosen records to
// another topic.

import { enc, get, post } from './api.js';
import { renderBytes } from './messages.js';
import { busy, field, fill, flash, fmtNum, fmtTime, h, num, setInvalid, showError, table } from './ui.js';

/** searchQuery builds the query string of the search and export routes. */
export function searchQuery(f, extra = {}) {
  const q = new URLSearchParams();
  if (f.key !== '') q.set('key', f.key);
  if (f.value !== '') q.set('value', f.value);
  for (const hd of f.headers) q.append('header', hd);
  if (f.json !== '') q.set('json', f.json);
  if (f.from !== null) q.set('from', String(f.from));
  if (f.to !== null) q.set('to', String(f.to));
  if (f.partitions) q.set('partitions', f.partitions);
  q.set('order', f.order);
  q.set('max_scan_records', String(f.budget));
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  return q.toString();
}

const localMs = (input) => (input.value ? new Date(input.value).getTime() : null);

export async function render(root, { segments, params }) {
  const topicNames = (await get('/topics')).filter((n) => !n.startsWith('__'));
  const topic = h('select', { id: 'search-topic' }, topicNames.map((n) => h('option', { value: n, selected: n === segments[1] }, n)));
  const key = h('input', { type: 'text', id: 'search-key', autocomplete: 'off', placeholder: 'equal to' });
  const value = h('input', { type: 'text', id: 'search-value', autocomplete: 'off', placeholder: 'contains' });
  const header = h('input', { type: 'text', id: 'search-header', autocomplete: 'off', placeholder: 'name or name=value' });
  const json = h('input', { type: 'text', id: 'search-json', autocomplete: 'off', spellcheck: 'false', placeholder: '$.user.id == 42' });
  const from = h('input', { type: 'datetime-local', id: 'search-from', step: 1 });
  const to = h('input', { type: 'datetime-local', id: 'search-to', step: 1 });
  const parts = h('input', { type: 'text', id: 'search-partitions', autocomplete: 'off', placeholder: 'all, or 0,3,7' });
  const order = h('select', { id: 'search-order' }, h('option', { value: 'newest' }, 'Newest first'), h('option', { value: 'oldest' }, 'Oldest first'));
  const limit = h('input', { type: 'number', id: 'search-limit', min: 1, max: 1000, value: '100' });
  const budget = h('input', { type: 'number', id: 'search-budget', min: 1, max: 1000000, value: '10000' });
  const avro = h('input', { type: 'checkbox', id: 'search-avro' });
  const submit = h('button', { type: 'submit', id: 'search-run' }, 'Search');
  const errSlot = h('div');
  const progress = h('p', { class: 'muted', id: 'search-progress', role: 'status', 'aria-live': 'polite' });
  const listSlot = h('div', { id: 'search-results' });
  const moreSlot = h('div');
  const exportSlot = h('div', { class: 'actions left', id: 'search-export' });
  const republishSlot = h('div');
  const state = { filters: null, records: [], cursor: '', selected: new Set() };
  for (const [k, el] of [['key', key], ['value', value], ['header', header], ['json', json]]) if (params.get(k)) el.value = params.get(k);

  function readFilters() {
    for (const el of [json, from, to, budget]) setInvalid(el, '');
    const f = {
      key: key.value, value: value.value, headers: header.value ? [header.value] : [], json: json.value.trim(),
      from: localMs(from), to: localMs(to), order: order.value, budget: Number(budget.value) || 10000,
      partitions: parts.value.replace(/\s+/g, ''),
    };
    if (f.from !== null && f.to !== null && f.from > f.to) { setInvalid(to, 'The end is before the start.'); to.focus(); return null; }
    return f;
  }

  async function search(cursor) {
    errSlot.replaceChildren();
    const f = cursor ? state.filters : readFilters();
    if (!f) return;
    const extra = { limit: Math.min(Number(limit.value) || 100, 1000), cursor, decode: avro.checked ? 'avro' : '' };
    try {
      const ans = await get(`/kafka/${enc(topic.value)}/search?${searchQuery(f, extra)}`);
      if (!cursor) { state.records = []; state.selected.clear(); }
      state.filters = f;
      state.records = state.records.concat(ans.records);
      state.cursor = ans.cursor || '';
      drawResults();
      drawProgress(ans.progress);
      drawExport(f);
      history.replaceState(null, '', `#/search/${enc(topic.value)}`);
    } catch (e) {
      if (e.status === 400 && /json/.test(e.message)) setInvalid(json, e.message);
      showError(errSlot, e, 'The search failed');
    }
  }

  function drawProgress(p) {
    const touched = p.partitions.filter((x) => x.scanned > 0);
    const perPartition = touched.slice(0, 8).map((x) => `p${x.partition}: ${fmtNum(x.scanned)} scanned, ${fmtNum(x.remaining)} left`).join('; ')
      + (touched.length > 8 ? `; ${touched.length - 8} more partition(s)` : '');
    const why = { budget_records: 'the scan budget (records) is spent', budget_bytes: 'the scan budget (bytes) is spent', limit: 'enough matches were found' }[p.stopped_by] || '';
    progress.textContent = `${fmtNum(state.records.length)} match(es) shown; this request scanned ${fmtNum(p.scanned_records)} record(s) (${perPartition || 'none'}). `
      + (p.done ? 'Every record in range was scanned.' : `Stopped because ${why}; continue to scan more.`);
    moreSlot.replaceChildren();
    if (!p.done) {
      const b = h('button', { type: 'button', class: 'secondary', id: 'search-more', onClick: () => busy(b, 'Scanning…', () => search(state.cursor)) }, 'Continue scanning');
      moreSlot.append(b);
    }
  }

  function drawExport(f) {
    const base = `/kafka/${enc(topic.value)}/export?`;
    fill(exportSlot,
      h('span', { class: 'inline-label' }, 'Export this selection:'),
      h('a', { class: 'button secondary', id: 'export-jsonl', href: base + searchQuery(f, { format: 'jsonl', max_scan_records: 1000000 }), download: '' }, 'JSON lines'),
      h('a', { class: 'button secondary', id: 'export-csv', href: base + searchQuery(f, { format: 'csv', max_scan_records: 1000000 }), download: '' }, 'CSV'),
      h('span', { class: 'muted' }, 'Streams up to a million records scanned; the last JSON line (and the response trailers) say whether it is complete.'));
  }

  function drawResults() {
    const rows = state.records.map((r) => {
      const id = `${r.partition}:${r.offset}`;
      const box = h('input', { type: 'checkbox', 'aria-label': `Select partition ${r.partition} offset ${r.offset}`, checked: state.selected.has(id),
        onChange: (ev) => { if (ev.target.checked) state.selected.add(id); else state.selected.delete(id); drawRepublish(); } });
      return h('tr', { 'data-record': id },
        h('td', {}, box),
        h('td', { class: 'num' }, r.partition), h('td', { class: 'num' }, r.offset),
        h('td', { class: 'nowrap' }, fmtTime(r.timestamp)),
        h('td', { class: 'key' }, renderBytes(r.key, r.key_encoding, 'auto', r.key_schema_id)),
        h('td', { class: 'value' }, renderBytes(r.value, r.value_encoding, 'auto', r.value_schema_id)),
        h('td', {}, Object.entries(r.headers || {}).map(([k, v]) => h('div', {}, h('span', { class: 'muted' }, `${k}: `), v))));
    });
    fill(listSlot, table(['', num('Partition'), num('Offset'), 'Timestamp', 'Key', 'Value', 'Headers'], rows,
      { class: 'records search-results', empty: 'No record matched in what was scanned.', caption: `Matches in ${topic.value}` }));
    drawRepublish();
  }

  function drawRepublish() {
    if (!state.records.length) { republishSlot.replaceChildren(); return; }
    const target = h('select', { id: 'republish-target' }, topicNames.filter((n) => n !== topic.value).map((n) => h('option', { value: n }, n)));
    const keep = h('input', { type: 'checkbox', id: 'republish-keep' });
    const go = h('button', { type: 'submit', id: 'republish-run', disabled: state.selected.size === 0 }, `Republish ${state.selected.size} selected`);
    const out = h('div', { role: 'status', 'aria-live': 'polite' });
    const err = h('div');
    fill(republishSlot, h('form', {
      class: 'panel', 'aria-labelledby': 'republish-title',
      onSubmit: async (ev) => {
        ev.preventDefault();
        err.replaceChildren();
        if (!target.value) { setInvalid(target, 'Create another topic first.'); return; }
        const recs = [...state.selected].map((id) => { const [p, o] = id.split(':'); return { partition: Number(p), offset: Number(o) }; });
        try {
          const ans = await busy(go, 'Republishing…', () => post(`/kafka/${enc(topic.value)}/republish`, { target: target.value, records: recs, keep_partition: keep.checked }));
          fill(out, h('p', { class: 'notice ok', id: 'republish-result' }, `Republished ${ans.records.length} record(s) to ${ans.target}: `
            + ans.records.map((x) => `p${x.from.partition}@${x.from.offset} → p${x.to.partition}@${x.to.offset}`).join(', ')));
          flash(`Republished ${ans.records.length} record(s) to ${ans.target}.`);
        } catch (e) { showError(err, e, 'ferry refused the republish'); }
      },
    },
    h('h2', { id: 'republish-title' }, 'Republish selected records'),
    h('p', { class: 'muted' }, 'Keys, values, headers and timestamps are kept; the target gets new offsets.'),
    h('div', { class: 'grid3' }, field('Target topic', target), h('label', { class: 'check' }, keep, ' Keep each record’s partition number')),
    err, out, h('div', { class: 'actions' }, go)));
  }

  root.append(
    h('h1', {}, 'Search messages'),
    h('form', { class: 'panel controls', 'aria-label': 'Search filters', onSubmit: (ev) => { ev.preventDefault(); busy(submit, 'Searching…', () => search('')); } },
      h('div', { class: 'grid3' }, field('Topic', topic), field('Key', key), field('Value contains', value)),
      h('div', { class: 'grid3' }, field('Header', header), field('JSON field', json, 'A path and optional comparison: $.user.id == 42, user.name=ann, $.tags[0]'),
        field('Order', order)),
      h('div', { class: 'grid3' }, field('From (your local time)', from), field('To (your local time)', to),
        field('Scan at most (records)', budget, 'Per request; continue for more.')),
      h('div', { class: 'grid3' }, field('Partitions', parts, 'A topic of more than 500 partitions is searched 500 at a time.'),
        field('Show at most', limit)),
      h('div', { class: 'actions left' }, submit,
        h('label', { class: 'check' }, avro, ' Decode Avro through the registry'))),
    errSlot, progress, exportSlot, listSlot, moreSlot, republishSlot);
  if (!topicNames.length) fill(listSlot, h('p', {}, 'There are no topics yet.'));
}
