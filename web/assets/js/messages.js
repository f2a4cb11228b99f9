// Messages: browse one partition from an offset, from a point in time or
// the newest N; show keys, values (JSON pretty-printed, Avro, JSON Schema
// and Protobuf decoded through the registry, bytes as text/hex/base64) and
// headers; follow new records by long-polling the records route; produce a
// record (JSON, or Avro, JSON Schema or Protobuf with a registered schema).

import { enc, get, post } from './api.js';
import { busy, field, fill, flash, fmtNum, fmtTime, h, num, setInvalid, showError, table } from './ui.js';

const LIVE_WAIT_MS = 10000; // one long poll
const MAX_ROWS = 1000;      // rows kept on screen while tailing

/** bytesOf returns a record field's bytes as the server stored them. */
export function bytesOf(json, encoding) {
  if (json === null || json === undefined) return null;
  if (encoding === 'base64') return Uint8Array.from(atob(json), (c) => c.charCodeAt(0));
  if (encoding === 'string') return new TextEncoder().encode(json);
  return new TextEncoder().encode(JSON.stringify(json));
}

export const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ');
export const toBase64 = (b) => btoa(String.fromCharCode(...b));

const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** wireSchemaId is the schema id of Confluent's wire format (magic 0, 4-byte id), or 0. */
export function wireSchemaId(b) {
  if (!b || b.length < 5 || b[0] !== 0) return 0;
  return ((b[1] << 24) | (b[2] << 16) | (b[3] << 8) | b[4]) >>> 0;
}

/** SCHEMA_ENCODINGS are the encodings of keys and values the registry decoded. */
const SCHEMA_ENCODINGS = ['avro', 'jsonschema', 'protobuf'];

/** renderBytes shows a key or value in the chosen mode (auto, text, hex, base64). */
export function renderBytes(json, encoding, mode, schemaId) {
  if (json === null || json === undefined) return h('span', { class: 'muted' }, 'null');
  // Text with control characters is binary that happens to be valid UTF-8
  // (Confluent's wire format often is): auto shows it as hex too.
  const binary = encoding === 'base64' || (encoding === 'string' && CONTROL.test(json));
  if (mode === 'auto' && binary) {
    const b = bytesOf(json, encoding);
    return h('pre', { class: 'val' }, toHex(b), ' ', h('span', { class: 'badge' }, 'binary · hex'),
      wireSchemaId(b) ? h('span', { class: 'badge accent', title: 'Tick “Decode Avro”, “Decode JSON Schema” or “Decode Protobuf” to read it' }, `Confluent wire format · schema ${wireSchemaId(b)}`) : null);
  }
  if (mode === 'auto' || (mode === 'text' && encoding !== 'base64')) {
    if (encoding === 'string') return h('pre', { class: 'val' }, json);
    const pretty = JSON.stringify(json, null, 2);
    return h('pre', { class: 'val json' }, pretty,
      SCHEMA_ENCODINGS.includes(encoding) ? h('span', { class: 'badge accent' }, `${encoding}${schemaId ? ` · schema ${schemaId}` : ''}`) : null);
  }
  const b = bytesOf(json, SCHEMA_ENCODINGS.includes(encoding) ? '' : encoding);
  if (mode === 'text') return h('pre', { class: 'val' }, new TextDecoder('utf-8', { fatal: false }).decode(b));
  if (mode === 'hex') return h('pre', { class: 'val' }, toHex(b));
  return h('pre', { class: 'val' }, toBase64(b));
}

