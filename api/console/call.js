// Call: the row's outcome, its post-call analysis (verdict and structured data), the recording as a waveform with
// caller and agent apart, the transcript placed on the call's timeline (click to seek), tool calls, usage and
// cost, webhook deliveries, and each turn's latency
// (end of speech → STT final → LLM first token → TTS first audio → first audio frame sent) as bars.
//
// Caller and agent apart: the stored recording is one mixed mono track (media/pipeline/recorder.ts mixes both
// sides onto one timeline). Agent speech start times are exact (an assistant entry's timestamp is set when its
// first audio frame goes out, and logs.timeline_started_at is the recording's first sample), so an agent stretch
// runs from that instant until its audio falls silent; every other voiced stretch is the caller. A two-channel
// recording (caller left, agent right) is drawn from its channels directly.
import { api, badge, detailText, dl, fmtClock, fmtDate, fmtSeconds, fmtUsd, h, liveBadge, section, svg, table } from './util.js';

const LIVE = new Set(['pending', 'active']);
const MAX_DRAWN_BYTES = 120 * 1024 * 1024;

export async function renderCall(ctx, callId) {
  const r = await api('GET', `/calls/${encodeURIComponent(callId)}`);
  if (!ctx.current()) return;
  if (!r.ok) {
    ctx.view.append(h('section', null, h('h1', null, 'Call'), h('p', { class: 'message', role: 'alert' }, detailText(r.status, r.data))));
    return;
  }
  let row = r.data;
  const deliveries = await api('GET', `/calls/${encodeURIComponent(callId)}/webhook-deliveries?per_page=100`);
  if (!ctx.current()) return;
  draw(ctx, row, deliveries);
  // a live call, or one whose post-call processing (recording, cost) has not finished: follow it
  let timer = null;
  const recent = (x) => x.endedAt && Date.now() - Date.parse(x.endedAt) < 480_000;
  const waiting = (x) => LIVE.has(x.status) || (recent(x) && ((x.connectionStatus === 'completed' && !x.recordingUrl) || (x.configSnapshot?.analysis && !x.analysis)));
  const poll = async () => {
    const again = await api('GET', `/calls/${encodeURIComponent(callId)}`);
    if (!ctx.current() || !again.ok) return;
    const changed = again.data.updatedAt !== row.updatedAt;
    row = again.data;
    if (changed) {
      const d = await api('GET', `/calls/${encodeURIComponent(callId)}/webhook-deliveries?per_page=100`);
      if (!ctx.current()) return;
      ctx.view.replaceChildren();
      draw(ctx, row, d);
    }
    if (waiting(row)) timer = setTimeout(() => void poll(), 3000);
  };
  if (waiting(row)) timer = setTimeout(() => void poll(), 3000);
  ctx.onLeave(() => clearTimeout(timer));
}

function draw(ctx, row, deliveries) {
  const logs = row.logs || {};
  const t0 = Date.parse(logs.timeline_started_at || row.startedAt || row.createdAt);
  const transcript = Array.isArray(row.transcript) ? row.transcript : [];
  const entries = transcript.map((e, i) => ({ ...e, i, at: typeof e.t_ms === 'number' ? e.t_ms / 1000 : e.timestamp ? (Date.parse(e.timestamp) - t0) / 1000 : null }));

  ctx.view.append(h('section', null,
    h('p', null, h('a', { href: '#/calls' }, '← Calls')),
    h('h1', null, 'Call ', h('span', { class: 'mono' }, row.callId), ' ', badge(row.status, 'status'), LIVE.has(row.status) ? liveBadge() : null),
    dl([
      ['Connection', badge(row.connectionStatus, 'connection')], ['Ended reason', badge(row.endedReason, 'ended')],
      ['Agent', row.agentId ? h('a', { href: `#/agents/${row.agentId}` }, row.agentName || row.agentId) : row.agentName || '—'],
      ['Transport', row.transport], ['Source', row.callSource],
      ['Numbers', [row.platformNumber, row.customerNumber].filter(Boolean).join(' → ') || '—'],
      ['Created', fmtDate(row.createdAt)], ['Started', fmtDate(row.startedAt)], ['Ended', fmtDate(row.endedAt)],
      ['Duration', fmtSeconds(row.durationSeconds)], ['Cost', fmtUsd(row.cost)],
      ['Tags', (row.tags || []).map((t) => h('span', { class: 'tag' }, t))],
      ['Summary', row.summary || '—'],
    ], { id: 'call-summary', class: 'grid2' })));

  const analysis = analysisSection(row);
  if (analysis) ctx.view.append(analysis);
  const player = recordingSection(row, entries);
  ctx.view.append(player.el);
  ctx.view.append(transcriptSection(entries, player));
  ctx.view.append(latencySection(Array.isArray(logs.latency) ? logs.latency : []));
  ctx.view.append(toolsSection(entries, player));
  ctx.view.append(usageSection(row));
  ctx.view.append(webhooksSection(deliveries));
  const extra = ['validation_error', 'dial_error', 'pipeline_error', 'not_started'].filter((k) => logs[k] !== undefined);
  ctx.view.append(section('Row (JSON)', extra.length ? h('p', { class: 'message' }, extra.map((k) => `${k}: ${typeof logs[k] === 'string' ? logs[k] : JSON.stringify(logs[k])}`).join(' · ')) : null,
    h('details', null, h('summary', null, `GET /api/v1/calls/${row.callId}`), h('pre', { class: 'json' }, JSON.stringify(row, null, 2)))));
}

