import { h } from './ui.js';
export async function renderList(root) { root.append(h('h1', {}, 'Schema registry')); }
export async function renderSubject(root) { root.append(h('h1', {}, 'Subject')); }
