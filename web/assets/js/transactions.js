// Transactions: every coordinator's transactional ids (state, producer,
// age, the partitions an open one has written to) from
// GET /admin/transactions, and an operator's abort of one partition's
// open transaction through POST /admin/transactions/abort, as
// kafka-transactions.sh abort does it (kafka-transactions.sh find-hanging
// finds hanging ones on partitions). The principal needs DESCRIBE on the
// cluster to see them and ALTER to abort.

import { enc, get, post } from './api.js';
import { can, disableUnless } from './perms.js';
import { busy, confirmAction, fill, flash, fmtNum, h, link, num, showError, table } from './ui.js';

/** fmtAge is a duration in ms as people read it. */
export function fmtAge(ms) {
  if (ms == null || ms < 0) return '—';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export async function render(root) {
  const listSlot = h('div');
  const refresh = h('button', { type: 'button', class: 'secondary', id: 'txn-refresh' }, 'Refresh');
  root.append(h('div', { class: 'view-head' }, h('h1', {}, 'Transactions'), h('div', { class: 'actions' }, refresh)),
    h('p', { class: 'muted' }, 'Transactional producers as their coordinators hold them. An open transaction holds back read_committed readers of its partitions at its first offset (the last stable offset) until it commits or aborts.'),
    listSlot);
  const alter = (await can(['ALTER:CLUSTER:kafka-cluster']))['ALTER:CLUSTER:kafka-cluster'];

  const abortButton = (p, who) => disableUnless(h('button', {
    type: 'button', class: 'danger small', 'data-abort': `${p.topic}-${p.partition}`,
    'aria-label': `Abort ${who} on ${p.topic} partition ${p.partition}`,
    disabled: p.start_offset < 0, onClick: () => abort(p, who),
  }, 'Abort'), alter, 'abort transactions');

  const partitionsCell = (t) => {
    if (!t.partitions.length) return h('span', { class: 'muted' }, 'none');
    return h('ul', { class: 'plain' }, t.partitions.map((p) => h('li', { 'data-partition': `${p.topic}-${p.partition}` },
      link(`#/topics/${enc(p.topic)}`, p.topic), ` / ${p.partition}`,
      p.start_offset >= 0 ? h('span', { class: 'muted' }, ` from offset ${fmtNum(p.start_offset)} `) : ' ',
      abortButton(p, t.transactional_id))));
  };

  const draw = (view) => {
    const rows = view.transactions.map((t) => h('tr', { 'data-txn': t.transactional_id },
      h('td', {}, h('code', {}, t.transactional_id)),
      h('td', {}, h('span', { class: `badge ${t.state === 'Ongoing' ? 'accent' : ''}` }, t.state)),
      h('td', { class: 'num' }, `${t.producer_id} / ${t.producer_epoch}`),
      h('td', { class: 'num' }, t.coordinator),
      h('td', { class: 'num txn-age' }, t.start_timestamp > 0 ? fmtAge(t.age_ms) : '—'),
      h('td', { class: 'num' }, fmtAge(t.timeout_ms)),
      h('td', {}, partitionsCell(t))));
    fill(listSlot, table(['Transactional id', 'State', num('Producer / epoch'), num('Coordinator'), num('Age'), num('Timeout'), 'Partitions'],
      rows, { empty: 'No transactional producers.', class: 'transactions' }));
  };

  const reload = async () => {
    try {
      draw(await get('/admin/transactions'));
    } catch (e) {
      showError(listSlot, e, 'Could not list the transactions');
    }
  };

  const abort = async (p, who) => {
    const done = await confirmAction({
      title: 'Abort this transaction?',
      body: `An abort marker is written for ${who} on ${p.topic} partition ${p.partition} (its transaction from offset ${p.start_offset}): read_committed readers skip its records. A producer still running fails its transaction.`,
      confirmLabel: 'Abort', danger: true,
      action: () => post('/admin/transactions/abort', { topic: p.topic, partition: p.partition, start_offset: p.start_offset }),
    });
    if (done) {
      flash(`Aborted the transaction of ${who} on ${p.topic}/${p.partition}.`);
      await reload();
    }
  };

  refresh.addEventListener('click', () => busy(refresh, 'Refreshing…', reload));
  await reload();
}
