// The carrier stream transports against the fake carrier's media side (real WebSocket, real time): µ-law 20 ms
// frames out, caller audio in at 16 kHz, marks → playedMs, clear on barge-in, DTMF, stop → onClose.
import test from 'ava';
import { WebSocketServer, type WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import { TwilioStreamTransport } from '../../media/transports/carriers/twilio.ts';
import { SmartfloStreamTransport } from '../../media/transports/carriers/smartflo.ts';
import { CarrierStreamTransport } from '../../media/transports/carriers/stream.ts';
import type { TransportEvent } from '../../media/transports/types.ts';
import { concatInt16 } from '../../media/audio/pcm.ts';
import { FakeCarrierStream } from '../fakes/twilio-media.ts';
import { connectSmartfloStream } from '../fakes/smartflo-media.ts';
import { until } from '../helpers/wait.ts';

/** Twilio's settings with a short wait for mark support (the default is 3 s). */
class CarrierStreamTransportFor extends CarrierStreamTransport {
  constructor(ws: WebSocket) {
    super(ws, { kind: 'twilio', markSupportMs: 500 });
  }
}

async function serve(make: (ws: WebSocket) => CarrierStreamTransport) {
  const wss = new WebSocketServer({ port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const transports: CarrierStreamTransport[] = [];
  wss.on('connection', (ws) => transports.push(make(ws)));
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/stream`;
  return {
    url,
    next: () => until(() => transports[0], { what: 'connection', timeoutMs: 5000 }),
    close: () => new Promise<void>((r) => wss.close(() => r())),
  };
}

function sine(ms: number, rate: number, hz: number, amp = 8000): Int16Array {
  const n = Math.round((ms * rate) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

/** Dominant frequency estimate by zero crossings. */
function zeroCrossHz(pcm: Int16Array, rate: number): number {
  let z = 0;
  for (let i = 1; i < pcm.length; i++) if ((pcm[i - 1]! < 0) !== (pcm[i]! < 0)) z++;
  return (z / 2) * (rate / pcm.length);
}

/** Paced like the session's pacer: 20 ms of 24 kHz audio per 20 ms. */
async function paced(t: CarrierStreamTransport, pcm24k: Int16Array): Promise<void> {
  const start = performance.now();
  for (let i = 0, k = 0; i < pcm24k.length; i += 480, k++) {
    t.sendAudio(pcm24k.subarray(i, i + 480));
    const delay = start + (k + 1) * 20 - performance.now();
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  }
}

test('twilio: start parameters, caller audio in at 16 kHz, agent audio out as 160-byte µ-law frames with marks', async (t) => {
  const srv = await serve((ws) => new TwilioStreamTransport(ws));
  const fake = FakeCarrierStream.connect(srv.url, { callSid: 'CA123', customParameters: { token: 'tok', callId: 'c1' } });
  const tr = await srv.next();
  const start = await tr.waitStart(5000);
  t.is(start.callSid, 'CA123');
  t.is(start.streamSid, fake.streamSid);
  t.deepEqual(start.customParameters, { token: 'tok', callId: 'c1' });

  const got: Int16Array[] = [];
  tr.onAudio((pcm) => got.push(pcm));
  await fake.say(sine(600, 8000, 300), 8000);
  await fake.silence(100);
  const inbound = concatInt16(got);
  t.true(inbound.length >= 16000 * 0.6, 'caller audio arrives at 16 kHz');
  const hz = zeroCrossHz(inbound.subarray(1600, 8000), 16000);
  t.true(Math.abs(hz - 300) < 15, `300 Hz tone survives µ-law + resampling (${hz.toFixed(1)} Hz)`);

  await paced(tr, sine(1000, 24000, 500));
  await until(() => fake.heardMs >= 960, { what: 'playout', timeoutMs: 5000 });
  t.true(fake.payloadSizes.length >= 48);
  t.true(fake.payloadSizes.every((n) => n === 160), 'every media payload is 20 ms (160 bytes)');
  const marks = fake.received.filter((m) => m.event === 'mark');
  t.is(marks.length, fake.payloadSizes.length, 'one mark per payload');
  t.true(fake.received.filter((m) => m.event === 'media').every((m) => m.streamSid === fake.streamSid));
  const heardHz = zeroCrossHz(fake.heardPcm().subarray(800, 7200), 8000);
  t.true(Math.abs(heardHz - 500) < 15, `agent tone heard at 500 Hz (${heardHz.toFixed(1)})`);
  await until(() => tr.playedMs() >= 960, { what: 'marks echoed', timeoutMs: 5000 });
  t.true(tr.playedMs() <= tr.sentMs());

  const events: TransportEvent[] = [];
  tr.onEvent((e) => events.push(e));
  fake.dtmf('7');
  fake.dtmf('#');
  await until(() => events.length === 2, { what: 'dtmf', timeoutMs: 5000 });
  t.deepEqual(events, [
    { type: 'dtmf', digit: '7' },
    { type: 'dtmf', digit: '#' },
  ]);

  let closed = 0;
  tr.onClose(() => closed++);
  fake.stop();
  await until(() => closed === 1, { what: 'onClose', timeoutMs: 5000 });
  await fake.closed;
  t.is(closed, 1, 'stop and the socket close report one close');
  await srv.close();
});

test('twilio: clear drops the buffered audio and playedMs stays at what was heard', async (t) => {
  const srv = await serve((ws) => new TwilioStreamTransport(ws));
  const fake = FakeCarrierStream.connect(srv.url, { callSid: 'CA9' });
  const tr = await srv.next();
  await tr.waitStart(5000);
  // 2 s of audio handed over at once (a carrier buffers what it is sent faster than real time)
  const pcm = sine(2000, 24000, 400);
  for (let i = 0; i < pcm.length; i += 480) tr.sendAudio(pcm.subarray(i, i + 480));
  await until(() => fake.heardMs >= 400, { what: 'some playout', timeoutMs: 5000 });
  tr.clearAudio();
  await until(() => fake.clears === 1, { what: 'clear received', timeoutMs: 5000 });
  const heardAtClear = fake.heardMs;
  t.true(fake.droppedBytes > 0, 'the carrier dropped buffered audio');
  t.true(fake.echoed.some((e) => !e.played), 'pending marks are echoed by the carrier on clear');
  await new Promise((r) => setTimeout(r, 300));
  t.true(fake.heardMs - heardAtClear <= 20, 'nothing more is played after the clear');
  const played = tr.playedMs();
  t.true(played <= fake.heardMs + 1, `playedMs ${played} never exceeds what was heard ${fake.heardMs}`);
  t.true(played >= heardAtClear - 120, `playedMs ${played} close to what was heard at the clear ${heardAtClear}`);
  t.true(played < 1500, 'the dropped audio does not count as played');

  // audio after the clear plays and is confirmed again
  await paced(tr, sine(300, 24000, 400));
  await until(() => tr.playedMs() > played + 250, { what: 'marks after clear', timeoutMs: 5000 });
  fake.hangup();
  await srv.close();
});

test('twilio: a normal close waits for the last audio to be played', async (t) => {
  const srv = await serve((ws) => new TwilioStreamTransport(ws));
  const fake = FakeCarrierStream.connect(srv.url, { callSid: 'CA10' });
  const tr = await srv.next();
  await tr.waitStart(5000);
  const pcm = sine(500, 24000, 400);
  for (let i = 0; i < pcm.length; i += 480) tr.sendAudio(pcm.subarray(i, i + 480));
  tr.close('normal');
  const { code } = await fake.closed;
  t.is(code, 1000);
  t.true(fake.heardMs >= 490, `the farewell played out before the socket closed (${fake.heardMs} ms)`);
  await srv.close();
});

test('a carrier that never echoes marks: after a while what was sent counts as played', async (t) => {
  const srv = await serve((ws) => new CarrierStreamTransportFor(ws));
  const fake = FakeCarrierStream.connect(srv.url, { callSid: 'CA11' }, { echoMarks: false });
  const tr = await srv.next();
  await tr.waitStart(5000);
  await paced(tr, sine(400, 24000, 400));
  t.is(tr.playedMs(), 0, 'nothing confirmed yet');
  await until(() => tr.playedMs() > 0, { what: 'fallback to sent audio', timeoutMs: 5000 });
  t.is(tr.playedMs(), tr.sentMs());
  fake.hangup();
  await srv.close();
});

test('smartflo: connected from the bot, start with from/to/direction, 100 ms caller payloads, stop reason', async (t) => {
  const srv = await serve((ws) => new SmartfloStreamTransport(ws));
  const fake = connectSmartfloStream(srv.url, { callSid: 'SF1', from: '+919800000001', to: '+918000000002', direction: 'inbound', customParameters: { custom_identifier: 'x' } }, { connected: 'bot' });
  const tr = await srv.next();
  const start = await tr.waitStart(5000);
  t.is(fake.received[0]?.event, 'connected', 'we said connected first and the carrier waited for it');
  t.is(start.from, '+919800000001');
  t.is(start.to, '+918000000002');
  t.is(start.direction, 'inbound');
  t.deepEqual(start.customParameters, { custom_identifier: 'x' });
  const sizes: number[] = [];
  tr.onAudio((pcm) => sizes.push(pcm.length));
  await fake.tone(500);
  t.true(sizes.some((n) => n >= 1500), '100 ms payloads arrive (≈1600 samples at 16 kHz)');
  await paced(tr, sine(200, 24000, 400));
  await until(() => fake.payloadSizes.length >= 9, { what: 'payloads', timeoutMs: 5000 });
  t.true(fake.payloadSizes.every((n) => n % 160 === 0 && n >= 160), 'payloads are multiples of 160 bytes');
  const media = fake.received.filter((m) => m.event === 'media');
  t.true(media.every((m) => typeof m.sequenceNumber === 'string'));
  let closed = false;
  tr.onClose(() => (closed = true));
  fake.stop('hangup');
  await until(() => closed, { what: 'close', timeoutMs: 5000 });
  t.is(tr.stopReason, 'hangup');
  await srv.close();
});

test('smartflo: the carrier may say connected first', async (t) => {
  const srv = await serve((ws) => new SmartfloStreamTransport(ws));
  const fake = connectSmartfloStream(srv.url, { callSid: 'SF2', from: '+1', to: '+2', direction: 'outbound' }, { connected: 'carrier' });
  const tr = await srv.next();
  const start = await tr.waitStart(5000);
  t.is(start.callSid, 'SF2');
  fake.hangup();
  await srv.close();
});
