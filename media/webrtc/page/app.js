// The call page: a browser WebRTC call to a saved agent through POST /agents/{uuid}/test-call and the
// /webrtc/offer/{call_id} signaling endpoints of the same origin. No framework, no build step.
const API = '/api/v1';
const KEY_STORE = 'vas.apiKey';
const $ = (id) => document.getElementById(id);

const ui = {
  key: $('api-key'), saveKey: $('save-key'), forgetKey: $('forget-key'),
  agent: $('agent'), reload: $('reload-agents'), sim: $('telephony-sim'),
  call: $('call'), hangup: $('hangup'), status: $('status'), message: $('message'),
  micLevel: $('mic-level'), agentLevel: $('agent-level'),
  transcript: $('transcript'), resultSection: $('result-section'), result: $('result'),
  recording: $('recording'), rowLink: $('row-link'), rowPath: $('row-path'), remote: $('remote-audio'),
};

/** Live call state (also read by the end-to-end test through window.callPage). */
const state = { callId: null, phase: 'idle', pc: null, dc: null, mic: null, audioCtx: null, timers: [], hungUp: false, everConnected: false, events: [] };
window.callPage = {
  state,
  /** inbound audio as the browser's WebRTC stats report it */
  async inboundAudio() {
    if (!state.pc) return null;
    const stats = await state.pc.getStats();
    for (const r of stats.values()) {
      if (r.type === 'inbound-rtp' && r.kind === 'audio') {
        return { packetsReceived: r.packetsReceived, bytesReceived: r.bytesReceived, totalSamplesReceived: r.totalSamplesReceived, totalAudioEnergy: r.totalAudioEnergy, packetsLost: r.packetsLost, jitter: r.jitter };
      }
    }
    return null;
  },
};

function apiKey() { return localStorage.getItem(KEY_STORE) || ''; }

function setStatus(text, phase) {
  ui.status.textContent = text;
  if (phase) state.phase = phase;
  document.body.dataset.phase = state.phase;
}

function showMessage(text) {
  ui.message.textContent = text;
  ui.message.hidden = !text;
}

