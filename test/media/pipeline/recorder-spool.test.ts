// The recorder streams the call's timeline to a spool file in 1-second blocks: the file is the same WAV as the
// all-in-memory sink gives, late audio is mixed in on disk, and the block pool stays fixed however long the call.
import test from 'ava';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseWavHeader } from '../../../core/audio/wav.ts';
import { MemorySink, Recorder, RESIDENT_BLOCKS } from '../../../media/pipeline/recorder.ts';
import { FileSink } from '../../../media/session/spool.ts';
import { tempDir } from '../../helpers/tmp.ts';

/** Feed `seconds` of a call (caller 16 kHz frames, agent 24 kHz frames, a late agent burst) faster than real time. */
async function feed(r: Recorder, seconds: number): Promise<void> {
  const caller = new Int16Array(320);
  const agent = new Int16Array(480);
  for (let ms = 0; ms < seconds * 1000; ms += 20) {
    caller.fill(((ms / 20) % 50) * 10 + 1); // changes every frame, never 0
    r.addCaller(caller, ms + 20);
    if (Math.floor(ms / 1000) % 4 === 1) {
      agent.fill(1000 + ((ms / 20) % 7));
      r.addAgent(agent, ms);
    }
    // every 30 s, a frame for 10 s ago (past the in-memory window): mixed in on the sink
    if (ms > 0 && ms % 30_000 === 0) r.addAgent(new Int16Array(480).fill(-5000), ms - 10_000);
    if (ms % 1000 === 980) await r.flushed(); // in real time a block's write is done long before the next one
  }
}

test('a 5-minute call through the spool file: the same WAV as in memory, late audio mixed in, a fixed block pool', async (t) => {
  const dir = tempDir('rec-spool-');
  const file = path.join(dir, 'call.wav');
  const onDisk = new Recorder(0, new FileSink(file));
  const mem = new MemorySink();
  const inMemory = new Recorder(0, mem);
  await Promise.all([feed(onDisk, 300), feed(inMemory, 300)]);
  const [a, b] = await Promise.all([onDisk.finish(), inMemory.finish()]);
  t.truthy(a);
  t.deepEqual(a, b);
  t.true(onDisk.lateSamples >= 480 * 9, String(onDisk.lateSamples));
  t.true(onDisk.buffersAllocated <= RESIDENT_BLOCKS + 2, `pool of ${onDisk.buffersAllocated} blocks`);

  const wav = await readFile(file);
  t.is((await stat(file)).size, a!.bytes);
  const info = parseWavHeader(wav, wav.length);
  t.deepEqual([info.sampleRate, info.channels, info.bitsPerSample], [24000, 1, 16]);
  t.true(Math.abs(info.durationSeconds - 300) < 0.05, String(info.durationSeconds));
  t.true(wav.equals(mem.wav()), 'the spool file and the in-memory recording are the same bytes');
  // the late burst at 20 s (for the 30 s mark) is in the file, mixed with the caller's audio there
  const pcm = new Int16Array(wav.buffer, wav.byteOffset + info.dataOffset, info.dataBytes / 2);
  const at = 20 * 24000 + 100;
  t.true(pcm[at]! < -4000, String(pcm[at]));
});

test('a call that never started leaves no file; a silent call gives an empty valid WAV', async (t) => {
  const dir = tempDir('rec-spool-');
  const never = new Recorder(0, new FileSink(path.join(dir, 'never.wav')));
  never.addCaller(new Int16Array(320), 20);
  await never.discard();
  await t.throwsAsync(stat(path.join(dir, 'never.wav')));

  const silentFile = path.join(dir, 'silent.wav');
  const silent = new Recorder(0, new FileSink(silentFile));
  t.deepEqual(await silent.finish(), { durationS: 0, bytes: 44 });
  const wav = await readFile(silentFile);
  t.is(parseWavHeader(wav, wav.length).dataBytes, 0);
});

test('a sink that fails (disk gone) drops the recording without touching the audio path', async (t) => {
  const dir = tempDir('rec-spool-');
  // a path under a regular file cannot be created: every write fails
  const blocker = path.join(dir, 'file');
  await import('node:fs/promises').then((fs) => fs.writeFile(blocker, 'x'));
  const r = new Recorder(0, new FileSink(path.join(blocker, 'sub', 'call.wav')));
  await feed(r, 10);
  t.is(await r.finish(), null);
  t.truthy(r.error);
});
