// Units of the WebRTC media path and the phone-line simulation: band-limiting measured on tones, µ-law round trip,
// RTP parsing, the jitter buffer (reorder, duplicates, loss concealment, silence for timestamp jumps), Opus through
// both backends (native and the WASM fallback), ICE server configuration, SDP facts and NAT announcement.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { PhoneLine, phoneLine } from '../../media/audio/phone-line.ts';
import { decodeMulaw, encodeMulaw } from '../../media/audio/mulaw.ts';
import { concatInt16 } from '../../media/audio/pcm.ts';
import { buildRtp, parseRtp, seqDiff } from '../../media/webrtc/rtp.ts';
import { JitterBuffer, type FrameDecoder } from '../../media/webrtc/jitter.ts';
import { bandwidthForPlayback, FRAME_SAMPLES, OpusDecoder48, OpusEncoder48, opusBackend } from '../../core/audio/opus.ts';
import { AGENT_ENCODER, CallCodec, DEFAULT_AGENT_COMPLEXITY } from '../../media/webrtc/call-codec.ts';
import { opusPacketBand } from '../../media/webrtc/metrics.ts';
import { parseIceServers, parsePortRange, toNdcIceServers } from '../../media/webrtc/ice.ts';
import { announceSdp, parseOffer } from '../../media/webrtc/sdp.ts';
import { until } from '../helpers/wait.ts';

function tone(hz: number, rate: number, seconds: number, amp = 10_000): Int16Array {
  const n = Math.round(rate * seconds);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}
function rmsOf(pcm: Int16Array, skip = 0): number {
  let e = 0;
  for (let i = skip; i < pcm.length; i++) e += pcm[i]! * pcm[i]!;
  return Math.sqrt(e / Math.max(1, pcm.length - skip));
}
const db = (a: number, b: number) => 20 * Math.log10(a / b);

test('phone line: speech band passes, below 300 Hz and above 3.4 kHz are cut (measured on tones at 16 kHz)', (t) => {
  const gain = (hz: number) => {
    const input = tone(hz, 16_000, 1);
    const out = phoneLine(input, 16_000);
    t.is(out.length, input.length, `${hz} Hz keeps the length`);
    return db(rmsOf(out, 4000), rmsOf(input, 4000)); // skip the filters' settling
  };
  for (const hz of [500, 1000, 2000]) t.true(Math.abs(gain(hz)) < 1.5, `${hz} Hz passes (${gain(hz).toFixed(1)} dB)`);
  t.true(gain(3000) > -3.5, `3 kHz near the band edge passes (${gain(3000).toFixed(1)} dB)`);
  t.true(gain(100) < -30, `100 Hz cut (${gain(100).toFixed(1)} dB)`);
  t.true(gain(150) < -20, `150 Hz cut (${gain(150).toFixed(1)} dB)`);
  t.true(gain(4500) < -40, `4.5 kHz gone (no aliasing through 8 kHz) (${gain(4500).toFixed(1)} dB)`);
  t.true(gain(6000) < -40, `6 kHz gone (${gain(6000).toFixed(1)} dB)`);
});

test('phone line: 8 kHz decimation has a low-pass first (5 kHz does not fold back to 3 kHz)', (t) => {
  // a 5 kHz tone decimated to 8 kHz without a low-pass would alias to 3 kHz, inside the band
  const out = phoneLine(tone(5000, 48_000, 0.5), 48_000);
  t.true(rmsOf(out, 4800) < 50, `residual ${rmsOf(out, 4800).toFixed(1)}`);
});

test('phone line: streaming in 20 ms blocks equals the whole buffer; output is quantised like G.711', (t) => {
  const input = tone(1000, 16_000, 0.5, 8000);
  const whole = phoneLine(input, 16_000);
  const line = new PhoneLine(16_000);
  const parts: number[] = [];
  for (let i = 0; i < input.length; i += 320) parts.push(...line.process(input.subarray(i, i + 320)));
  parts.push(...line.flush());
  t.true(parts.length >= whole.length);
  let maxDiff = 0;
  for (let i = 0; i < whole.length; i++) maxDiff = Math.max(maxDiff, Math.abs(whole[i]! - parts[i]!));
  t.true(maxDiff <= 1, `max diff ${maxDiff}`);
  t.throws(() => new PhoneLine(4000), { instanceOf: RangeError });
});