// ── recording ───────────────────────────────────────────────────────────────────────────────────────────
function recordingSection(row, entries) {
  const audio = h('audio', { id: 'recording', controls: true, preload: 'metadata' });
  const canvas = h('canvas', { id: 'waveform', width: 1200, height: 160, 'aria-label': 'Recording waveform: caller above, agent below' });
  const head = h('div', { class: 'playhead', id: 'playhead' });
  const marks = h('div', { class: 'marks', id: 'timeline-marks' });
  const wrap = h('div', { class: 'wave' }, canvas, head);
  const status = h('p', { class: 'hint', id: 'recording-status' });
  const legend = h('div', { class: 'legend' }, h('span', { class: 'swatch caller' }), 'Caller', h('span', { class: 'swatch agent' }), 'Agent');
  const el = section('Recording', legend, wrap, marks, audio, status);
  let duration = 0;
  const seek = (t) => {
    if (!row.recordingUrl) return;
    audio.currentTime = Math.max(0, t);
    void audio.play().catch(() => { /* autoplay refused: the position is set */ });
  };
  const place = () => {
    if (duration > 0) head.style.left = `${Math.min(100, (audio.currentTime / duration) * 100)}%`;
  };
  audio.addEventListener('timeupdate', place);
  audio.addEventListener('seeked', place);
  wrap.addEventListener('click', (e) => {
    const box = wrap.getBoundingClientRect();
    if (duration > 0) seek(((e.clientX - box.left) / box.width) * duration);
  });
  if (!row.recordingUrl) {
    status.textContent = LIVE.has(row.status) ? 'The recording is published when the call has ended.'
      : row.connectionStatus === 'completed' ? 'The recording appears after post-call processing (or recording was off or failed).' : 'No recording: the call never connected.';
    for (const x of [wrap, marks, audio, legend]) x.hidden = true;
    return { el, seek };
  }
  audio.src = row.recordingUrl;
  status.textContent = 'Loading the recording…';
  void (async () => {
    try {
      const res = await fetch(row.recordingUrl);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      // ~40 minutes of 24 kHz audio; longer recordings are played but not drawn (the whole file would be held here)
      if (Number(res.headers.get('content-length') || 0) > MAX_DRAWN_BYTES) {
        await res.body?.cancel();
        throw new Error('the recording is too long to draw here; the player plays it');
      }
      const wav = parseWav(await res.arrayBuffer());
      duration = wav.length / wav.rate;
      const lanes = speakerFrames(wav, entries);
      drawWave(canvas, wav, lanes);
      // a caller line's timestamp is its STT final, at the end of what was said: place it where that speech began
      for (const e of entries) {
        const start = e.role === 'user' && e.at !== null ? callerStart(lanes, e.at) : null;
        if (start === null) continue;
        e.at = start;
        const b = document.querySelector(`#transcript li[data-entry="${e.i}"] button.at`);
        if (b) b.textContent = fmtClock(start);
      }
      for (const e of entries) {
        if (e.at === null || e.at < 0 || e.at > duration) continue;
        marks.append(h('button', {
          type: 'button', class: `mark ${e.role}`, title: `${fmtClock(e.at)} ${e.role}: ${e.content ?? e.name ?? ''}`,
          style: { left: `${(e.at / duration) * 100}%` }, dataset: { role: e.role, at: e.at.toFixed(2) }, onclick: () => seek(e.at),
        }));
      }
      canvas.dataset.drawn = 'true';
      status.textContent = `${fmtSeconds(duration)} · ${wav.channels === 2 ? 'two channels (caller, agent)' : 'mixed mono: agent stretches from its speech start times'}`;
    } catch (err) {
      status.textContent = `The recording could not be drawn: ${err && err.message ? err.message : err}`;
      canvas.dataset.error = String(err && err.message ? err.message : err);
    }
  })();
  return { el, seek };
}

