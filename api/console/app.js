// The operator console: one page, hash routes, plain ES modules (no framework, no build step).
//   #/calls?…filters   #/calls/<callId>   #/agents   #/agents/<uuid>   #/agents/<uuid>/tests[/<testId>[/runs/<runId>]]
//   #/campaigns   #/campaigns/<id>   #/numbers
import { KEY_STORE, apiKey, h } from './util.js';
import { renderCalls } from './calls.js';
import { renderCall } from './call.js';
import { renderAgents, renderAgent } from './agents.js';
import { renderRun, renderTest, renderTests } from './tests.js';
import { renderCampaigns, renderCampaign } from './campaigns.js';
import { renderNumbers } from './numbers.js';

const view = document.getElementById('view');
const message = document.getElementById('message');
const keyInput = document.getElementById('api-key');

/** read by the browser tests: the route being shown and whether it finished loading */
window.consolePage = { route: null, loaded: false };

export function showMessage(text) {
  message.textContent = text || '';
  message.hidden = !text;
}

let cleanup = null;
let generation = 0;

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/calls';
  const [path, qs] = raw.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(qs || '') };
}

async function route() {
  if (cleanup) { try { cleanup(); } catch { /* page gone */ } }
  cleanup = null;
  const gen = ++generation;
  const { parts, query } = parseHash();
  const [page, id, sub, subId, leaf, leafId] = parts;
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.page === page);
  document.body.dataset.page = sub === 'tests' ? (leafId ? 'test-run' : subId ? 'test' : 'tests') : id ? `${page}-detail` : page || 'calls';
  window.consolePage.route = parts.join('/');
  window.consolePage.loaded = false;
  showMessage('');
  view.replaceChildren();
  if (!apiKey()) {
    view.append(h('section', { class: 'empty' }, h('h2', null, 'Enter an API key'), h('p', null, 'The console reads this service\'s REST API with an organization\'s API key. Paste one above and press "Use key".')));
    window.consolePage.loaded = true;
    return;
  }
  const ctx = {
    view, query, showMessage,
    /** false once the user navigated elsewhere: late answers must not draw over the next page */
    current: () => gen === generation,
    onLeave: (fn) => { cleanup = fn; },
    setQuery: (q) => { location.hash = `#/${parts.join('/')}${q.toString() ? `?${q}` : ''}`; },
  };
  try {
    if (page === 'calls' && id) await renderCall(ctx, id);
    else if (page === 'agents' && id && sub === 'tests' && subId && leaf === 'runs' && leafId) await renderRun(ctx, id, subId, leafId);
    else if (page === 'agents' && id && sub === 'tests' && subId) await renderTest(ctx, id, subId);
    else if (page === 'agents' && id && sub === 'tests') await renderTests(ctx, id);
    else if (page === 'agents' && id) await renderAgent(ctx, id);
    else if (page === 'agents') await renderAgents(ctx);
    else if (page === 'campaigns' && id) await renderCampaign(ctx, id);
    else if (page === 'campaigns') await renderCampaigns(ctx);
    else if (page === 'numbers') await renderNumbers(ctx);
    else await renderCalls(ctx);
  } catch (err) {
    if (ctx.current()) showMessage(`The page failed: ${err && err.message ? err.message : err}`);
  }
  if (ctx.current()) window.consolePage.loaded = true;
}

document.getElementById('key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const k = keyInput.value.trim();
  if (!k) return;
  localStorage.setItem(KEY_STORE, k);
  keyInput.value = '';
  keyInput.placeholder = 'key saved in this browser';
  void route();
});
document.getElementById('forget-key').addEventListener('click', () => {
  localStorage.removeItem(KEY_STORE);
  keyInput.placeholder = 'API key (vak_…)';
  void route();
});
window.addEventListener('hashchange', () => void route());
if (apiKey()) keyInput.placeholder = 'key saved in this browser';
void route();
