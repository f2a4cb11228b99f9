// Schema registry: subjects, their versions with a side-by-side diff,
// registering a version after showing the compatibility verdict, and the
// compatibility level per subject, for every schema type the registry
// serves (GET /schemas/types). Confluent's routes, as clients use them.

import { ApiError, del, enc, get, mapLimit, post, put } from './api.js';
import { busy, errorBox, field, fill, flash, h, num, link, setInvalid, showError, table } from './ui.js';

const SR = 'application/vnd.schemaregistry.v1+json';
const LEVELS = ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE', 'FORWARD', 'FORWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE'];

/** pretty formats a schema's JSON text with two-space indents; text that is not JSON stays as is. */
export function pretty(schema) {
  try { return JSON.stringify(JSON.parse(schema), null, 2); } catch { return schema; }
}

/**
 * lineDiff pairs the lines of a and b for a side-by-side view: rows of
 * {left, right, kind} with kind same, del (left only), add (right only) or
 * change (both, different). Longest common subsequence; fine for schemas.
 */
export function lineDiff(a, b) {
  const n = a.length; const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const rows = [];
  let dels = []; let adds = [];
  const flush = () => {
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
      const l = dels[k]; const r = adds[k];
      rows.push({ left: l, right: r, kind: l && r ? 'change' : l ? 'del' : 'add' });
    }
    dels = []; adds = [];
  };
  let i = 0; let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { flush(); rows.push({ left: { n: i + 1, text: a[i] }, right: { n: j + 1, text: b[j] }, kind: 'same' }); i++; j++; }
    else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) { adds.push({ n: j + 1, text: b[j] }); j++; }
    else { dels.push({ n: i + 1, text: a[i] }); i++; }
  }
  flush();
  return rows;
}

/**
 * reasonText turns one of the registry's verbose messages (Confluent's
 * "{errorType:'…', description:'…', path:'…'}" strings) into a sentence;
 * bookkeeping entries (oldSchemaVersion, oldSchema, validateFields,
 * compatibility) give ''. Anything else is shown as it came.
 */
export function reasonText(m) {
  const desc = m.match(/description:'(.*?)'(?:, path:'(.*?)')?\}$/s) || m.match(/description:"(.*?)['"]\}$/s);
  if (desc) return desc[1];
  const breaking = m.match(/^\{breakingChanges: '(.*)'\}$/s);
  if (breaking) return `Breaking change: ${breaking[1]}`;
  if (/^\{(oldSchemaVersion|oldSchema|validateFields|compatibility):/.test(m)) return '';
  return m;
}

function diffTable(leftTitle, rightTitle, rows) {
  const cell = (side, kind) => {
    const cls = !side ? 'gap' : kind === 'same' ? '' : kind === 'add' || kind === 'change' ? 'add' : 'del';
    return [h('td', { class: 'ln' }, side ? side.n : ''), h('td', { class: cls }, side ? side.text : '')];
  };
  return h('div', { class: 'table-wrap' }, h('table', { class: 'diff', id: 'schema-diff' },
    h('colgroup', {}, h('col', { class: 'ln' }), h('col'), h('col', { class: 'ln' }), h('col')),
    h('thead', {}, h('tr', {}, h('th', { colspan: 2, scope: 'col' }, leftTitle), h('th', { colspan: 2, scope: 'col' }, rightTitle))),
    h('tbody', {}, rows.map((r) => h('tr', { class: r.kind },
      cell(r.left, r.kind === 'change' ? 'del' : r.kind),
      cell(r.right, r.kind === 'change' ? 'add' : r.kind))))));
}

async function subjectLevel(subject) {
  try {
    return { level: (await get(`/config/${enc(subject)}`)).compatibilityLevel, own: true };
  } catch (e) {
    if (e.status !== 404) throw e;
    return { level: (await get('/config')).compatibilityLevel, own: false };
  }
}