test('mu-law round trip: every code decodes and re-encodes to itself; error stays within the segment step', (t) => {
  const codes = new Uint8Array(256).map((_, i) => i);
  const back = encodeMulaw(decodeMulaw(codes));
  // 0x7f and 0xff both mean zero: the encoder picks 0xff
  for (let i = 0; i < 256; i++) if (i !== 0x7f) t.is(back[i], i, `code ${i}`);
  const ramp = new Int16Array(2001).map((_, i) => (i - 1000) * 32);
  const rt = decodeMulaw(encodeMulaw(ramp));
  for (let i = 0; i < ramp.length; i++) {
    const err = Math.abs(rt[i]! - ramp[i]!);
    t.true(err <= Math.max(8, Math.abs(ramp[i]!) / 16), `sample ${ramp[i]} → ${rt[i]}`);
  }
});

test('RTP: header, CSRCs, extension and padding are stripped; RTCP and junk are not RTP', (t) => {
  const plain = buildRtp({ payloadType: 111, sequence: 65535, timestamp: 0xfffffff0, ssrc: 42, payload: Uint8Array.from([1, 2, 3]) });
  const p = parseRtp(plain)!;
  t.deepEqual([p.payloadType, p.sequence, p.timestamp, p.ssrc, [...p.payload]], [111, 65535, 0xfffffff0, 42, [1, 2, 3]]);
  // one CSRC, a one-byte-header extension of one word, two bytes of padding
  const fancy = Buffer.from([0xb1, 0x6f, 0, 7, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2, 0xbe, 0xde, 0, 1, 0x10, 0xaa, 0, 0, 9, 8, 7, 0, 2]);
  const q = parseRtp(fancy)!;
  t.deepEqual([...q.payload], [9, 8, 7]);
  t.is(q.sequence, 7);
  t.is(parseRtp(Buffer.from([0x80, 200, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])), null, 'RTCP SR');
  t.is(parseRtp(Buffer.from([1, 2, 3])), null);
  t.is(seqDiff(2, 65534), 4);
  t.is(seqDiff(65534, 2), -4);
});

/** A decoder whose "PCM" is the packet's first byte repeated: makes ordering visible. */
class MarkDecoder implements FrameDecoder {
  plc = true;
  decode(packet: Uint8Array): Int16Array {
    if (packet[0] === 0xff) throw new Error('corrupt');
    return new Int16Array(FRAME_SAMPLES).fill(packet[0]!);
  }
  conceal(): Int16Array | null {
    return this.plc ? new Int16Array(FRAME_SAMPLES).fill(-1) : null;
  }
}

function jitterRun(order: Array<[seq: number, ts?: number]>, o: { plc?: boolean; depth?: number } = {}) {
  const dec = new MarkDecoder();
  dec.plc = o.plc ?? true;
  const out: number[] = [];
  let now = 0;
  const jb = new JitterBuffer(dec, (pcm) => {
    for (let i = 0; i < pcm.length; i += FRAME_SAMPLES) out.push(pcm[i]!);
  }, { depth: o.depth ?? 3, maxWaitMs: 60, now: () => now });
  for (const [seq, ts] of order) {
    now += 20;
    jb.push({ payloadType: 111, marker: false, sequence: seq & 0xffff, timestamp: ts ?? seq * FRAME_SAMPLES, ssrc: 1, payload: Uint8Array.from([seq & 0x7f]) });
  }
  jb.close();
  return { out, stats: jb.stats };
}