async function api(method, path, body) {
  const headers = { 'x-api-key': apiKey() };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path.startsWith('/api/') ? path : `${API}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch { /* empty body */ }
  return { ok: res.ok, status: res.status, data };
}

/** A refused call or request, in words (402/403 wallet, 429 concurrency or rate, 401 key, 404 agent). */
function refusal(status, data) {
  const d = data && data.detail !== undefined ? data.detail : data;
  if (status === 401) return 'The API key was not accepted. Check it and press "Use key" again.';
  if (status === 402) {
    if (d && typeof d === 'object' && d.error_code === 'insufficient_balance') {
      return `Call refused: insufficient balance (${fmtUsd(d.balance_usd)} available, ${fmtUsd(d.threshold_usd)} required). ${d.error_message || ''}`.trim();
    }
    return `Call refused: ${typeof d === 'string' ? d : (d && (d.error_message || d.message)) || 'payment required'}.`;
  }
  if (status === 403) return `Call refused by the wallet: ${typeof d === 'string' ? d : (d && (d.error_message || d.message)) || 'forbidden'}.`;
  if (status === 429) {
    if (d && typeof d === 'object' && d.code === 'concurrency_limit_reached') {
      return `Call refused: concurrency limit reached (${d.current_active} of ${d.current_limit} calls active). Try again when a call has ended.`;
    }
    return 'Too many requests: the rate limit was exceeded. Wait a moment and try again.';
  }
  if (status === 404) return typeof d === 'string' ? `${d}.` : 'Not found.';
  return `Request failed (${status}): ${typeof d === 'string' ? d : JSON.stringify(d)}`;
}

function fmtUsd(v) { return typeof v === 'number' ? `$${v.toFixed(2)}` : String(v); }

// ── key and agents ────────────────────────────────────────────────────────────────────────────────────
async function loadAgents() {
  ui.agent.innerHTML = '';
  ui.agent.disabled = true;
  ui.call.disabled = true;
  if (!apiKey()) {
    ui.agent.append(new Option('— enter an API key —', ''));
    return;
  }
  const r = await api('GET', '/agents?per_page=100');
  if (!r.ok) {
    ui.agent.append(new Option('— no agents —', ''));
    showMessage(refusal(r.status, r.data));
    return;
  }
  const items = (r.data && r.data.items) || [];
  if (!items.length) {
    ui.agent.append(new Option('— this organization has no agents yet (POST /api/v1/agents) —', ''));
    return;
  }
  for (const a of items) ui.agent.append(new Option(a.config && a.config.name ? a.config.name : a.uuid, a.uuid));
  // /call?agent=<uuid> (the console's "test call" link) preselects that agent
  const wanted = new URLSearchParams(location.search).get('agent');
  if (wanted && items.some((a) => a.uuid === wanted)) ui.agent.value = wanted;
  ui.agent.disabled = false;
  ui.call.disabled = state.phase !== 'idle' && state.phase !== 'ended';
  showMessage('');
}

ui.saveKey.addEventListener('click', () => {
  const k = ui.key.value.trim();
  if (!k) return;
  localStorage.setItem(KEY_STORE, k);
  ui.key.value = '';
  ui.key.placeholder = 'key saved in this browser';
  void loadAgents();
});
ui.forgetKey.addEventListener('click', () => {
  localStorage.removeItem(KEY_STORE);
  ui.key.placeholder = 'vak_…';
  void loadAgents();
});
ui.reload.addEventListener('click', () => void loadAgents());

// ── transcript ────────────────────────────────────────────────────────────────────────────────────────
let interim = null;
function addLine(who, text, final) {
  if (who === 'user' && interim) {
    interim.querySelector('.text').textContent = text;
    if (final) { interim.classList.remove('interim'); interim = null; }
    return;
  }
  const li = document.createElement('li');
  li.className = `${who}${final ? '' : ' interim'}`;
  li.dataset.role = who;
  const w = document.createElement('span');
  w.className = 'who';
  w.textContent = who === 'user' ? 'You:' : 'Agent:';
  const t = document.createElement('span');
  t.className = 'text';
  t.textContent = text;
  li.append(w, t);
  ui.transcript.append(li);
  if (who === 'user' && !final) interim = li;
  li.scrollIntoView({ block: 'nearest' });
}

function onEvent(ev) {
  state.events.push(ev);
  if (ev.type === 'rtf-user-transcription' && ev.payload) addLine('user', ev.payload.text, ev.payload.final !== false);
  else if (ev.type === 'rtf-bot-text' && ev.payload) addLine('agent', ev.payload.text, true);
  else if (ev.type === 'error') showMessage(`The agent reported an error: ${ev.message}`);
}

// ── levels ────────────────────────────────────────────────────────────────────────────────────────────
function meter(stream, bar) {
  const ctx = state.audioCtx || (state.audioCtx = new AudioContext());
  const src = ctx.createMediaStreamSource(stream);
  const an = ctx.createAnalyser();
  an.fftSize = 1024;
  src.connect(an);
  const buf = new Float32Array(an.fftSize);
  const id = setInterval(() => {
    an.getFloatTimeDomainData(buf);
    let sum = 0;
    for (const v of buf) sum += v * v;
    const db = 10 * Math.log10(sum / buf.length + 1e-10);
    const pct = Math.max(0, Math.min(100, ((db + 60) / 60) * 100));
    bar.style.width = `${pct}%`;
    bar.dataset.db = db.toFixed(1);
    bar.dataset.peak = Math.max(Number(bar.dataset.peak ?? -100), db).toFixed(1);
  }, 60);
  state.timers.push(id);
}

// ── the call ──────────────────────────────────────────────────────────────────────────────────────────
ui.call.addEventListener('click', () => void startCall());
ui.hangup.addEventListener('click', () => void hangUp());

async function startCall() {
  const agent = ui.agent.value;
  if (!agent) return;
  showMessage('');
  ui.transcript.innerHTML = '';
  interim = null;
  ui.resultSection.hidden = true;
  ui.call.disabled = true;
  Object.assign(state, { callId: null, hungUp: false, everConnected: false, events: [] });
  // created inside the click, so browsers let it run (autoplay policy)
  state.audioCtx = new AudioContext();
  void state.audioCtx.resume();
  ui.micLevel.dataset.peak = '-100';
  ui.agentLevel.dataset.peak = '-100';
  setStatus('Asking for the microphone…', 'mic');

  let mic;
  try {
    mic = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true } });
  } catch (err) {
    const name = err && err.name;
    showMessage(name === 'NotAllowedError' || name === 'SecurityError'
      ? 'Microphone access was denied. Allow the microphone for this site (the icon in the address bar) and press Call again.'
      : name === 'NotFoundError' ? 'No microphone was found. Connect one and press Call again.'
      : `The microphone could not be opened: ${err && err.message ? err.message : err}`);
    setStatus('Idle', 'idle');
    ui.call.disabled = false;
    return;
  }
  state.mic = mic;
  meter(mic, ui.micLevel);

  setStatus('Placing the call…', 'placing');
  const created = await api('POST', `/agents/${encodeURIComponent(agent)}/test-call`, { telephonySim: ui.sim.checked });
  if (!created.ok) {
    showMessage(refusal(created.status, created.data));
    cleanup();
    setStatus('Idle', 'idle');
    ui.call.disabled = false;
    return;
  }
  state.callId = created.data.callId;
  const offerPath = new URL(created.data.offerUrl, location.href).pathname;

  const ice = await api('GET', '/webrtc/ice-servers');
  const pc = new RTCPeerConnection({ iceServers: ice.ok && ice.data ? ice.data.iceServers : [] });
  state.pc = pc;
  const dc = pc.createDataChannel('events');
  state.dc = dc;
  dc.onmessage = (m) => { try { onEvent(JSON.parse(m.data)); } catch { /* not JSON */ } };
  dc.onclose = () => { if (state.everConnected && !state.hungUp) finish('The call ended.'); };
  for (const track of mic.getTracks()) pc.addTrack(track, mic);
  pc.ontrack = (e) => {
    ui.remote.srcObject = e.streams[0] || new MediaStream([e.track]);
    meter(ui.remote.srcObject, ui.agentLevel);
  };

  // trickle ICE: candidates found before the answer wait for it, then go by PATCH
  const queued = [];
  let answered = false;
  let pcId = null;
  const sendCandidate = (c) => api('PATCH', offerPath, { candidate: c, pc_id: pcId });
  pc.onicecandidate = (e) => {
    if (!e.candidate) return;
    const c = e.candidate.toJSON();
    if (answered) void sendCandidate(c);
    else queued.push(c);
  };
  pc.onconnectionstatechange = () => {
    const s = pc.connectionState;
    if (s === 'connected') {
      state.everConnected = true;
      setStatus('Connected — speak after the agent', 'connected');
      ui.hangup.disabled = false;
    } else if (s === 'disconnected') {
      setStatus('Connection unstable, trying to recover…', 'reconnecting');
    } else if (s === 'failed') {
      finish(state.everConnected ? 'The connection dropped (network or server unreachable). The call has ended.'
        : 'Could not connect the audio (ICE failed). A firewall may block UDP; the server may need a TURN server (WEBRTC_ICE_SERVERS).');
    }
  };

  setStatus('Connecting…', 'connecting');
  ui.hangup.disabled = false;
  await pc.setLocalDescription(await pc.createOffer());
  const answer = await api('POST', offerPath, { sdp: pc.localDescription.sdp, type: 'offer' });
  if (!answer.ok) {
    finish(refusal(answer.status, answer.data));
    return;
  }
  pcId = answer.data.pc_id;
  await pc.setRemoteDescription({ type: 'answer', sdp: answer.data.sdp });
  answered = true;
  if (queued.length) await sendCandidate(queued.splice(0));
}

async function hangUp() {
  state.hungUp = true;
  if (state.dc && state.dc.readyState === 'open') {
    try { state.dc.send(JSON.stringify({ type: 'hangup' })); } catch { /* closing */ }
  }
  finish('');
}

function cleanup() {
  for (const id of state.timers) clearInterval(id);
  state.timers = [];
  if (state.mic) for (const t of state.mic.getTracks()) t.stop();
  state.mic = null;
  ui.micLevel.style.width = '0';
  ui.agentLevel.style.width = '0';
  if (state.audioCtx) void state.audioCtx.close();
  state.audioCtx = null;
}

function finish(message) {
  if (state.phase === 'ended') return;
  const { pc } = state;
  state.pc = null;
  // give the hang-up message a moment to leave before the connection closes
  setTimeout(() => { try { if (pc) pc.close(); } catch { /* closed */ } }, 150);
  cleanup();
  ui.hangup.disabled = true;
  ui.call.disabled = !ui.agent.value;
  if (message) showMessage(message);
  setStatus('Call ended', 'ended');
  if (state.callId) void showResult(state.callId);
}

async function showResult(callId) {
  ui.resultSection.hidden = false;
  ui.rowPath.textContent = `GET ${API}/calls/${callId}`;
  // the row is written when the server ends the call; the recording and transcript once post-call ran
  for (let i = 0; i < 40; i++) {
    const r = await api('GET', `/calls/${callId}`);
    if (r.ok) {
      render(r.data);
      if (r.data.status !== 'active' && r.data.status !== 'pending' && r.data.recordingUrl) return;
    }
    await new Promise((res) => setTimeout(res, 1500));
  }
}

function render(row) {
  const fields = [
    ['Call id', row.callId], ['Status', row.status], ['Ended reason', row.endedReason ?? '—'],
    ['Connection', row.connectionStatus ?? '—'], ['Duration', row.durationSeconds != null ? `${row.durationSeconds} s` : '—'],
    ['Phone-line simulation', row.telephonySim ? 'on' : 'off'],
    ['Recording', row.recordingUrl ? 'ready' : 'after post-call processing'],
    ['Stored transcript', Array.isArray(row.transcript) ? `${row.transcript.length} entries` : 'after the call is written'],
    ['Transcript file', row.transcriptUrl ? row.transcriptUrl : 'after post-call processing'],
    ['Summary', row.summary || '—'],
  ];
  ui.result.innerHTML = '';
  for (const [k, v] of fields) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = String(v);
    dd.dataset.field = k;
    ui.result.append(dt, dd);
  }
  if (row.recordingUrl) {
    ui.recording.src = row.recordingUrl;
    ui.recording.hidden = false;
  }
  const blob = new Blob([JSON.stringify(row, null, 2)], { type: 'application/json' });
  if (ui.rowLink.dataset.url) URL.revokeObjectURL(ui.rowLink.dataset.url);
  ui.rowLink.dataset.url = URL.createObjectURL(blob);
  ui.rowLink.href = ui.rowLink.dataset.url;
}

if (apiKey()) ui.key.placeholder = 'key saved in this browser';
void loadAgents();
setStatus('Idle', 'idle');
