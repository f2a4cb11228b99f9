import { h } from './ui.js';
export async function renderList(root) { root.append(h('h1', {}, 'Consumer groups')); }
export async function renderDetail(root) { root.append(h('h1', {}, 'Consumer group')); }