test('jitter buffer: reorders, drops duplicates and late packets, conceals losses, keeps the timeline', (t) => {
  t.deepEqual(jitterRun([[1], [3], [2], [4]]).out, [1, 2, 3, 4], 'reordered');
  const dup = jitterRun([[1], [2], [2], [3], [1]]);
  t.deepEqual(dup.out, [1, 2, 3]);
  t.is(dup.stats.late, 2);
  // 3 is lost: after three packets queue behind the gap it is concealed (PLC marker -1) and play goes on
  const lost = jitterRun([[1], [2], [4], [5], [6], [7]]);
  t.deepEqual(lost.out, [1, 2, -1, 4, 5, 6, 7]);
  t.is(lost.stats.concealed, 1);
  // a packet arriving after its slot was concealed is dropped
  t.deepEqual(jitterRun([[1], [3], [4], [5], [2], [6]]).out, [1, -1, 3, 4, 5, 6]);
  // without decoder PLC: the last frame repeated at falling gain
  const fade = jitterRun([[10], [12], [13], [14]], { plc: false });
  t.is(fade.out.length, 5);
  t.true(fade.out[1]! > 0 && fade.out[1]! < 10, `faded ${fade.out[1]}`);
  t.deepEqual(fade.out.slice(2), [12, 13, 14]);
  // sequence wrap-around
  t.deepEqual(jitterRun([[65534], [65535], [65536], [65537]]).out, [65534 & 0x7f, 65535 & 0x7f, 0, 1]);
  // a timestamp jump with contiguous sequence numbers (sender paused) becomes silence of the same length
  const paused = jitterRun([[1, 960], [2, 1920], [3, 1920 + 960 * 6]]);
  t.deepEqual(paused.out, [1, 2, 0, 0, 0, 0, 0, 3]);
  t.is(Math.round(paused.stats.silenceMs), 100);
  // a corrupt packet is concealed
  const dec = new MarkDecoder();
  const out: number[] = [];
  const jb = new JitterBuffer(dec, (pcm) => out.push(pcm[0]!));
  jb.push({ payloadType: 111, marker: false, sequence: 1, timestamp: 0, ssrc: 1, payload: Uint8Array.from([0xff]) });
  t.deepEqual(out, [-1]);
  t.is(jb.stats.corrupt, 1);
  jb.close();
});

test('jitter buffer: a gap with nothing behind it is concealed after maxWaitMs, on its own timer', async (t) => {
  const out: number[] = [];
  const jb = new JitterBuffer(new MarkDecoder(), (pcm) => out.push(pcm[0]!), { maxWaitMs: 30 });
  const pkt = (seq: number) => ({ payloadType: 111, marker: false, sequence: seq, timestamp: seq * 960, ssrc: 1, payload: Uint8Array.from([seq]) });
  jb.push(pkt(1));
  jb.push(pkt(3));
  t.deepEqual(out, [1]);
  await until(() => out.length >= 3, { what: 'the concealed frame and the next packet', timeoutMs: 10_000, everyMs: 10 });
  t.deepEqual(out, [1, -1, 3]);
  jb.close();
});

test('Opus: a tone survives encode/decode at 48 kHz; PLC where the backend has it', (t) => {
  t.true(['native', 'wasm'].includes(opusBackend()));
  const enc = new OpusEncoder48();
  const dec = new OpusDecoder48();
  const input = tone(440, 48_000, 0.4, 8000);
  const out: number[] = [];
  for (let i = 0; i + FRAME_SAMPLES <= input.length; i += FRAME_SAMPLES) {
    const pkt = enc.encode(input.subarray(i, i + FRAME_SAMPLES));
    t.true(pkt.length > 2 && pkt.length < 400);
    out.push(...dec.decode(pkt));
  }
  const got = Int16Array.from(out);
  t.is(got.length, input.length);
  const ratio = rmsOf(got, 4800) / rmsOf(input, 4800);
  t.true(ratio > 0.8 && ratio < 1.2, `level ratio ${ratio.toFixed(2)}`);
  t.throws(() => enc.encode(new Int16Array(100)), { instanceOf: RangeError });
  const plc = dec.conceal();
  if (plc) t.is(plc.length, FRAME_SAMPLES);
});

