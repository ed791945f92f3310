// Optional live checks against the real vendors: each runs only when its key is in the environment (and uses the
// configured <ID>_BASE_URL, default the vendor's own endpoint). They synthesize one short reply as two chunks of
// one utterance and expect about a second of non-silent 24 kHz audio.
import test from 'ava';
import { loadConfig } from '../../../../core/config.ts';
import { createEngines, type EngineAgentConfig } from '../../../../media/services/index.ts';
import type { TtsService } from '../../../../media/services/types.ts';
import { maxAbs, synth } from './helpers.ts';

const config = loadConfig(process.env);
const vendors: Array<{ id: string; key: string | undefined }> = [
  { id: 'elevenlabs', key: config.ELEVENLABS_API_KEY },
  { id: 'cartesia', key: config.CARTESIA_API_KEY },
  { id: 'openai', key: config.OPENAI_API_KEY },
  { id: 'sarvam', key: config.SARVAM_API_KEY },
  { id: 'xai', key: config.XAI_API_KEY },
  { id: 'inworld', key: config.INWORLD_API_KEY },
];

function agent(id: string): EngineAgentConfig {
  return { llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local', model: null }, tts: { provider: id, model: null, voice: null }, languages: ['en'] };
}

for (const v of vendors) {
  (v.key ? test.serial : test.skip)(`live ${v.id}: a two-chunk reply comes back as 24 kHz speech`, async (t) => {
    const tts: TtsService = createEngines(config, agent(v.id)).tts;
    t.teardown(() => tts.close?.());
    await tts.connect?.();
    const reply = {};
    const a = await synth(tts, 'Hello, this is a live test.', { utterance: reply });
    const b = await synth(tts, 'Goodbye.', { utterance: reply });
    tts.endUtterance?.(reply);
    const seconds = (a.pcm.length + b.pcm.length) / 24000;
    t.true(seconds > 0.8 && seconds < 10, `${seconds} s of audio`);
    t.true(maxAbs(a.pcm) > 500, 'not silence');
  });
}