export async function renderList(root) {
  const [subjects, global, types] = await Promise.all([get('/subjects'), get('/config'), get('/schemas/types')]);
  const info = await mapLimit(subjects, 6, async (s) => ({ versions: await get(`/subjects/${enc(s)}/versions`), level: await subjectLevel(s) }));
  const rows = subjects.map((s, i) => h('tr', { 'data-subject': s },
    h('td', {}, link(`#/schemas/${enc(s)}`, s)),
    info[i].ok ? [
      h('td', { class: 'num' }, info[i].value.versions.length),
      h('td', { class: 'num' }, Math.max(...info[i].value.versions)),
      h('td', {}, info[i].value.level.level, info[i].value.level.own ? null : h('span', { class: 'badge' }, 'global')),
    ] : h('td', { colspan: 3 }, errorBox(info[i].error))));
  root.append(
    h('div', { class: 'view-head' }, h('h1', {}, 'Schema registry'),
      h('p', { class: 'muted' }, 'Global compatibility: ', h('strong', { id: 'global-level' }, global.compatibilityLevel))),
    table(['Subject', num('Versions'), num('Latest'), 'Compatibility'], rows, { empty: 'No subjects yet. Register a schema below.', class: 'subjects' }),
    newSubjectForm(types));
}

/** EXAMPLES are the starting text of the new-subject form per schema type. */
const EXAMPLES = {
  AVRO: JSON.stringify({ type: 'record', name: 'Order', namespace: 'com.example', fields: [{ name: 'id', type: 'long' }] }, null, 2),
  JSON: JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', title: 'Order', type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] }, null, 2),
  PROTOBUF: 'syntax = "proto3";\npackage com.example;\n\nmessage Order {\n  int64 id = 1;\n}\n',
};

/** TYPE_NAMES are the schema types as people call them. */
export const TYPE_NAMES = { AVRO: 'Avro', JSON: 'JSON Schema', PROTOBUF: 'Protobuf' };

/** typeOf is a registry answer's schema type: Confluent omits AVRO. */
export const typeOf = (s) => s.schemaType || 'AVRO';

function newSubjectForm(types) {
  const subject = h('input', { type: 'text', id: 'new-subject', autocomplete: 'off', spellcheck: 'false', placeholder: 'orders-value' });
  const schema = h('textarea', { id: 'new-schema', rows: 10, spellcheck: 'false' }, EXAMPLES.AVRO);
  const kind = h('select', { id: 'new-schema-type' }, types.map((t) => h('option', { value: t }, TYPE_NAMES[t] || t)));
  // Swap the example only while the text is still an untouched example.
  kind.addEventListener('change', () => {
    if (Object.values(EXAMPLES).includes(schema.value)) schema.value = EXAMPLES[kind.value] || '';
  });
  const refs = h('textarea', { id: 'new-references', rows: 2, spellcheck: 'false', placeholder: '[{"name": "shop/money.proto", "subject": "money", "version": 1}]' });
  const errSlot = h('div');
  const submit = h('button', { type: 'submit', id: 'register-subject' }, 'Register schema');
  return h('form', {
    class: 'panel', 'aria-labelledby': 'new-subject-title',
    onSubmit: async (ev) => {
      ev.preventDefault();
      errSlot.replaceChildren();
      setInvalid(subject, subject.value.trim() ? '' : 'Enter a subject name, e.g. <topic>-value.');
      if (!subject.value.trim()) { subject.focus(); return; }
      const references = parseReferences(refs.value);
      setInvalid(refs, references ? '' : 'References are a JSON array of {"name", "subject", "version"} objects.');
      if (!references) { refs.focus(); return; }
      try {
        const ans = await busy(submit, 'Registering…', () => post(`/subjects/${enc(subject.value.trim())}/versions`, { schema: schema.value, schemaType: kind.value, references }, { type: SR }));
        flash(`Registered under ${subject.value.trim()} with id ${ans.id}.`);
        location.hash = `#/schemas/${enc(subject.value.trim())}`;
      } catch (e) { showError(errSlot, e, 'The registry refused the schema'); }
    },
  },
  h('h2', { id: 'new-subject-title' }, 'Register a schema under a new or existing subject'),
  field('Subject', subject, 'Confluent’s serializers use <topic>-value and <topic>-key.'),
  field('Schema type', kind),
  field('Schema', schema),
  field('References (optional)', refs, 'Other subjects’ schemas this one uses: a Protobuf import path, a JSON Schema $ref or an Avro type name as "name".'),
  errSlot, h('div', { class: 'actions' }, submit));
}

/** parseReferences reads the references field: [] when empty, null when it is not a list of references. */
export function parseReferences(text) {
  if (!text.trim()) return [];
  try {
    const refs = JSON.parse(text);
    const ok = Array.isArray(refs) && refs.every((r) => r && typeof r.name === 'string' && typeof r.subject === 'string' && Number.isInteger(r.version));
    return ok ? refs : null;
  } catch { return null; }
}