/** Amplitude of the `hz` component of `pcm` (one Goertzel-style DFT bin, after `skip` samples of settling). */
function toneAmp(pcm: Int16Array, hz: number, rate: number, skip: number): number {
  let re = 0;
  let im = 0;
  for (let i = skip; i < pcm.length; i++) {
    re += pcm[i]! * Math.cos((2 * Math.PI * hz * i) / rate);
    im += pcm[i]! * Math.sin((2 * Math.PI * hz * i) / rate);
  }
  return (2 * Math.hypot(re, im)) / (pcm.length - skip);
}
// a tone's level in dB against its input amplitude; a component that is exactly absent counts as −200 dB
const dbOf = (amp: number, ref: number) => Math.max(-200, 20 * Math.log10(amp / ref));

test('Opus settings reach libopus (read back through opus_encoder_ctl), for the test caller and the agent encoder', (t) => {
  // the package's property setters do nothing (libopus keeps its defaults: complexity 9, about 72 kbit/s, no FEC), so
  // the settings are applied through opus_encoder_ctl and read back here
  t.deepEqual(new OpusEncoder48().settings(), { bitrate: 32_000, complexity: 5, fec: true, signal: 'voice', maxBandwidth: 'fullband' });
  t.deepEqual(new OpusEncoder48(AGENT_ENCODER.bitrate, AGENT_ENCODER).settings(), { bitrate: 32_000, complexity: 5, fec: false, signal: 'auto', maxBandwidth: 'fullband' });
  t.deepEqual(new OpusEncoder48(64_000, { complexity: 2, application: 'audio' }).settings(), { bitrate: 64_000, complexity: 2, fec: false, signal: 'auto', maxBandwidth: 'fullband' });
  t.is(new OpusEncoder48(32_000, { maxBandwidth: 'wideband' }).settings().maxBandwidth, 'wideband');
});

test('maxplaybackrate caps the caller\'s band as libwebrtc does: 16 kHz → SILK wideband packets, a 1 kHz tone intact at 16 kHz', (t) => {
  t.deepEqual([8000, 12_000, 16_000, 24_000, 48_000].map(bandwidthForPlayback), ['narrowband', 'mediumband', 'wideband', 'superwideband', 'fullband']);
  const speechLike = concatInt16([tone(300, 48_000, 0.5, 6000), tone(1000, 48_000, 0.5, 6000)]);
  const toc = (band?: 'wideband') => {
    const enc = new OpusEncoder48(32_000, band ? { maxBandwidth: band } : {});
    const packets: Uint8Array[] = [];
    for (let o = 0; o + FRAME_SAMPLES <= speechLike.length; o += FRAME_SAMPLES) packets.push(enc.encode(speechLike.subarray(o, o + FRAME_SAMPLES)));
    return packets;
  };
  // RFC 6716 §3.1: TOC configs 8–11 are SILK-only wideband; 12–15 hybrid, 16–31 CELT
  const capped = toc('wideband');
  t.true(capped.every((p) => (p[0]! >> 3) >= 8 && (p[0]! >> 3) <= 11), `configs ${[...new Set(capped.map((p) => p[0]! >> 3))]}`);
  t.true(toc().some((p) => (p[0]! >> 3) > 11), 'uncapped, the same audio is coded wider');
  // the /metrics band of a packet, from its TOC byte
  t.deepEqual([...new Set(capped.map((p) => opusPacketBand(p[0]!)))], ['wideband']);
  t.deepEqual([0, 4, 8, 12, 14, 16, 20, 24, 28].map((c) => opusPacketBand(c << 3)), ['narrowband', 'mediumband', 'wideband', 'superwideband', 'fullband', 'narrowband', 'wideband', 'superwideband', 'fullband']);
  const dec = new OpusDecoder48(16_000);
  const out = concatInt16(capped.map((p) => dec.decode(p)));
  const level = dbOf(toneAmp(out.subarray(out.length / 2), 1000, 16_000, 3200), 6000);
  t.true(Math.abs(level) <= 3, `1 kHz after SILK wideband: ${level.toFixed(2)} dB`);
});

