// The one way the page talks to ferry: fetch on the same origin, JSON in
// and out, every failure turned into an ApiError whose message is the
// server's own words ({"error_code","message"}) or says what went wrong.

let pending = 0;
const busyListeners = new Set();
const signedOutListeners = new Set();

/**
 * onSignedOut(fn) calls fn(message) when ferry answers 401: the page needs
 * a login (or the session ended).
 */
export function onSignedOut(fn) { signedOutListeners.add(fn); }

/** onBusy(fn) calls fn(count) whenever the number of calls in flight changes. */
export function onBusy(fn) { busyListeners.add(fn); }

function track(delta) {
  pending += delta;
  for (const fn of busyListeners) fn(pending);
}

export class ApiError extends Error {
  constructor(status, code, message, request) {
    super(message);
    this.status = status;   // HTTP status, 0 when the server was not reached
    this.code = code;       // ferry's error_code, 0 when there was none
    this.request = request; // "POST /topics"
  }
  /** describe is the sentence shown to the person. */
  describe() {
    if (this.status === 0) return this.message;
    const code = this.code ? `, error ${this.code}` : '';
    return `${this.message} (HTTP ${this.status}${code}, ${this.request})`;
  }
}

/**
 * api performs one call. opts: body (object → JSON, string as is), type
 * (Content-Type), accept, signal (AbortSignal), quiet (no progress bar, for
 * long polls and background refreshes), raw (return the text unparsed),
 * noSignOut (a 401 is the caller's, not a signal to show the login).
 */
export async function api(method, path, opts = {}) {
  // X-Requested-With: a 401 then carries no Basic challenge, which would
  // open the browser's own password dialog over the page's login screen.
  const init = { method, headers: { 'X-Requested-With': 'ferry-ui' }, signal: opts.signal, credentials: 'same-origin' };
  if (opts.body !== undefined) {
    init.body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    init.headers['Content-Type'] = opts.type || 'application/json';
  }
  if (opts.accept) init.headers['Accept'] = opts.accept;
  const request = `${method} ${path}`;
  if (!opts.quiet) track(1);
  try {
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, 0, `Could not reach ferry for ${request}: ${e.message}. Is the server running?`, request);
    }
    const text = await res.text();
    if (opts.raw && res.ok) return text;
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch { data = text; }
    }
    if (!res.ok) {
      let msg = res.statusText || 'request failed';
      let code = 0;
      if (data && typeof data === 'object' && data.message) {
        msg = data.message;
        code = data.error_code || 0;
      } else if (typeof data === 'string' && data.trim()) {
        msg = data.trim();
      }
      if (res.status === 401 && !opts.noSignOut) {
        for (const fn of signedOutListeners) fn(msg);
      }
      throw new ApiError(res.status, code, msg, request);
    }
    return data;
  } finally {
    if (!opts.quiet) track(-1);
  }
}

export const get = (path, opts) => api('GET', path, opts);
export const post = (path, body, opts = {}) => api('POST', path, { ...opts, body });
export const put = (path, body, opts = {}) => api('PUT', path, { ...opts, body });
export const del = (path, opts) => api('DELETE', path, opts);

/** enc escapes one path segment. */
export const enc = encodeURIComponent;

/** mapLimit runs fn over items with at most limit calls at once, keeping order. */
export async function mapLimit(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const i = next++;
      try { out[i] = { ok: true, value: await fn(items[i], i) }; }
      catch (e) { out[i] = { ok: false, error: e }; }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
