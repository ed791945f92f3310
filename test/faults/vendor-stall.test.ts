// Vendor faults (nothing lost, nothing stuck): a vendor STT stream that hangs —
// the socket stays open, the vendor reads the audio but never answers again — is detected by the shared socket's
// stall bound (media/services/stt/ws-session.ts, STT_STALL_MS = 10 s of no vendor message while caller audio goes
// out), dropped and reopened; the caller's next utterance is recognised on the new connection. Without the bound the
// caller would never be answered again. The adapter is built as a call builds it (createEngines with
// DEEPGRAM_API_KEY/DEEPGRAM_BASE_URL pointing at the local Deepgram fake). The times (stall → reconnect, stall → next
// turn) are logged, never asserted. The same for a WebSocket TTS (media/services/tts/vendor.ts
// VendorSocket, TTS_STALL_MS = 10 s after the last message sent): the hung request fails as transient, the socket is
// reopened, and the adapter's one retry of a request that produced no audio speaks the reply on the new socket.
import test from 'ava';
import { loadConfig } from '../../core/config.ts';
import { createEngines, type EngineAgentConfig } from '../../media/services/index.ts';
import type { SttEvent, SttStream } from '../../media/services/types.ts';
import { STT_STALL_MS } from '../../media/services/stt/ws-session.ts';
import { silence, tone } from '../fakes/stt/_ws-fake.ts';
import { startDeepgramFake } from '../fakes/stt/deepgram.ts';
import { CartesiaTts } from '../../media/services/tts/cartesia.ts';
import { TTS_STALL_MS } from '../../media/services/tts/vendor.ts';
import { FakeCartesia } from '../fakes/tts/cartesia.ts';
import { synth } from '../media/services/tts/helpers.ts';
import { until } from '../helpers/wait.ts';

const SCRIPT = ['What are your opening hours?', 'Do you open on Sunday?', 'Thank you very much'];

function agent(): EngineAgentConfig {
  return {
    stt: { provider: 'deepgram', model: null },
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    tts: { provider: 'openai', model: 'tts-1', voice: 'alloy' },
    languages: ['en'],
  };
}

function turnEnds(events: SttEvent[]): number {
  return events.filter((e) => e.type === 'turn_end').length;
}

/** A caller in real time: 20 ms frames every 20 ms — speech for `speechMs`, then silence — until stopped. */
function caller(stream: SttStream): { speak(ms: number): void; stop(): void } {
  let speech = 0;
  const frame20 = tone(20);
  const quiet = silence(20);
  const timer = setInterval(() => {
    if (speech > 0) {
      speech -= 20;
      stream.write(frame20);
    } else stream.write(quiet);
  }, 20);
  return { speak: (ms) => (speech = ms), stop: () => clearInterval(timer) };
}

test('STT stream stalls mid-call (open, no bytes): reconnected after the stall bound, the next utterance is answered', async (t) => {
  const fake = await startDeepgramFake({ script: SCRIPT });
  t.teardown(() => fake.close());
  const config = loadConfig({ DEEPGRAM_API_KEY: fake.apiKey, DEEPGRAM_BASE_URL: fake.url, OPENAI_API_KEY: 'x' });
  const svc = createEngines(config, agent()).stt;
  const events: SttEvent[] = [];
  const stream = await svc.open({ languages: ['en'], keyterms: [], onEvent: (e) => events.push(e) });
  const c = caller(stream);
  t.teardown(() => c.stop());
  c.speak(600);
  await until(() => turnEnds(events) === 1 || null, { what: 'the first turn', timeoutMs: 10_000 });

  fake.stallAll();
  const stalledAt = Date.now();
  // the caller speaks into the hung stream: nothing comes back
  c.speak(600);
  await until(() => fake.connections.length === 2 || null, { what: 'the adapter to reopen the hung stream', timeoutMs: STT_STALL_MS + 15_000 });
  const reconnectMs = Date.now() - stalledAt;
  t.true(fake.connections[0]!.closed || fake.connections[0]!.ws.readyState !== fake.connections[0]!.ws.OPEN, 'the hung connection is dropped');
  t.is(turnEnds(events), 1, 'nothing was recognised on the hung stream');
  t.true(fake.connections[0]!.samples > 0, 'the hung vendor was sent the caller audio');

  c.speak(600);
  await until(() => turnEnds(events) === 2 || null, { what: 'a turn on the new connection', timeoutMs: 15_000 });
  const answeredMs = Date.now() - stalledAt;
  t.false(
    events.some((e) => e.type === 'error'),
    'a stall is transient: no error event',
  );
  t.log(`stall → reconnect ${reconnectMs} ms, stall → next recognised turn ${answeredMs} ms (bound ${STT_STALL_MS} ms + reconnect)`);
  c.stop();
  await stream.close();
});

test('TTS stream stalls mid-reply (open, no bytes): dropped after the stall bound, the reply is spoken on a new connection', async (t) => {
  const fake = await new FakeCartesia({ apiKey: 'ca-key' }).listen();
  const tts = new CartesiaTts({ baseUrl: fake.server.baseUrl, apiKey: 'ca-key', model: 'sonic-3', voice: 'f786b574-daa5-4673-aa0c-cbe3e8534c02', languages: ['en'] });
  t.teardown(async () => {
    await tts.close();
    await fake.close();
  });
  await tts.connect();
  const first = await synth(tts, 'Hello there.');
  t.true(first.pcm.length > 0);

  fake.server.stallAll();
  const stalledAt = Date.now();
  let firstPieceMs = -1;
  // the hung request fails as transient with no audio yet, so the adapter sends it once more on the reopened socket
  const reply = await synth(tts, 'Are you still there?', { onPiece: () => void (firstPieceMs < 0 && (firstPieceMs = Date.now() - stalledAt)) });
  t.true(reply.pcm.length > 0, 'the reply is spoken');
  t.is(fake.server.connections, 2, 'on a new connection');
  t.true(
    fake.server.messages(1).some((m) => m.transcript === 'Are you still there? '),
    'the hung vendor had been sent the reply',
  );
  const next = await synth(tts, 'Good.');
  t.true(next.pcm.length > 0, 'the call goes on');
  t.log(`stall → first audio of the reply ${firstPieceMs} ms (bound ${TTS_STALL_MS} ms + reconnect)`);
});
