// The page's router: the hash (#/topics/orders) picks a view module, which
// renders into #view and may return a cleanup function (timers, long
// polls) that runs when the person navigates away.

import { onBusy, onSignedOut } from './api.js';
import * as login from './login.js';
import { errorBox, fill, h, loading } from './ui.js';
import * as overview from './overview.js';
import * as cluster from './cluster.js';
import * as moves from './moves.js';
import * as topics from './topics.js';
import * as messages from './messages.js';
import * as search from './search.js';
import * as groups from './groups.js';
import * as schemas from './schemas.js';
import * as acls from './acls.js';
import * as transactions from './transactions.js';

// Each route: a pattern over the path segments and the view it renders;
// fixed: the second segment is part of the route, not a name for the title.
const routes = [
  { nav: 'overview', match: (s) => s.length === 0, view: overview.render, title: 'Overview' },
  { nav: 'cluster', match: (s) => s[0] === 'cluster' && s.length === 1, view: cluster.render, title: 'Cluster' },
  { nav: 'cluster', match: (s) => s[0] === 'cluster' && s[1] === 'move' && s.length === 2, view: moves.renderMove, title: 'Move partitions', fixed: true },
  { nav: 'topics', match: (s) => s[0] === 'topics' && s.length === 1, view: topics.renderList, title: 'Topics' },
  { nav: 'topics', match: (s) => s[0] === 'topics' && s.length === 2, view: topics.renderDetail, title: 'Topic' },
  { nav: 'messages', match: (s) => s[0] === 'messages' && s.length <= 2, view: messages.render, title: 'Messages' },
  { nav: 'search', match: (s) => s[0] === 'search' && s.length <= 2, view: search.render, title: 'Search messages' },
  { nav: 'groups', match: (s) => s[0] === 'groups' && s.length === 1, view: groups.renderList, title: 'Consumer groups' },
  { nav: 'groups', match: (s) => s[0] === 'groups' && s.length === 2, view: groups.renderDetail, title: 'Consumer group' },
  { nav: 'schemas', match: (s) => s[0] === 'schemas' && s.length === 1, view: schemas.renderList, title: 'Schema registry' },
  { nav: 'schemas', match: (s) => s[0] === 'schemas' && s.length === 2, view: schemas.renderSubject, title: 'Subject' },
  { nav: 'transactions', match: (s) => s[0] === 'transactions' && s.length === 1, view: transactions.render, title: 'Transactions' },
  { nav: 'acls', match: (s) => s[0] === 'acls' && s.length === 1, view: acls.render, title: 'Access control' },
];

/** parseHash splits "#/messages/orders?partition=1" into segments and params. */
export function parseHash(hash = location.hash) {
  const raw = hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { segments, params: new URLSearchParams(query) };
}

let cleanup = null;
let generation = 0;

async function navigate() {
  const gen = ++generation;
  if (cleanup) { try { cleanup(); } catch { /* a view's cleanup must not block navigation */ } cleanup = null; }
  const { segments, params } = parseHash();
  const route = routes.find((r) => r.match(segments));
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (route && a.dataset.nav === route.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const view = document.getElementById('view');
  const root = h('div', { class: 'view' });
  fill(view, root);
  if (!route) {
    fill(root, h('h1', {}, 'Not found'), h('p', {}, 'There is no page at this address. ', h('a', { href: '#/' }, 'Go to the overview.')));
    return;
  }
  document.title = `${segments[1] && !route.fixed ? `${segments[1]} · ` : ''}${route.title} · ferry`;
  const placeholder = loading();
  root.append(placeholder);
  // The view's own frame (heading, buttons) takes the placeholder's place
  // as soon as it appears: left above it until the data arrives, the
  // placeholder would then shift the frame up under the user's pointer.
  const frameShown = new MutationObserver(() => {
    if (root.childElementCount > 1) { placeholder.remove(); frameShown.disconnect(); }
  });
  frameShown.observe(root, { childList: true });
  const ctx = { segments, params, isCurrent: () => gen === generation };
  try {
    const done = await route.view(root, ctx);
    frameShown.disconnect();
    placeholder.remove();
    if (gen !== generation) { if (typeof done === 'function') done(); return; }
    if (typeof done === 'function') cleanup = done;
  } catch (e) {
    frameShown.disconnect();
    if (gen !== generation) return;
    fill(root, h('h1', {}, route.title), errorBox(e, 'Could not load this page'));
  }
  if (gen === generation && !document.activeElement?.closest('#view')) {
    // Move focus to the new heading so keyboard and screen-reader users land on the view.
    const h1 = root.querySelector('h1');
    if (h1) { h1.tabIndex = -1; h1.focus({ preventScroll: true }); }
  }
}

// A slow call shows the bar at the top and a status line after 250 ms.
let busyTimer;
onBusy((n) => {
  const bar = document.getElementById('progress');
  const status = document.getElementById('busy');
  clearTimeout(busyTimer);
  if (n > 0) {
    busyTimer = setTimeout(() => { bar.hidden = false; status.textContent = 'Working…'; document.body.setAttribute('aria-busy', 'true'); }, 250);
  } else {
    bar.hidden = true;
    status.textContent = '';
    document.body.removeAttribute('aria-busy');
  }
});

// Signed in as: the principal and a logout button in the sidebar, when
// the gateway asks for credentials.
function showSignedIn(who) {
  const slot = document.getElementById('session');
  if (!who || !who.authenticated) { slot.replaceChildren(); return; }
  fill(slot, h('span', { class: 'principal' }, who.principal),
    h('button', { type: 'button', class: 'link', onclick: () => login.logout(showLogin) }, 'Log out'));
}

let signedOut = false;
function showLogin(reason) {
  if (signedOut) return;
  signedOut = true;
  ++generation; // views still loading drop their results
  if (cleanup) { try { cleanup(); } catch { /* as in navigate */ } cleanup = null; }
  document.getElementById('session').replaceChildren();
  document.title = 'Log in · ferry';
  login.renderLogin(document.getElementById('view'), { reason, onDone: (who) => {
    signedOut = false;
    showSignedIn(who);
    navigate();
  } });
}
onSignedOut((msg) => showLogin(`Log in again: ${msg}`));

async function start() {
  let who;
  try { who = await login.whoami(); } catch { who = { authenticated: false }; }
  if (who === null) { showLogin(); return; }
  showSignedIn(who);
  navigate();
}

window.addEventListener('hashchange', () => { if (!signedOut) navigate(); });
start();
