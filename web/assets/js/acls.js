// Access control: the ACL bindings the authorizer decides every surface
// with (Kafka listener, HTTP, registry, this page), listed, added and
// removed through /admin/acls. The principal needs DESCRIBE on the
// cluster to see them and ALTER to change them; without ALTER the form
// and the remove buttons are disabled.

import { ApiError, del, get, post } from './api.js';
import { can, disableUnless } from './perms.js';
import { busy, confirmAction, errorBox, field, fill, flash, h, showError, table } from './ui.js';

const OPERATIONS = ['ALL', 'READ', 'WRITE', 'CREATE', 'DELETE', 'ALTER', 'DESCRIBE', 'CLUSTER_ACTION',
  'DESCRIBE_CONFIGS', 'ALTER_CONFIGS', 'IDEMPOTENT_WRITE'];
const RESOURCES = ['TOPIC', 'GROUP', 'CLUSTER', 'TRANSACTIONAL_ID', 'SUBJECT'];

const select = (id, options, value) => h('select', { id },
  options.map((o) => h('option', { value: o, selected: o === value }, o)));

/** bindingText is one binding in words, for the confirmation and notices. */
export function bindingText(b) {
  const pattern = b.pattern_type === 'PREFIXED' ? ` (names starting “${b.resource_name}”)` : '';
  return `${b.permission} ${b.principal} ${b.operation} on ${b.resource_type} ${b.resource_name}${pattern} from ${b.host}`;
}

export async function render(root) {
  const listSlot = h('div');
  const formSlot = h('div');
  root.append(h('div', { class: 'view-head' }, h('h1', {}, 'Access control')),
    h('p', { class: 'muted' }, 'ACL bindings, as Kafka models them: deny wins over allow; super users are not listed.'),
    formSlot, listSlot);
  const alter = (await can(['ALTER:CLUSTER:kafka-cluster']))['ALTER:CLUSTER:kafka-cluster'];

  const reload = async () => {
    let bindings;
    try {
      bindings = (await get('/admin/acls')).acls || [];
    } catch (e) {
      if (e instanceof ApiError && e.status === 501) {
        fill(listSlot, h('p', {}, 'ACLs are off on this node: everything is allowed (no authorizer.class.name).'));
        formSlot.replaceChildren();
        return;
      }
      showError(listSlot, e, 'Could not list the ACLs');
      return;
    }
    const rows = bindings.map((b) => h('tr', { 'data-acl': bindingText(b) },
      h('td', {}, b.principal), h('td', {}, b.permission), h('td', {}, b.operation),
      h('td', {}, `${b.resource_type}:${b.resource_name}`), h('td', {}, b.pattern_type), h('td', {}, b.host),
      h('td', { class: 'row-actions' }, disableUnless(h('button', { type: 'button', class: 'danger small',
        'aria-label': `Remove ${bindingText(b)}`, onClick: () => remove(b) }, 'Remove'), alter, 'change ACLs'))));
    fill(listSlot, table(['Principal', 'Permission', 'Operation', 'Resource', 'Pattern', 'Host',
      h('span', { class: 'sr-only' }, 'Actions')], rows, { empty: 'No ACL bindings.', class: 'acls' }));
  };

  const remove = async (b) => {
    const removed = await confirmAction({
      title: 'Remove this ACL?', body: bindingText(b), confirmLabel: 'Remove', danger: true,
      action: () => del('/admin/acls', { body: { resource_type: b.resource_type, resource_name: b.resource_name,
        pattern_type: b.pattern_type, principal: b.principal, host: b.host, operation: b.operation, permission: b.permission } }),
    });
    if (removed) {
      flash(`Removed: ${bindingText(b)}.`);
      await reload();
    }
  };

  const principal = h('input', { id: 'acl-principal', value: 'User:', autocomplete: 'off', required: true });
  const permission = select('acl-permission', ['ALLOW', 'DENY'], 'ALLOW');
  const operation = select('acl-operation', OPERATIONS, 'READ');
  const resource = select('acl-resource-type', RESOURCES, 'TOPIC');
  const name = h('input', { id: 'acl-resource-name', autocomplete: 'off', required: true });
  const pattern = select('acl-pattern', ['LITERAL', 'PREFIXED'], 'LITERAL');
  const host = h('input', { id: 'acl-host', value: '*', autocomplete: 'off' });
  resource.addEventListener('change', () => { if (resource.value === 'CLUSTER') name.value = 'kafka-cluster'; });
  const errSlot = h('div');
  const add = h('button', { type: 'submit', id: 'acl-add' }, 'Add ACL');
  const form = h('form', { class: 'acl-form', onSubmit: async (ev) => {
    ev.preventDefault();
    errSlot.replaceChildren();
    const b = { principal: principal.value.trim(), permission: permission.value, operation: operation.value,
      resource_type: resource.value, resource_name: name.value.trim(), pattern_type: pattern.value, host: host.value.trim() || '*' };
    if (!/^[^:]+:.+$/.test(b.principal) || !b.resource_name) {
      fill(errSlot, errorBox(new Error('Give a principal (User:name) and a resource name.'), 'Cannot add'));
      return;
    }
    try {
      await busy(add, 'Adding…', () => post('/admin/acls', { acls: [b] }));
      flash(`Added: ${bindingText(b)}.`);
      name.value = '';
      await reload();
    } catch (e) {
      showError(errSlot, e, 'Cannot add');
    }
  } },
  h('div', { class: 'acl-fields' },
    field('Principal', principal), field('Permission', permission), field('Operation', operation),
    field('Resource type', resource), field('Resource name', name), field('Pattern', pattern), field('Host', host)),
  disableUnless(add, alter, 'change ACLs'), errSlot);
  if (alter === false) for (const el of form.querySelectorAll('input, select')) el.disabled = true;
  fill(formSlot, form);
  await reload();
}