export async function renderSubject(root, { segments, params }) {
  const subject = segments[1];
  const versions = await get(`/subjects/${enc(subject)}/versions`);
  const all = await Promise.all(versions.map((v) => get(`/subjects/${enc(subject)}/versions/${v}`)));
  const latest = all[all.length - 1];
  const level = await subjectLevel(subject);
  root.append(
    h('div', { class: 'view-head' }, h('h1', {}, h('span', { class: 'muted' }, 'Subject '), subject),
      h('span', { class: 'badge accent', id: 'subject-type' }, TYPE_NAMES[typeOf(latest)] || typeOf(latest))),
    levelForm(subject, level),
    versionsSection(subject, all, Number(params.get('v')) || latest.version),
    diffSection(subject, all),
    registerSection(subject, latest, level));
}

function levelForm(subject, level) {
  const sel = h('select', { id: 'subject-level' },
    h('option', { value: '' }, `Global default${level.own ? '' : ` (${level.level})`}`),
    LEVELS.map((l) => h('option', { value: l, selected: level.own && l === level.level }, l)));
  const errSlot = h('div');
  const save = h('button', { type: 'submit', class: 'secondary', id: 'save-level' }, 'Change');
  return h('form', {
    class: 'inline-form',
    onSubmit: async (ev) => {
      ev.preventDefault();
      errSlot.replaceChildren();
      try {
        await busy(save, 'Saving…', () => (sel.value ? put(`/config/${enc(subject)}`, { compatibility: sel.value }, { type: SR }) : del(`/config/${enc(subject)}`).catch((e) => { if (e.status !== 404) throw e; })));
        flash(sel.value ? `${subject} now checks ${sel.value} compatibility.` : `${subject} now follows the global compatibility level.`);
        window.dispatchEvent(new HashChangeEvent('hashchange'));
      } catch (e) { showError(errSlot, e, 'Could not change the compatibility level'); }
    },
  }, field('Compatibility level', sel, 'Checked when a new version is registered.'), save, errSlot);
}

function versionsSection(subject, all, selected) {
  const view = h('div');
  const show = (v) => {
    const s = all.find((x) => x.version === v) || all[all.length - 1];
    for (const a of list.querySelectorAll('a')) a.setAttribute('aria-current', String(a.dataset.v === String(s.version)));
    fill(view, h('p', { class: 'muted' }, `Version ${s.version} · schema id ${s.id} · ${TYPE_NAMES[typeOf(s)] || typeOf(s)}`,
      (s.references || []).length ? ` · references ${s.references.map((r) => `${r.name} → ${r.subject} v${r.version}`).join(', ')}` : ''),
    h('pre', { class: 'panel schema', id: 'schema-text' }, pretty(s.schema)));
  };
  const list = h('ul', { class: 'list-plain', 'aria-label': 'Versions' }, all.slice().reverse().map((s) => h('li', {},
    h('a', { href: `#/schemas/${enc(subject)}?v=${s.version}`, 'data-v': s.version, onClick: (ev) => { ev.preventDefault(); history.replaceState(null, '', ev.currentTarget.href); show(s.version); } },
      `Version ${s.version}`, h('span', { class: 'badge' }, `id ${s.id}`)))));
  show(selected);
  return h('section', { 'aria-labelledby': 'versions-title' }, h('h2', { id: 'versions-title' }, `Versions (${all.length})`),
    h('div', { class: 'split' }, list, view));
}

function diffSection(subject, all) {
  if (all.length < 2) return h('section', {}, h('h2', {}, 'Compare versions'), h('p', { class: 'muted' }, 'Only one version so far: register another to compare.'));
  const opts = (sel) => all.map((s) => h('option', { value: s.version, selected: s.version === sel }, `Version ${s.version}`));
  const from = h('select', { id: 'diff-from' }, opts(all[all.length - 2].version));
  const to = h('select', { id: 'diff-to' }, opts(all[all.length - 1].version));
  const out = h('div');
  const draw = async () => {
    const a = all.find((s) => String(s.version) === from.value);
    const b = all.find((s) => String(s.version) === to.value);
    const rows = lineDiff(pretty(a.schema).split('\n'), pretty(b.schema).split('\n'));
    fill(out, diffTable(`Version ${a.version} (id ${a.id})`, `Version ${b.version} (id ${b.id})`, rows));
    try {
      const d = await get(`/subjects/${enc(subject)}/diff?from=${a.version}&to=${b.version}`);
      out.prepend(changesList(d));
    } catch (e) { out.prepend(errorBox(e, 'Could not list the semantic changes')); }
  };
  from.addEventListener('change', draw);
  to.addEventListener('change', draw);
  draw();
  return h('section', { 'aria-labelledby': 'diff-title' }, h('h2', { id: 'diff-title' }, 'Compare versions'),
    h('div', { class: 'inline-form' }, field('From', from), field('To', to)), out);
}

