// The login screen, shown when ferry answers 401: user name and password
// go to POST /auth/login, which sets an HttpOnly session cookie; the page
// never stores the password (the field is cleared at once) and never sees
// the cookie. Logout asks the server to clear it.

import { get, post, ApiError } from './api.js';
import { fill, h, errorBox } from './ui.js';

/** whoami is {principal, authenticated}; null when the page must log in. */
export async function whoami() {
  try {
    return await get('/auth/whoami', { quiet: true, noSignOut: true });
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

/**
 * renderLogin fills root with the form; onDone runs after a login that
 * worked. reason, when given, says why (the session ended).
 */
export function renderLogin(root, { reason, onDone }) {
  const user = h('input', { id: 'login-user', name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const pass = h('input', { id: 'login-password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const slot = h('div', { class: 'login-error' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Log in');
  const form = h('form', { class: 'login', 'aria-labelledby': 'login-title', novalidate: true,
    onsubmit: async (ev) => {
      ev.preventDefault();
      slot.replaceChildren();
      if (!user.value || !pass.value) {
        fill(slot, errorBox(new Error('Enter your user name and password.'), 'Cannot log in'));
        return;
      }
      const body = { username: user.value, password: pass.value };
      pass.value = ''; // never kept by the page
      button.disabled = true;
      try {
        const who = await post('/auth/login', body, { noSignOut: true });
        onDone(who);
      } catch (e) {
        fill(slot, errorBox(e, 'Cannot log in'));
        pass.focus();
      } finally {
        button.disabled = false;
      }
    } },
    h('h1', { id: 'login-title' }, 'Log in to ferry'),
    reason ? h('p', { class: 'hint' }, reason) : null,
    h('label', { for: 'login-user' }, 'User name'), user,
    h('label', { for: 'login-password' }, 'Password'), pass,
    button, slot);
  fill(root, form);
  user.focus();
}

/** logout ends the session and shows the login screen. */
export async function logout(show) {
  try { await post('/auth/logout', undefined, { noSignOut: true }); } catch { /* the cookie is cleared either way */ }
  show('You are logged out.');
}