test('agent audio, 24 kHz straight into Opus, decoded at 48 kHz: passband to 11.5 kHz kept (±1 dB), images above 12 kHz ≤ −60 dB', (t) => {
  // what the browser hears: CallCodec encodes the 24 kHz agent audio with no resampler; a 48 kHz decoder plays it.
  // Upsampling 24 → 48 kHz without a proper low-pass leaves an image of a tone f at 24 kHz − f.
  for (const hz of [200, 1000, 3000, 6000, 9000, 11_500]) {
    const codec = new CallCodec();
    const dec = new OpusDecoder48();
    const out = concatInt16(codec.encode(tone(hz, 24_000, 0.6, 8000)).map((p) => dec.decode(p)));
    t.is(out.length, 0.6 * 48_000, `${hz} Hz: every 20 ms frame encoded`);
    const level = dbOf(toneAmp(out, hz, 48_000, 4800), 8000);
    const image = dbOf(toneAmp(out, 24_000 - hz, 48_000, 4800), 8000);
    t.true(Math.abs(level) <= 1, `${hz} Hz passes: ${level.toFixed(2)} dB`);
    t.true(image <= -60, `${hz} Hz: image at ${24_000 - hz} Hz ${image.toFixed(1)} dB`);
  }
});

test('agent audio in blocks of any length gives the packets of whole 20 ms frames (a partial frame is held, not padded)', (t) => {
  const audio = tone(300, 24_000, 1, 6000);
  const whole = new CallCodec().encode(audio);
  t.is(whole.length, 50);
  const codec = new CallCodec();
  const pieces: Uint8Array[] = [];
  const sizes = [1, 479, 480, 481, 100, 7, 960, 1500, 333];
  for (let off = 0, k = 0; off < audio.length; k++) {
    const n = Math.min(sizes[k % sizes.length]!, audio.length - off);
    pieces.push(...codec.encode(audio.subarray(off, off + n)));
    off += n;
  }
  t.deepEqual(pieces.map((p) => [...p]), whole.map((p) => [...p]));
});

test('caller audio, Opus decoded straight to 16 kHz: passband to 7.5 kHz kept (±1 dB), aliases of 8.5–20 kHz ≤ −60 dB', (t) => {
  // the browser's packets carry the full band (here a 96 kb/s CELT encoder, as a browser's may); CallCodec decodes to
  // 16 kHz with no resampler, so libopus's own band-limiting is all that keeps 8–24 kHz from folding into 0–8 kHz
  for (const hz of [200, 1000, 3000, 6000, 7500, 8500, 9000, 11_000, 15_000, 20_000]) {
    const enc = new OpusEncoder48(96_000, { application: 'audio' });
    const input = tone(hz, 48_000, 0.6, 8000);
    const packets: Uint8Array[] = [];
    for (let i = 0; i + FRAME_SAMPLES <= input.length; i += FRAME_SAMPLES) packets.push(enc.encode(input.subarray(i, i + FRAME_SAMPLES)));
    // the tone is in the packets (a 48 kHz decoder hears it), so a quiet 16 kHz output is the band-limiting, not a lost tone
    const dec48 = new OpusDecoder48();
    const full = concatInt16(packets.map((p) => dec48.decode(p)));
    const inPackets = dbOf(toneAmp(full, hz, 48_000, 4800), 8000);
    t.true(inPackets > -3, `${hz} Hz is in the packets (${inPackets.toFixed(1)} dB)`);
    const { pcm } = new CallCodec().decode(packets);
    t.is(pcm.length, 0.6 * 16_000);
    if (hz < 8000) {
      const level = dbOf(toneAmp(pcm, hz, 16_000, 1600), 8000);
      t.true(Math.abs(level) <= 1, `${hz} Hz passes: ${level.toFixed(2)} dB`);
    } else {
      const alias = Math.abs(hz - 16_000 * Math.round(hz / 16_000));
      const level = dbOf(toneAmp(pcm, alias, 16_000, 1600), 8000);
      t.true(level <= -60, `${hz} Hz: alias at ${alias} Hz ${level.toFixed(1)} dB`);
    }
  }
});