function changesList(d) {
  const levels = Object.entries(d.compatibility || {}).sort();
  return h('div', { class: 'panel changes', id: 'diff-changes' },
    h('p', {}, h('strong', {}, `${(d.changes || []).length} change(s). `), 'Compatible under: ',
      levels.filter(([, ok]) => ok).map(([l]) => l).join(', ') || 'no level', '.'),
    (d.changes || []).length ? h('ul', {}, d.changes.map((c) => h('li', {},
      h('code', {}, c.kind), ' at ', h('code', {}, c.path || '/'),
      c.old || c.new ? ` (${c.old || '—'} → ${c.new || '—'})` : '',
      c.backward ? '' : h('span', { class: 'badge bad' }, 'breaks backward'),
      c.forward ? '' : h('span', { class: 'badge bad' }, 'breaks forward')))) : null);
}

function registerSection(subject, latest, level) {
  const schema = h('textarea', { id: 'candidate', rows: 14, spellcheck: 'false' }, pretty(latest.schema));
  // A new version keeps the latest one's type and references.
  const request = () => ({ schema: schema.value, schemaType: typeOf(latest), references: latest.references || [] });
  const verdict = h('div', { id: 'verdict', 'aria-live': 'polite' });
  const errSlot = h('div');
  const check = h('button', { type: 'button', class: 'secondary', id: 'check-compat' }, 'Check compatibility');
  const submit = h('button', { type: 'submit', id: 'register-version' }, 'Check and register');
  schema.addEventListener('input', () => verdict.replaceChildren());

  // runCheck shows the verdict of the registry's own check against the
  // latest version under the subject's level; it returns whether it passed.
  async function runCheck(button) {
    const ans = await busy(button, 'Checking…', () => post(`/compatibility/subjects/${enc(subject)}/versions/latest?verbose=true`, request(), { type: SR }));
    let changes = null;
    try { changes = await post(`/subjects/${enc(subject)}/diff`, request(), { type: SR, quiet: true }); } catch { /* the verdict stands on its own */ }
    fill(verdict, h('div', { class: `verdict ${ans.is_compatible ? 'ok' : 'bad'}`, role: ans.is_compatible ? 'status' : 'alert' },
      h('strong', {}, ans.is_compatible
        ? `Compatible with version ${latest.version} under ${level.level}.`
        : `Incompatible with version ${latest.version} under ${level.level}.`),
      reasons(ans.messages || [])),
    changes && (changes.changes || []).length ? changesList(changes) : null);
    verdict.scrollIntoView({ block: 'nearest' });
    return ans.is_compatible;
  }
  check.addEventListener('click', async () => {
    errSlot.replaceChildren();
    try { await runCheck(check); } catch (e) { showError(errSlot, e, 'The registry could not check the schema'); }
  });
  function reasons(messages) {
    const lines = messages.map(reasonText).filter(Boolean);
    if (!messages.length) return null;
    return [
      lines.length ? h('ul', { class: 'reasons' }, lines.map((m) => h('li', {}, m))) : null,
      h('details', {}, h('summary', {}, 'The registry’s full answer'), h('ul', {}, messages.map((m) => h('li', {}, h('code', {}, m))))),
    ];
  }
  return h('section', { 'aria-labelledby': 'register-title' }, h('h2', { id: 'register-title' }, 'Register a new version'),
    h('form', {
      class: 'panel',
      onSubmit: async (ev) => {
        ev.preventDefault();
        errSlot.replaceChildren();
        try {
          if (!(await runCheck(submit))) {
            verdict.append(h('p', { class: 'bad', id: 'not-registered' }, 'Not registered: fix the changes above, or change the compatibility level.'));
            return;
          }
          const ans = await busy(submit, 'Registering…', () => post(`/subjects/${enc(subject)}/versions`, request(), { type: SR }));
          flash(`Registered under ${subject}: schema id ${ans.id}.`);
          window.dispatchEvent(new HashChangeEvent('hashchange'));
        } catch (e) {
          showError(errSlot, e, e instanceof ApiError && e.status === 409 ? 'The registry refused the version' : 'Could not register');
        }
      },
    },
    field('Candidate schema (starts as the latest version)', schema),
    verdict, errSlot,
    h('div', { class: 'actions' }, check, submit)));
}

