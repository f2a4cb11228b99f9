// Small DOM helpers: build elements without innerHTML (every value from
// the server goes in as text), show errors and notices, format numbers.

import { ApiError } from './api.js';

/**
 * h(tag, attrs, ...children) builds an element. attrs: class, text, on<Event>
 * handlers, boolean/property keys (value, checked, disabled, hidden,
 * selected), anything else as an attribute. Children: nodes, strings,
 * numbers, arrays, or null/false (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (['value', 'checked', 'disabled', 'hidden', 'selected', 'open', 'required'].includes(k)) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** clear removes every child of el and appends the given ones. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** errorBox is the visible sentence for an error, role=alert so it is read out. */
export function errorBox(err, prefix) {
  const text = err instanceof ApiError ? err.describe() : (err && err.message) || String(err);
  return h('div', { class: 'error', role: 'alert' },
    h('strong', {}, prefix ? `${prefix}: ` : 'Error: '), text);
}

/** showError puts an errorBox into a slot (replacing what was there). */
export function showError(slot, err, prefix) {
  fill(slot, errorBox(err, prefix));
}

let flashTimer;
/** flash shows a short notice at the top of the page. */
export function flash(message, kind = 'ok') {
  const box = document.getElementById('flash');
  fill(box, h('div', { class: `notice ${kind}` }, message));
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => box.replaceChildren(), 6000);
}

/** field wraps a labelled control with a hint/error line under it. */
export function field(label, control, hint) {
  const id = control.id || (control.id = uid('f'));
  const msg = h('div', { class: 'field-msg', id: `${id}-msg`, 'aria-live': 'polite', 'data-hint': hint || '' }, hint || '');
  control.setAttribute('aria-describedby', msg.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, msg);
}

/** setInvalid marks a field's control invalid with a message, or clears it. */
export function setInvalid(control, message) {
  const msg = document.getElementById(`${control.id}-msg`);
  if (message) {
    control.setAttribute('aria-invalid', 'true');
    if (msg) { msg.textContent = message; msg.classList.add('bad'); }
  } else {
    control.removeAttribute('aria-invalid');
    if (msg) { msg.textContent = msg.dataset.hint || ''; msg.classList.remove('bad'); }
  }
}

let counter = 0;
export function uid(prefix = 'id') { return `${prefix}-${++counter}`; }

/** busy disables a button while fn runs, relabelled, and rethrows. */
export async function busy(button, label, fn) {
  const old = button.textContent;
  button.disabled = true;
  button.textContent = label;
  button.setAttribute('aria-busy', 'true');
  try { return await fn(); }
  finally {
    button.disabled = false;
    button.textContent = old;
    button.removeAttribute('aria-busy');
  }
}

export function fmtBytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return 'n/a';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export function fmtNum(n) {
  return n === null || n === undefined ? 'n/a' : Number(n).toLocaleString('en-US');
}

export function fmtTime(ms) {
  if (ms === null || ms === undefined || ms < 0) return '—';
  const d = new Date(ms);
  return `${d.toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

/** num marks a column heading as numeric (right-aligned like its cells). */
export const num = (label) => ({ num: label });

/** table builds a table from column headings and rows of cells. */
export function table(headings, rows, opts = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: opts.class || '' },
      opts.caption ? h('caption', {}, opts.caption) : null,
      h('thead', {}, h('tr', {}, headings.map((c) => (c && c.num
        ? h('th', { scope: 'col', class: 'num' }, c.num)
        : h('th', { scope: 'col' }, c))))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headings.length, class: 'empty' }, opts.empty || 'Nothing here yet.')))));
}

/**
 * confirmTyped opens the dialog asking to type `expected` before the
 * destructive action runs; action's errors are shown in the dialog.
 * Resolves true when the action succeeded, false when cancelled.
 */
export function confirmTyped({ title, body, expected, confirmLabel, action }) {
  const input = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', id: uid('confirm') });
  return runConfirm({
    title, body, confirmLabel, action, danger: true,
    extra: field(h('span', {}, 'Type ', h('code', {}, expected), ' to confirm'), input),
    ready: () => input.value === expected,
    watch: (update) => input.addEventListener('input', update),
    focus: input,
  });
}

/**
 * confirmAction opens the dialog asking "are you sure" before action runs
 * (danger: styled as destructive; dismissLabel names the way out, Cancel
 * by default); action's errors are shown in the dialog. Resolves true
 * when the action succeeded, false when cancelled.
 */
export function confirmAction({ title, body, confirmLabel, dismissLabel, danger = false, action }) {
  return runConfirm({ title, body, confirmLabel, dismissLabel, action, danger });
}

function runConfirm({
  title, body, confirmLabel, dismissLabel = 'Cancel', action, danger, extra = null, ready = () => true, watch = () => {}, focus = null,
}) {
  const dialog = document.getElementById('dialog');
  return new Promise((resolve) => {
    const errSlot = h('div');
    const ok = h('button', { type: 'submit', class: danger ? 'danger' : '', disabled: !ready() }, confirmLabel);
    const cancel = h('button', { type: 'button', class: 'secondary', onClick: () => dialog.close('cancel') }, dismissLabel);
    watch(() => { ok.disabled = !ready(); });
    const form = h('form', {
      method: 'dialog',
      onSubmit: async (ev) => {
        ev.preventDefault();
        if (!ready()) return;
        errSlot.replaceChildren();
        try {
          await busy(ok, 'Working…', action);
          dialog.close('done');
        } catch (e) {
          showError(errSlot, e);
          ok.disabled = !ready();
        }
      },
    },
    h('h2', { id: 'dialog-title' }, title),
    h('p', {}, body),
    extra,
    errSlot,
    h('div', { class: 'actions' }, cancel, ok));
    fill(dialog, form);
    dialog.onclose = () => resolve(dialog.returnValue === 'done');
    dialog.returnValue = '';
    dialog.showModal();
    // A destructive action is not one Enter away: focus starts on Cancel.
    (focus || (danger ? cancel : ok)).focus();
  });
}

/** link is an anchor to a hash route. */
export function link(href, text, attrs = {}) {
  return h('a', { href, ...attrs }, text);
}

/** loading is the placeholder shown while a view's first calls run. */
export function loading(what = 'Loading') {
  return h('p', { class: 'loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ` ${what}…`);
}