test('Opus: the WASM fallback works where the native addon is not used (OPUS_FORCE_WASM=1)', (t) => {
  const script = `
    import { OpusEncoder48, OpusDecoder48, opusBackend } from './core/audio/opus.ts';
    const e = new OpusEncoder48(); const d = new OpusDecoder48();
    const pcm = new Int16Array(960).map((_, i) => Math.round(8000 * Math.sin(i / 10)));
    const out = d.decode(e.encode(pcm));
    const plc = d.conceal();
    console.log(JSON.stringify({ backend: opusBackend(), n: out.length, plc: plc ? plc.length : null }));`;
  const res = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, OPUS_FORCE_WASM: '1' }, encoding: 'utf8' });
  t.deepEqual(JSON.parse(res.trim().split('\n').pop()!), { backend: 'wasm', n: 960, plc: 960 });
});

test('ICE config: none by default; JSON and URL forms; TURN credentials; bad values refused', (t) => {
  t.deepEqual(parseIceServers(undefined), []);
  t.deepEqual(parseIceServers(''), []);
  const list = parseIceServers('stun:stun.example.com:3478, turn:alice:s3cret@turn.example.com?transport=tcp, turns:bob:pw@turn.example.com:5349');
  t.deepEqual(list, [
    { urls: ['stun:stun.example.com:3478'] },
    { urls: ['turn:turn.example.com?transport=tcp'], username: 'alice', credential: 's3cret' },
    { urls: ['turns:turn.example.com:5349'], username: 'bob', credential: 'pw' },
  ]);
  t.deepEqual(toNdcIceServers(list), [
    { hostname: 'stun.example.com', port: 3478 },
    { hostname: 'turn.example.com', port: 3478, username: 'alice', password: 's3cret', relayType: 'TurnTcp' },
    { hostname: 'turn.example.com', port: 5349, username: 'bob', password: 'pw', relayType: 'TurnTls' },
  ]);
  t.deepEqual(parseIceServers('[{"urls":["turn:10.0.0.5:3478"],"username":"u","credential":"c"}]'), [{ urls: ['turn:10.0.0.5:3478'], username: 'u', credential: 'c' }]);
  t.throws(() => parseIceServers('http://example.com'), { message: /not a stun:\/turn: URL/ });
  t.throws(() => parseIceServers('[{"urls":"ftp:x"}]'), { message: /urls/ });
  t.throws(() => parseIceServers('[oops'), { message: /JSON/ });
  t.deepEqual(parsePortRange('40000-40100'), { begin: 40000, end: 40100 });
  t.is(parsePortRange(undefined), null);
  t.throws(() => parsePortRange('50000-40000'));
});

test('SDP: the offer facts the answerer needs; host candidates announced for NAT', (t) => {
  const offer = [
    'v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', 'a=group:BUNDLE 0 1',
    'm=audio 9 UDP/TLS/RTP/SAVPF 63 111 9 0', 'c=IN IP4 0.0.0.0', 'a=mid:0', 'a=sendrecv',
    'a=rtpmap:63 red/48000/2', 'a=rtpmap:111 opus/48000/2', 'a=rtpmap:9 G722/8000',
    'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'c=IN IP4 0.0.0.0', 'a=mid:1', '',
  ].join('\r\n');
  t.deepEqual(parseOffer(offer), { audio: { mid: '0', opusPt: 111, direction: 'sendrecv' }, dataMid: '1' });
  t.deepEqual(parseOffer(offer.replace('a=rtpmap:111 opus/48000/2\r\n', '')).audio, null);
  const answer = ['c=IN IP4 10.0.0.7', 'a=candidate:1 1 UDP 2114977791 10.0.0.7 40001 typ host', 'a=candidate:2 1 UDP 2114977791 172.17.0.2 40001 typ host',
    'a=candidate:3 1 UDP 2116026111 fd00::2 40001 typ host', 'a=candidate:4 1 UDP 1 198.51.100.9 40001 typ srflx raddr 0.0.0.0 rport 0'].join('\r\n');
  const announced = announceSdp(answer, '203.0.113.5');
  t.is(announced, ['c=IN IP4 203.0.113.5', 'a=candidate:1 1 UDP 2114977791 203.0.113.5 40001 typ host', 'a=candidate:4 1 UDP 1 198.51.100.9 40001 typ srflx raddr 0.0.0.0 rport 0'].join('\r\n'));
  t.is(announceSdp(answer, undefined), answer);
});

