// What the signed-in principal may do, asked of the server's own
// authorizer (GET /auth/permissions), so the page disables actions that
// would be refused instead of offering them. With ACLs off every answer
// is true; when the question cannot be asked the page offers the action
// and the server's 403 says why.

import { get, enc } from './api.js';

/**
 * can(checks) resolves to a map check → boolean for checks written
 * OPERATION:RESOURCE_TYPE:NAME (DELETE:TOPIC:orders).
 */
export async function can(checks) {
  const unique = [...new Set(checks)];
  const out = {};
  for (let i = 0; i < unique.length; i += 200) {
    const batch = unique.slice(i, i + 200);
    const query = batch.map((c) => `check=${enc(c)}`).join('&');
    try {
      Object.assign(out, await get(`/auth/permissions?${query}`, { quiet: true }));
    } catch {
      for (const c of batch) out[c] = true;
    }
  }
  return out;
}

/** disableUnless disables el with a reason when allowed is false. */
export function disableUnless(el, allowed, what) {
  if (allowed !== false) return el;
  el.disabled = true;
  el.setAttribute('aria-disabled', 'true');
  el.title = `You may not ${what}.`;
  if (el.tagName === 'A') {
    el.removeAttribute('href');
    el.classList.add('disabled');
  }
  return el;
}