/** PCM WAV → its interleaved 16-bit samples, without copying (an hour at 24 kHz is 173 MB; no float copies). */
function parseWav(buf) {
  const v = new DataView(buf);
  const tag = (o) => String.fromCharCode(v.getUint8(o), v.getUint8(o + 1), v.getUint8(o + 2), v.getUint8(o + 3));
  if (buf.byteLength < 44 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new Error('not a WAV file');
  let o = 12; let fmt = null; let data = null;
  while (o + 8 <= buf.byteLength) {
    const id = tag(o); const size = v.getUint32(o + 4, true);
    if (id === 'fmt ') fmt = { channels: v.getUint16(o + 10, true), rate: v.getUint32(o + 12, true), bits: v.getUint16(o + 22, true) };
    else if (id === 'data') { data = { start: o + 8, size: Math.min(size, buf.byteLength - o - 8) }; break; }
    o += 8 + size + (size % 2);
  }
  if (!fmt || !data || fmt.bits !== 16 || fmt.channels < 1 || fmt.channels > 2) throw new Error('unsupported WAV (16-bit PCM, one or two channels expected)');
  const frames = Math.floor(data.size / (2 * fmt.channels));
  const pcm = data.start % 2 === 0 ? new Int16Array(buf, data.start, frames * fmt.channels) : new Int16Array(buf.slice(data.start, data.start + frames * fmt.channels * 2));
  return { rate: fmt.rate, channels: fmt.channels, length: frames, pcm };
}

const FRAME_S = 0.02;

/** Per 20 ms frame: is it the caller's or the agent's? (0 silent, 1 caller, 2 agent) */
function speakerFrames(wav, entries) {
  const hop = Math.round(wav.rate * FRAME_S);
  const n = Math.ceil(wav.length / hop);
  const { pcm, channels } = wav;
  const db = (c, f) => {
    let s = 0; const a = f * hop; const b = Math.min(wav.length, a + hop);
    for (let i = a; i < b; i++) { const x = pcm[i * channels + c] / 32768; s += x * x; }
    return 10 * Math.log10(s / Math.max(1, b - a) + 1e-10);
  };
  const who = new Uint8Array(n);
  if (wav.channels === 2) {
    for (let f = 0; f < n; f++) { const c = db(0, f); const a = db(1, f); who[f] = Math.max(c, a) < -50 ? 0 : a >= c ? 2 : 1; }
    return who;
  }
  const level = Float32Array.from({ length: n }, (_, f) => db(0, f));
  const sorted = Array.from(level).sort((a, b) => a - b);
  const floor = sorted[Math.floor(sorted.length * 0.1)] ?? -100;
  const voiced = Math.max(-50, floor + 12);
  for (let f = 0; f < n; f++) who[f] = level[f] > voiced ? 1 : 0;
  const starts = entries.filter((e) => e.role === 'assistant' && e.at !== null).map((e) => e.at).sort((a, b) => a - b);
  starts.forEach((s, k) => {
    const stop = Math.min(n, Math.round((starts[k + 1] ?? Infinity) / FRAME_S));
    let quiet = 0; let heard = false;
    for (let f = Math.max(0, Math.round(s / FRAME_S)); f < stop; f++) {
      if (level[f] > voiced) { heard = true; quiet = 0; who[f] = 2; } else if (++quiet * FRAME_S >= (heard ? 0.7 : 2)) break; else who[f] = 0;
    }
  });
  return who;
}

/** Start of the caller's speech that ended at or shortly before `at` (s), or null when none is found. */
function callerStart(who, at) {
  let f = Math.min(who.length - 1, Math.round(at / FRAME_S));
  const floor = Math.max(0, f - Math.round(4 / FRAME_S));
  while (f >= floor && who[f] !== 1) f--;
  if (f < floor) return null;
  let start = f; let quiet = 0;
  for (let k = f; k >= 0 && who[k] !== 2; k--) {
    if (who[k] === 1) { start = k; quiet = 0; } else if (++quiet * FRAME_S >= 0.5) break;
  }
  return start * FRAME_S;
}

function drawWave(canvas, wav, who) {
  const ratio = window.devicePixelRatio || 1;
  const w = Math.max(300, Math.round(canvas.clientWidth * ratio) || 1200);
  const hgt = Math.round(160 * ratio);
  canvas.width = w; canvas.height = hgt;
  const g = canvas.getContext('2d');
  g.clearRect(0, 0, w, hgt);
  const lane = hgt / 2;
  g.fillStyle = '#f1f5f9'; g.fillRect(0, 0, w, lane - 1);
  g.fillStyle = '#f0fdf4'; g.fillRect(0, lane + 1, w, lane - 1);
  const per = wav.length / w;
  const counts = { caller: 0, agent: 0 };
  for (let x = 0; x < w; x++) {
    const a = Math.floor(x * per); const b = Math.min(wav.length, Math.floor((x + 1) * per));
    const mid = Math.floor((a + b) / 2);
    const side = who[Math.min(who.length - 1, Math.floor(mid / wav.rate / FRAME_S))];
    if (!side) continue;
    const c = wav.channels === 2 ? side - 1 : 0;
    let peak = 0;
    for (let i = a; i < b; i++) { const s = Math.abs(wav.pcm[i * wav.channels + c]) / 32768; if (s > peak) peak = s; }
    const amp = Math.max(1, Math.min(1, peak * 1.6) * (lane / 2 - 2));
    const centre = side === 1 ? lane / 2 : lane + lane / 2;
    g.fillStyle = side === 1 ? '#2563eb' : '#16a34a';
    g.fillRect(x, centre - amp, 1, amp * 2);
    counts[side === 1 ? 'caller' : 'agent']++;
  }
  g.fillStyle = '#64748b'; g.font = `${11 * ratio}px system-ui`;
  g.fillText('caller', 4, 12 * ratio); g.fillText('agent', 4, lane + 12 * ratio);
  canvas.dataset.callerColumns = String(counts.caller);
  canvas.dataset.agentColumns = String(counts.agent);
}

// ── transcript, tools ──────────────────────────────────────────────────────────────────────────────────
function transcriptSection(entries, player) {
  const said = entries.filter((e) => e.role === 'user' || e.role === 'assistant' || e.role === 'dtmf');
  if (!said.length) return section('Transcript', h('p', { class: 'empty' }, 'No transcript (yet).'));
  return section('Transcript', h('ol', { id: 'transcript', class: 'transcript' }, said.map((e) => h('li', { class: e.role, dataset: { role: e.role, entry: e.i } },
    h('button', { type: 'button', class: 'at', title: 'Play from here', onclick: () => player.seek(e.at ?? 0), disabled: e.at === null }, e.at === null ? '—' : fmtClock(e.at)),
    h('span', { class: 'who' }, e.role === 'user' ? 'Caller' : e.role === 'assistant' ? 'Agent' : 'Keypad'),
    h('span', { class: 'text' }, e.content || (e.role === 'assistant' ? '(nothing heard)' : '')),
    e.interrupted ? h('span', { class: 'badge warn' }, 'interrupted') : null))));
}

function toolsSection(entries, player) {
  const tools = entries.filter((e) => e.role === 'tool');
  if (!tools.length) return section('Tool calls', h('p', { class: 'empty' }, 'No tool calls.'));
  return section('Tool calls', table(['At', 'Tool', 'Result', 'Duration'], tools.map((e) => h('tr', { dataset: { tool: e.name } },
    h('td', null, h('button', { type: 'button', class: 'at', onclick: () => player.seek(e.at ?? 0) }, fmtClock(e.at ?? 0))),
    h('td', { class: 'mono' }, e.name), h('td', null, badge(e.status, 'tool')), h('td', { class: 'num' }, `${e.durationMs ?? '—'} ms`))), { id: 'tools-table' }));
}

// ── latency ─────────────────────────────────────────────────────────────────────────────────────────────
const STAGES = [
  ['turn_model', 'End of speech → the turn model ends the turn', '#ec4899'],
  ['stt', 'End of turn → STT final', '#6366f1'],
  ['llm', 'STT final → LLM first token', '#f59e0b'],
  ['tts', 'LLM first token → TTS first audio', '#10b981'],
  ['send', 'TTS first audio → first frame sent', '#64748b'],
];

/** Stage durations of one logs.latency entry, from its marks relative to the end of the caller's speech. */
export function turnStages(l) {
  const d = l.detail || {};
  // a turn without a turn model has no turnEnd_ms: its turn_model bar is absent and the STT bar starts at 0
  const marks = [0, d.turnEnd_ms, d.sttFinal_ms, d.llmFirstToken_ms, d.ttsFirstByte_ms, d.firstFrame_ms];
  const out = [];
  let prev = 0;
  STAGES.forEach(([key], k) => {
    const at = marks[k + 1];
    if (typeof at !== 'number') { out.push({ key, ms: null }); return; }
    out.push({ key, ms: Math.max(0, at - prev), from: prev });
    prev = Math.max(prev, at);
  });
  return { stages: out, total: typeof d.firstFrame_ms === 'number' ? d.firstFrame_ms : l.total_ms };
}

function latencySection(latency) {
  if (!latency.length) return section('Turn latency', h('p', { class: 'empty' }, 'No measured turns (the call had no caller turn the agent answered, or it is still live).'));
  const turns = latency.map((l) => ({ l, ...turnStages(l) }));
  const max = Math.max(1, ...turns.map((t) => t.total || 0));
  const rowH = 26; const labelW = 70; const W = 900; const barW = W - labelW - 90;
  const chart = svg('svg', { id: 'latency-bars', viewBox: `0 0 ${W} ${turns.length * rowH + 24}`, role: 'img', 'aria-label': 'Per-turn latency' });
  turns.forEach((t, k) => {
    const y = k * rowH + 4;
    const g = svg('g', { 'data-turn': t.l.turn });
    g.append(svg('text', { x: 0, y: y + 15, class: 'svg-label' }, `Turn ${t.l.turn}`));
    t.stages.forEach((s, i) => {
      if (!s.ms) return;
      const rect = svg('rect', { x: labelW + (s.from / max) * barW, y, width: Math.max(1, (s.ms / max) * barW), height: rowH - 8, fill: STAGES[i][2], 'data-stage': s.key, 'data-ms': s.ms });
      rect.append(svg('title', null, `${STAGES[i][1]}: ${Math.round(s.ms)} ms${provider(t.l, s.key)}`));
      g.append(rect);
    });
    g.append(svg('text', { x: labelW + ((t.total || 0) / max) * barW + 6, y: y + 15, class: 'svg-label' }, t.total == null ? '—' : `${Math.round(t.total)} ms`));
    chart.append(g);
  });
  const axis = turns.length * rowH + 18;
  chart.append(svg('text', { x: labelW, y: axis, class: 'svg-axis' }, '0'), svg('text', { x: labelW + barW, y: axis, class: 'svg-axis', 'text-anchor': 'end' }, `${Math.round(max)} ms`));
  const legend = h('div', { class: 'legend' }, STAGES.map(([, label, color]) => [h('span', { class: 'swatch', style: { background: color } }), label]));
  const numbers = table(['Turn', 'Turn model', 'STT', 'LLM (request → first token)', 'TTS (text → first audio)', 'End of speech → first frame'], latency.map((l) => h('tr', null,
    h('td', null, String(l.turn)), h('td', { class: 'num' }, ms(l.turn_model_ms)), h('td', { class: 'num' }, ms(l.stt_ms)), h('td', { class: 'num' }, ms(l.llm_ms)), h('td', { class: 'num' }, ms(l.tts_ms)), h('td', { class: 'num' }, ms(l.total_ms)))), { class: 'compact' });
  return section('Turn latency', legend, chart, h('details', null, h('summary', null, 'Numbers (ms, as measured by the media pipeline)'), numbers));
}

const ms = (v) => (typeof v === 'number' ? `${Math.round(v)} ms` : '—');
function provider(l, key) {
  const p = l.providers && l.providers[key] ? l.providers[key] : l[`${key}_provider`];
  return p ? ` (${p})` : '';
}

// ── analysis ────────────────────────────────────────────────────────────────────────────────────────────
/** The agent's analysis of the call; null when the agent asks for none. */
function analysisSection(row) {
  const a = row.analysis;
  if (!a) {
    if (!row.configSnapshot?.analysis) return null;
    const when = LIVE.has(row.status) ? 'The call is analysed when it has ended.' : 'Not analysed yet: post-call processing is running.';
    return section('Analysis', h('p', { class: 'empty', id: 'analysis-status' }, when));
  }
  const v = a.successEvaluation;
  const verdict = !v ? '—'
    : typeof v.passed === 'boolean' ? [h('span', { class: `badge ${v.passed ? 'ok' : 'bad'}`, dataset: { verdict: String(v.passed) } }, v.passed ? 'passed' : 'not passed'), ' ', v.reason || '']
      : [h('span', { class: `badge ${v.score >= 6 ? 'ok' : 'bad'}`, dataset: { verdict: String(v.score) } }, `${v.score} / 10`), ' ', v.reason || ''];
  // by name: the stored order of an object's keys is the database's (jsonb), not the schema author's
  const data = a.structuredData && typeof a.structuredData === 'object' ? Object.entries(a.structuredData).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)) : [];
  const show = (x) => (x === null || x === undefined ? '—' : typeof x === 'object' ? JSON.stringify(x) : String(x));
  return section('Analysis',
    dl([
      ['Status', badge(a.status, 'analysis')], ['Verdict', verdict],
      ['Model', a.model ? `${a.model.provider} / ${a.model.model}` : '—'], ...(a.error ? [['Why', a.error]] : []),
    ], { id: 'call-analysis', class: 'grid2' }),
    data.length
      ? table(['Field', 'Value'], data.map(([k, x]) => h('tr', { dataset: { field: k } }, h('td', { class: 'mono' }, k), h('td', null, show(x)))), { id: 'analysis-data' })
      : null);
}