function headersCell(headers) {
  const entries = Object.entries(headers || {});
  if (!entries.length) return h('span', { class: 'muted' }, '—');
  return h('dl', { class: 'headers' }, entries.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export async function render(root, { segments, params }) {
  const topicNames = (await get('/topics')).filter((n) => n !== '__consumer_offsets');
  let topic = segments[1] || topicNames[0] || '';
  const state = { records: [], mode: 'auto', live: null, info: null, describe: null };

  const topicSel = h('select', { id: 'msg-topic' }, topicNames.map((n) => h('option', { value: n, selected: n === topic }, n)));
  if (topic && !topicNames.includes(topic)) topicSel.prepend(h('option', { value: topic, selected: true }, topic));
  const partSel = h('select', { id: 'msg-partition' });
  const from = h('select', { id: 'msg-from' },
    h('option', { value: 'newest' }, 'Newest'), h('option', { value: 'offset' }, 'From offset'),
    h('option', { value: 'timestamp' }, 'From time'), h('option', { value: 'earliest' }, 'From the beginning'));
  const count = h('input', { type: 'number', id: 'msg-count', min: 1, max: 1000, value: params.get('count') || '50' });
  const offset = h('input', { type: 'number', id: 'msg-offset', min: 0, value: params.get('offset') || '0' });
  const when = h('input', { type: 'datetime-local', id: 'msg-time', step: 1 });
  const avro = h('input', { type: 'checkbox', id: 'msg-avro' });
  const jsonSchema = h('input', { type: 'checkbox', id: 'msg-jsonschema' });
  const protobuf = h('input', { type: 'checkbox', id: 'msg-protobuf' });
  // The records route decodes one format per read: the boxes exclude each other.
  const decodeBoxes = [avro, jsonSchema, protobuf];
  for (const box of decodeBoxes) {
    box.addEventListener('change', () => { if (box.checked) for (const other of decodeBoxes) if (other !== box) other.checked = false; });
  }
  const showAs = h('select', { id: 'msg-show' },
    h('option', { value: 'auto' }, 'Auto (JSON pretty, text, binary as hex)'), h('option', { value: 'text' }, 'Text'),
    h('option', { value: 'hex' }, 'Hex'), h('option', { value: 'base64' }, 'Base64'));
  const loadButton = h('button', { type: 'submit', id: 'msg-load' }, 'Load');
  const liveButton = h('button', { type: 'button', id: 'msg-live', class: 'secondary', 'aria-pressed': 'false' }, 'Live tail');
  const offsetField = field('Offset', offset);
  const timeField = field('Time (your local time)', when);
  const info = h('p', { class: 'muted', id: 'msg-info', 'aria-live': 'polite' });
  const errSlot = h('div');
  const listSlot = h('div', { id: 'msg-list' });
  const more = h('div');
  const liveStatus = h('p', { class: 'live', role: 'status', hidden: true });

  if (params.get('from')) from.value = params.get('from');
  else if (params.get('offset')) from.value = 'offset';
  const syncFromFields = () => {
    offsetField.hidden = from.value !== 'offset';
    timeField.hidden = from.value !== 'timestamp';
  };
  syncFromFields();
  from.addEventListener('change', syncFromFields);
  showAs.addEventListener('change', () => { state.mode = showAs.value; drawRecords(); });

  async function loadPartitions(keep) {
    fill(partSel);
    state.describe = null;
    if (!topic) return;
    try {
      state.describe = await get(`/topics/${enc(topic)}`);
      for (const p of state.describe.partitions) partSel.append(h('option', { value: p.partition }, `Partition ${p.partition}`));
      if (keep !== undefined && keep !== null && state.describe.partitions.some((p) => String(p.partition) === String(keep))) partSel.value = String(keep);
      describePartition();
    } catch (e) { showError(errSlot, e, `Could not read topic “${topic}”`); }
  }
  function partitionInfo() {
    return state.describe?.partitions.find((p) => String(p.partition) === partSel.value);
  }
  function describePartition() {
    const p = partitionInfo();
    if (!p) { info.textContent = ''; return; }
    const count = p.high_watermark - p.log_start_offset;
    info.textContent = count > 0
      ? `Partition ${p.partition}: offsets ${fmtNum(p.log_start_offset)} to ${fmtNum(p.high_watermark - 1)}, ${fmtNum(count)} message(s).`
      : `Partition ${p.partition} is empty; the next message gets offset ${fmtNum(p.high_watermark)}.`;
  }

  function recordsPath(start, max, extra = '') {
    const fmt = avro.checked ? '&format=avro' : jsonSchema.checked ? '&format=jsonschema' : protobuf.checked ? '&format=protobuf' : '';
    return `/kafka/${enc(topic)}/partitions/${partSel.value}/records?offset=${start}&max_records=${max}${fmt}${extra}`;
  }

  async function startOffset() {
    const p = await get(`/topics/${enc(topic)}`);
    state.describe = p;
    describePartition();
    const part = partitionInfo();
    const n = Number(count.value) || 50;
    switch (from.value) {
      case 'newest': return Math.max(part.log_start_offset, part.high_watermark - n);
      case 'earliest': return part.log_start_offset;
      case 'offset': {
        const o = Number(offset.value);
        if (!Number.isInteger(o) || o < 0) { setInvalid(offset, 'Enter an offset, 0 or more.'); offset.focus(); return null; }
        setInvalid(offset, '');
        return o;
      }
      default: {
        if (!when.value) { setInvalid(when, 'Pick a date and time.'); when.focus(); return null; }
        setInvalid(when, '');
        const ms = new Date(when.value).getTime();
        const ans = await get(`/kafka/${enc(topic)}/partitions/${partSel.value}/offsets?timestamp=${ms}`);
        if (ans.offset < 0) {
          info.textContent = `No message in partition ${partSel.value} has a timestamp at or after ${fmtTime(ms)}.`;
          return part.high_watermark;
        }
        return ans.offset;
      }
    }
  }

  async function load() {
    stopLive();
    errSlot.replaceChildren();
    if (!topic) { fill(listSlot, h('p', {}, 'There are no topics yet. Create one on the Topics page.')); return; }
    try {
      await busy(loadButton, 'Loading…', async () => {
        const start = await startOffset();
        if (start === null) return;
        const n = Math.min(Number(count.value) || 50, 1000);
        const ans = await get(recordsPath(start, n));
        state.records = ans.records;
        state.next = ans.next_offset;
        state.hw = ans.high_watermark;
        drawRecords();
        const url = `#/messages/${enc(topic)}?partition=${partSel.value}&from=${from.value}${from.value === 'offset' ? `&offset=${offset.value}` : ''}`;
        history.replaceState(null, '', url);
      });
    } catch (e) { showError(errSlot, e, 'Could not read messages'); }
  }

  async function loadMore(button) {
    try {
      await busy(button, 'Loading…', async () => {
        const ans = await get(recordsPath(state.next, Math.min(Number(count.value) || 50, 1000)));
        state.records = state.records.concat(ans.records);
        state.next = ans.next_offset;
        state.hw = ans.high_watermark;
        drawRecords();
      });
    } catch (e) { showError(errSlot, e, 'Could not read more messages'); }
  }

  function drawRecords() {
    const rows = state.records.map((r) => h('tr', { 'data-offset': r.offset },
      h('td', { class: 'num' }, r.offset),
      h('td', { class: 'nowrap' }, fmtTime(r.timestamp), r.timestamp_type === 'LogAppendTime' ? h('span', { class: 'badge' }, 'log append') : null),
      h('td', { class: 'key' }, renderBytes(r.key, r.key_encoding, state.mode, r.key_schema_id)),
      h('td', { class: 'value' }, renderBytes(r.value, r.value_encoding, state.mode, r.value_schema_id)),
      h('td', {}, headersCell(r.headers))));
    fill(listSlot, table([num('Offset'), 'Timestamp', 'Key', 'Value', 'Headers'], rows,
      { class: 'records', empty: 'No messages in this range.', caption: `${state.records.length} message(s) from partition ${partSel.value} of ${topic}` }));
    more.replaceChildren();
    if (!state.live && state.next < state.hw) {
      const b = h('button', { type: 'button', class: 'secondary', onClick: () => loadMore(b) }, `Load more (${fmtNum(state.hw - state.next)} after offset ${fmtNum(state.next - 1)})`);
      more.append(b);
    }
  }

  // Live tail: long polls of the records route from the end of what is
  // shown; the server answers as soon as a record arrives or after LIVE_WAIT_MS.
  async function startLive() {
    errSlot.replaceChildren();
    const ctl = new AbortController();
    state.live = ctl;
    liveButton.setAttribute('aria-pressed', 'true');
    liveButton.textContent = 'Stop live tail';
    liveStatus.hidden = false;
    liveStatus.textContent = 'Live: waiting for new messages…';
    more.replaceChildren();
    try {
      if (state.next === undefined || !state.records.length) {
        const latest = await get(`/kafka/${enc(topic)}/partitions/${partSel.value}/offsets?timestamp=latest`, { signal: ctl.signal, quiet: true });
        state.next = latest.offset;
        state.records = [];
        drawRecords();
      }
      while (state.live === ctl) {
        const ans = await get(recordsPath(state.next, 500, `&timeout_ms=${LIVE_WAIT_MS}`), { signal: ctl.signal, quiet: true });
        if (state.live !== ctl) break;
        if (ans.records.length) {
          state.records = state.records.concat(ans.records).slice(-MAX_ROWS);
          state.next = ans.next_offset;
          state.hw = ans.high_watermark;
          drawRecords();
          liveStatus.textContent = `Live: ${ans.records.length} new message(s) at ${new Date().toLocaleTimeString()}; waiting for more…`;
        }
      }
    } catch (e) {
      if (e.name !== 'AbortError') showError(errSlot, e, 'Live tail stopped');
      if (state.live === ctl) stopLive();
    }
  }
  function stopLive() {
    if (!state.live) return;
    const ctl = state.live;
    state.live = null;
    ctl.abort();
    liveButton.setAttribute('aria-pressed', 'false');
    liveButton.textContent = 'Live tail';
    liveStatus.hidden = true;
  }
  liveButton.addEventListener('click', () => (state.live ? stopLive() : startLive()));

  topicSel.addEventListener('change', async () => {
    stopLive();
    topic = topicSel.value;
    state.records = []; state.next = undefined;
    await loadPartitions(0);
    fill(produceSlot, produceForm());
    await load();
  });
  partSel.addEventListener('change', () => { stopLive(); describePartition(); state.next = undefined; load(); });

  const produceSlot = h('div');
  function produceForm() {
    return topic ? buildProduceForm(topic, () => partSel.value, async (result) => {
      if (String(result.partition) === partSel.value && !state.live) {
        from.value = 'newest';
        syncFromFields();
        await load();
      }
    }) : '';
  }

  root.append(
    h('h1', {}, 'Messages'),
    h('form', { class: 'panel controls', 'aria-label': 'Choose messages', onSubmit: (ev) => { ev.preventDefault(); load(); } },
      h('div', { class: 'grid-controls' },
        field('Topic', topicSel), field('Partition', partSel), field('Start', from),
        field('How many', count), offsetField, timeField),
      h('div', { class: 'actions left' },
        loadButton, liveButton,
        h('label', { class: 'check' }, avro, ' Decode Avro through the registry'),
        h('label', { class: 'check' }, jsonSchema, ' Decode JSON Schema'),
        h('label', { class: 'check' }, protobuf, ' Decode Protobuf'),
        h('span', { class: 'spacer' }),
        h('label', { for: 'msg-show', class: 'inline-label' }, 'Show keys and values as'), showAs)),
    info, errSlot, liveStatus, listSlot, more, produceSlot);
  await loadPartitions(params.get('partition'));
  fill(produceSlot, produceForm());
  await load();
  return () => stopLive();
}

function headerRow(rows) {
  const k = h('input', { type: 'text', 'aria-label': 'Header name', placeholder: 'name' });
  const v = h('input', { type: 'text', 'aria-label': 'Header value', placeholder: 'value' });
  const row = h('div', { class: 'kv-row' }, k, v, h('button', { type: 'button', class: 'secondary small', 'aria-label': 'Remove this header', onClick: () => row.remove() }, 'Remove'));
  rows.append(row);
  return k;
}

function buildProduceForm(topic, currentPartition, onProduced) {
  const partition = h('select', { id: 'produce-partition' },
    h('option', { value: '' }, 'Chosen by ferry (key hash, or round robin)'),
    h('option', { value: 'current' }, 'The partition shown above'));
  const key = h('input', { type: 'text', id: 'produce-key', autocomplete: 'off', placeholder: 'optional' });
  const value = h('textarea', { id: 'produce-value', rows: 5, spellcheck: 'false' }, '{\n  "hello": "world"\n}');
  const format = h('select', { id: 'produce-format' }, h('option', { value: 'json' }, 'JSON'), h('option', { value: 'avro' }, 'Avro'),
    h('option', { value: 'jsonschema' }, 'JSON Schema'), h('option', { value: 'protobuf' }, 'Protobuf'));
  const schemaSel = h('select', { id: 'produce-schema' });
  const schemaField = field(`Value schema (subject ${topic}-value)`, schemaSel);
  schemaField.hidden = true;
  const headers = h('div', { class: 'kv-rows' });
  const errSlot = h('div');
  const result = h('div', { role: 'status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', id: 'produce-send' }, 'Produce');

  format.addEventListener('change', async () => {
    schemaField.hidden = format.value === 'json';
    if (format.value === 'json') return;
    fill(schemaSel);
    const want = { avro: 'AVRO', jsonschema: 'JSON', protobuf: 'PROTOBUF' }[format.value];
    try {
      const versions = await get(`/subjects/${enc(`${topic}-value`)}/versions`);
      for (const v of versions.slice().reverse()) {
        const s = await get(`/subjects/${enc(`${topic}-value`)}/versions/${v}`);
        if ((s.schemaType || 'AVRO') === want) schemaSel.append(h('option', { value: s.id }, `version ${v} (id ${s.id})`));
      }
      setInvalid(schemaSel, '');
    } catch (e) {
      setInvalid(schemaSel, e.status === 404 ? `No schema is registered under ${topic}-value; register one on the Schema registry page.` : e.message);
    }
  });

  const form = h('form', {
    class: 'panel', 'aria-labelledby': 'produce-title', novalidate: true,
    onSubmit: async (ev) => {
      ev.preventDefault();
      errSlot.replaceChildren();
      result.replaceChildren();
      let parsed;
      try {
        parsed = JSON.parse(value.value);
        setInvalid(value, '');
      } catch (e) {
        setInvalid(value, `The value is not valid JSON (${e.message}). Text must be in double quotes.`);
        value.focus();
        return;
      }
      const rec = { value: parsed };
      if (key.value !== '') rec.key = key.value;
      if (partition.value === 'current') rec.partition = Number(currentPartition());
      const hdrs = {};
      for (const row of headers.children) {
        const [k, v] = row.querySelectorAll('input');
        if (k.value) hdrs[k.value] = v.value;
      }
      if (Object.keys(hdrs).length) rec.headers = hdrs;
      let body = { records: [rec] };
      let type = 'application/json';
      if (format.value !== 'json') {
        if (!schemaSel.value) { setInvalid(schemaSel, 'Choose a schema.'); schemaSel.focus(); return; }
        delete rec.headers;
        body = { value_schema_id: Number(schemaSel.value), records: [rec] };
        type = `application/vnd.kafka.${format.value}.v2+json`;
        if (Object.keys(hdrs).length) { showError(errSlot, new Error('Headers are not sent with schema’d records by the REST Proxy format; remove them.'), 'Not sent'); return; }
      }
      try {
        const ans = await busy(submit, 'Producing…', () => post(`/kafka/${enc(topic)}`, body, { type }));
        const o = ans.offsets[0];
        if (o.error_code) throw Object.assign(new Error(o.message || o.error), {});
        fill(result, h('p', { class: 'notice ok', id: 'produce-result' }, `Produced to partition ${o.partition} at offset ${o.offset}.`));
        flash(`Produced to ${topic} partition ${o.partition} at offset ${o.offset}.`);
        await onProduced(o);
      } catch (e) { showError(errSlot, e, 'ferry refused the record'); }
    },
  },
  h('h2', { id: 'produce-title' }, `Produce a record to ${topic}`),
  h('div', { class: 'grid3' }, field('Format', format), field('Partition', partition), field('Key (text)', key)),
  schemaField,
  field('Value', value, 'JSON: an object, array, number, or text in double quotes. For Avro, the Avro JSON of the chosen schema; for JSON Schema, a document the chosen schema accepts; for Protobuf, the Protobuf JSON of the schema’s first message.'),
  h('fieldset', {}, h('legend', {}, 'Headers (optional)'), headers,
    h('button', { type: 'button', class: 'secondary small', onClick: () => headerRow(headers).focus() }, 'Add header')),
  errSlot, result,
  h('div', { class: 'actions' }, submit));
  return form;
}