test('Opus decode: every decoded frame is memory of its own (a later decode leaves an earlier frame as it was)', (t) => {
  const enc = new OpusEncoder48(32_000);
  const dec = new OpusDecoder48(16_000);
  const loud = enc.encode(new Int16Array(FRAME_SAMPLES).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 48_000))));
  const a = dec.decode(loud);
  const kept = a.slice();
  const b = dec.decode(enc.encode(new Int16Array(FRAME_SAMPLES)));
  dec.decode(loud);
  t.is(a.length, 320);
  t.not(a.buffer, b.buffer);
  t.deepEqual(a, kept, 'the first frame is unchanged by the decodes after it');
  t.true(kept.some((x) => x !== 0));
});

test('received RTP packets are counted on the audio path as plain adds and reach /metrics when it is read', async (t) => {
  const { registry } = await import('../../core/metrics.ts');
  const { countRtpReceived } = await import('../../media/webrtc/metrics.ts');
  const received = async () => Number(/direction="received"\} (\d+)/.exec(await registry.getSingleMetricAsString('voice_webrtc_rtp_packets_total'))?.[1] ?? 0);
  const before = await received();
  for (let i = 0; i < 3; i++) countRtpReceived();
  t.is(await received(), before + 3);
  t.is(await received(), before + 3, 'read twice: counted once');
  countRtpReceived();
  t.is(await received(), before + 4);
});

test('WEBRTC_OPUS_COMPLEXITY reaches the agent encoder of every call (a process started with it, as codec workers and the plane thread inherit it); config refuses a value outside 0–10', async (t) => {
  const { loadConfig, ConfigError } = await import('../../core/config.ts');
  t.is(loadConfig({ WEBRTC_OPUS_COMPLEXITY: '0' }).WEBRTC_OPUS_COMPLEXITY, 0);
  t.throws(() => loadConfig({ WEBRTC_OPUS_COMPLEXITY: '11' }), { instanceOf: ConfigError });
  t.throws(() => loadConfig({ WEBRTC_OPUS_COMPLEXITY: 'high' }), { instanceOf: ConfigError });
  // a voiced, changing signal: CELT at complexity 0 (no pitch pre-filter) and 5 code it differently
  const audio = new Int16Array(24_000);
  for (let i = 0; i < audio.length; i++) audio[i] = Math.round(6000 * Math.sin((2 * Math.PI * (140 + 60 * Math.sin(i / 4000)) * i) / 24_000) + 2000 * Math.sin((6 * Math.PI * 150 * i) / 24_000));
  const script = `
    const { CallCodec, AGENT_ENCODER } = await import(${JSON.stringify(new URL('../../media/webrtc/call-codec.ts', import.meta.url).href)});
    const audio = new Int16Array(Buffer.from(process.argv[1], 'base64').buffer.slice(0));
    const packets = new CallCodec().encode(audio).map((p) => Buffer.from(p).toString('base64'));
    console.log(JSON.stringify({ complexity: AGENT_ENCODER.complexity, packets }));`;
  const run = (env: Record<string, string>) => JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, Buffer.from(audio.buffer).toString('base64')], { env: { ...process.env, ...env }, encoding: 'utf8' }).trim()) as { complexity: number; packets: string[] };
  // the reference: the agent encoder at complexity c, in this process
  const encodedAt = (c: number) => {
    const enc = new OpusEncoder48(AGENT_ENCODER.bitrate, { ...AGENT_ENCODER, complexity: c });
    const out: string[] = [];
    for (let k = 0; (k + 1) * 480 <= audio.length; k++) out.push(Buffer.from(enc.encode(audio.subarray(k * 480, (k + 1) * 480))).toString('base64'));
    return out;
  };
  const zero = run({ WEBRTC_OPUS_COMPLEXITY: '0' });
  const unset = run({ WEBRTC_OPUS_COMPLEXITY: '' });
  t.is(zero.complexity, 0);
  t.is(unset.complexity, DEFAULT_AGENT_COMPLEXITY);
  t.deepEqual(zero.packets, encodedAt(0));
  t.deepEqual(unset.packets, encodedAt(DEFAULT_AGENT_COMPLEXITY));
  t.notDeepEqual(zero.packets, unset.packets);
});