// ── usage, webhooks ─────────────────────────────────────────────────────────────────────────────────────
function usageSection(row) {
  const u = row.usage || {};
  const rows = [];
  for (const [kind, v] of Object.entries(u)) {
    for (const x of Array.isArray(v) ? v : [v]) {
      if (!x || typeof x !== 'object') continue;
      const amounts = Object.entries(x).filter(([k]) => k !== 'provider' && k !== 'model').map(([k, n]) => `${k.replace(/_/g, ' ')}: ${n}`).join(', ');
      rows.push(h('tr', { dataset: { usage: kind } }, h('td', null, kind.toUpperCase()), h('td', null, x.provider ?? '—'), h('td', { class: 'mono' }, x.model ?? '—'), h('td', null, amounts || '—')));
    }
  }
  return section('Usage and cost',
    dl([['Cost (LLM + TTS + STT)', fmtUsd(row.cost)]], { id: 'cost' }),
    rows.length ? table(['Service', 'Provider', 'Model', 'Usage'], rows, { id: 'usage-table' }) : h('p', { class: 'empty' }, 'No usage recorded (yet).'));
}

function webhooksSection(r) {
  if (!r.ok) return section('Webhook deliveries', h('p', { class: 'message' }, detailText(r.status, r.data)));
  const items = r.data.items || [];
  if (!items.length) return section('Webhook deliveries', h('p', { class: 'empty' }, 'No webhook was sent for this call (the agent has no webhook.url, or none is due yet).'));
  return section('Webhook deliveries', table(['Event', 'Result', 'HTTP', 'Took', 'Target', 'At'], items.map((d) => h('tr', { dataset: { event: d.event, ok: String(d.ok) } },
    h('td', { class: 'mono' }, d.event),
    h('td', null, h('span', { class: `badge ${d.ok ? 'ok' : 'bad'}` }, d.ok ? 'delivered' : d.error || 'failed')),
    h('td', { class: 'num' }, d.status ?? '—'), h('td', { class: 'num' }, d.durationMs == null ? '—' : `${d.durationMs} ms`),
    h('td', { class: 'mono small' }, d.url ?? '—'), h('td', null, fmtDate(d.at)))), { id: 'webhooks-table' }));
}
