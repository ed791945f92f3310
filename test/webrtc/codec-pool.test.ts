// The WebRTC codec pool (media/webrtc/codec-pool.ts): the audio out of the worker processes is exactly the audio of the
// inline path (same Opus packets byte for byte, same decoded samples), per-call order holds across
// batches and across calls sharing a thread, and a thread that dies is replaced (its calls continue there, the lost
// work is counted) until too many die and every call goes inline. The pool's results arrive as messages, and a loaded
// machine starts threads slowly: the tests wait up to 2 minutes for them.
import test from 'ava';
import { CallCodec, CONCEAL, type DecodeOp } from '../../media/webrtc/call-codec.ts';
import { CodecPool, type CodecChannel } from '../../media/webrtc/codec-pool.ts';
import { JitterBuffer } from '../../media/webrtc/jitter.ts';
import { opusBackend } from '../../core/audio/opus.ts';
import { buildRtp, parseRtp } from '../../media/webrtc/rtp.ts';
import { until } from '../helpers/wait.ts';

/** Deterministic speech-like agent audio at 24 kHz: a gliding tone with harmonics and noise, in 20 ms blocks. */
function agentBlocks(n: number, seed = 1): Int16Array[] {
  let x = seed;
  const rnd = () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff) * 2 - 1;
  const out: Int16Array[] = [];
  let phase = 0;
  for (let b = 0; b < n; b++) {
    const block = new Int16Array(480);
    for (let i = 0; i < 480; i++) {
      const f = 180 + 120 * Math.sin((b * 480 + i) / 9000);
      phase += (2 * Math.PI * f) / 24_000;
      block[i] = Math.round(6000 * Math.sin(phase) + 2500 * Math.sin(3 * phase) + 800 * rnd());
    }
    out.push(block);
  }
  return out;
}

/** Decode instructions as a jitter buffer would give them: packets, a lost frame, a pause, a corrupt packet. */
function decodeOps(packets: Uint8Array[]): DecodeOp[] {
  const ops: DecodeOp[] = [];
  packets.forEach((p, i) => {
    if (i === 7) ops.push(CONCEAL);
    else if (i === 12) ops.push(960 * 3);
    else if (i === 20) ops.push(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff]));
    else ops.push(p);
  });
  return ops;
}

interface Collected {
  packets: number[][];
  lost: number;
  tags: number;
  pcm: number[];
  corrupt: number;
  pcmLost: number;
}
function collector(): { h: Parameters<CodecPool['open']>[0]; got: Collected } {
  const got: Collected = { packets: [], lost: 0, tags: 0, pcm: [], corrupt: 0, pcmLost: 0 };
  return {
    got,
    h: {
      packets: (ps, lost, tag) => {
        for (const p of ps) got.packets.push([...p]);
        got.lost += lost;
        got.tags += tag;
      },
      pcm: (pcm, corrupt, lost) => {
        for (const s of pcm) got.pcm.push(s);
        got.corrupt += corrupt;
        got.pcmLost += lost;
      },
    },
  };
}

/** One decode instruction through a channel's sink, as the jitter buffer gives it. */
function feed(ch: CodecChannel, o: DecodeOp): void {
  if (typeof o !== 'number') ch.sink.packet(o);
  else if (o === CONCEAL) ch.sink.conceal();
  else ch.sink.silence(o);
}

function inlineReference(blocks: Int16Array[]): { packets: number[][]; pcm: number[]; corrupt: number } {
  const codec = new CallCodec();
  const packets = blocks.flatMap((b) => codec.encode(b));
  const dec = new CallCodec();
  const r = dec.decode(decodeOps(packets));
  return { packets: packets.map((p) => [...p]), pcm: [...r.pcm], corrupt: r.corrupt };
}

test('worker processes give the inline audio exactly: same Opus packets, same decoded 16 kHz samples, order kept across batches and calls', async (t) => {
  const pool = new CodecPool(2);
  try {
    const calls = [1, 2, 3].map((seed) => ({ blocks: agentBlocks(60, seed), ...collector(), ch: null as CodecChannel | null }));
    for (const c of calls) c.ch = pool.open(c.h);
    t.deepEqual(pool.load(), [2, 1], 'pinned to the thread with the fewest calls');
    t.true(calls.every((c) => c.ch!.mode === 'thread'));
    // encode: some blocks of all calls in one turn (one message per thread), others a turn or a result apart
    for (let i = 0; i < 60; i++) {
      for (const c of calls) c.ch!.encode(c.blocks[i]!, i === 30 ? 5 : 0);
      if (i % 7 === 0) await new Promise((r) => setImmediate(r));
      if (i % 13 === 0) await until(() => calls.every((c) => c.got.packets.length >= i - 1), { what: 'packets so far', timeoutMs: 120_000, everyMs: 2 });
    }
    const refs = calls.map((c) => inlineReference(c.blocks));
    t.log('opus inline', opusBackend(), 'threads', pool.backends());
    await until(() => calls.every((c, k) => c.got.packets.length === refs[k]!.packets.length), { what: 'all packets', timeoutMs: 120_000, everyMs: 2 });
    for (const [k, c] of calls.entries()) {
      t.log(k, c.got.packets.length, refs[k]!.packets.length, c.got.packets.map((p, i) => (p.join() === refs[k]!.packets[i]?.join() ? 1 : 0)).join(''), refs.map((r) => r.packets.findIndex((p) => p.join() === c.got.packets[0]!.join())));
      t.deepEqual(c.got.packets, refs[k]!.packets, `call ${k}: byte-identical Opus packets in order`);
      t.is(c.got.tags, 5, 'the tag comes back with its packets');
    }
    // decode: the reference packets of each call through its channel's sink, split over several turns
    const allOps = calls.map((_, k) => decodeOps(refs[k]!.packets.map((p) => Uint8Array.from(p))));
    for (let i = 0; i < allOps[0]!.length; i++) {
      for (const [k, c] of calls.entries()) {
        const o = allOps[k]![i];
        if (o !== undefined) feed(c.ch!, o);
      }
      if (i % 9 === 0) await new Promise((r) => setImmediate(r));
    }
    await until(() => calls.every((c, k) => c.got.pcm.length === refs[k]!.pcm.length), { what: 'all decoded audio', timeoutMs: 120_000, everyMs: 2 });
    for (const [k, c] of calls.entries()) {
      t.is(c.got.pcm.length, refs[k]!.pcm.length);
      t.true(c.got.pcm.every((s, i) => s === refs[k]!.pcm[i]), `call ${k}: sample-exact decoded + resampled audio`);
      t.is(c.got.corrupt, 1, 'the corrupt packet is counted');
      t.is(c.got.corrupt, refs[k]!.corrupt);
    }
    t.true(pool.messages().every((m) => m > 0 && m < 60 * 3), `batched: ${pool.messages().join(', ')} messages for ${60 * 3} encodes`);
    for (const c of calls) c.ch!.close();
    t.deepEqual(pool.load(), [0, 0]);
  } finally {
    await pool.close();
  }
});

test('the jitter buffer feeding a thread gives the same audio as the jitter buffer decoding inline', async (t) => {
  const pool = new CodecPool(1);
  try {
    const enc = new CallCodec();
    const packets = agentBlocks(40, 7).flatMap((b) => enc.encode(b));
    // arrival order with a swap, a duplicate, a loss and a pause (timestamp jump)
    const order = [0, 1, 3, 2, 4, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19];
    const rtp = order.map((i) => parseRtp(buildRtp({ payloadType: 111, sequence: 100 + i, timestamp: i * 960 + (i >= 15 ? 960 * 10 : 0), ssrc: 9, payload: packets[i]! }))!);
    let now = 0;
    const clock = { now: () => now };
    const inlineOut: number[] = [];
    const ref = new CallCodec();
    const jbInline = new JitterBuffer(ref.sink((pcm) => inlineOut.push(...pcm)), null, clock);
    const { h, got } = collector();
    const ch = pool.open(h);
    const jbThread = new JitterBuffer(ch.sink, null, clock);
    for (const p of rtp) {
      now += 20;
      jbInline.push(p);
      jbThread.push(p);
    }
    await until(() => got.pcm.length === inlineOut.length, { what: 'thread output', timeoutMs: 120_000, everyMs: 2 });
    t.true(inlineOut.length > 16_000 * 0.3);
    t.deepEqual(got.pcm, inlineOut);
    t.deepEqual(jbThread.stats, jbInline.stats);
    jbInline.close();
    jbThread.close();
    ch.close();
  } finally {
    await pool.close();
  }
});

test('a codec worker that dies (killed, or crashing) is replaced: its calls go on there (lost work counted), other calls untouched; too many deaths → inline', async (t) => {
  const pool = new CodecPool(2);
  try {
    const a = { ...collector(), blocks: agentBlocks(40, 3) };
    const b = { ...collector(), blocks: agentBlocks(40, 4) };
    const cha = pool.open(a.h);
    const chb = pool.open(b.h);
    const wa = pool.workerOf(cha)!;
    t.not(wa, pool.workerOf(chb));
    for (let i = 0; i < 10; i++) {
      cha.encode(a.blocks[i]!);
      chb.encode(b.blocks[i]!);
    }
    await until(() => a.got.packets.length >= 9 && b.got.packets.length >= 9, { what: 'first packets', timeoutMs: 120_000, everyMs: 2 });
    // work in flight when the thread goes
    for (let i = 10; i < 20; i++) {
      cha.encode(a.blocks[i]!);
      chb.encode(b.blocks[i]!);
      cha.sink.conceal();
    }
    await new Promise((r) => {
      wa.once('exit', r);
      wa.kill('SIGKILL');
    });
    await until(() => pool.workerOf(cha) !== wa, { what: 'replacement thread', timeoutMs: 120_000, everyMs: 2 });
    t.is(cha.mode, 'thread');
    const before = a.got.packets.length;
    for (let i = 20; i < 40; i++) {
      cha.encode(a.blocks[i]!);
      chb.encode(b.blocks[i]!);
    }
    await until(() => b.got.packets.length === inlineReference(b.blocks).packets.length && a.got.packets.length >= before + 18, { what: 'packets after the death', timeoutMs: 120_000, everyMs: 2 });
    t.deepEqual(b.got.packets, inlineReference(b.blocks).packets, 'the call on the other thread is untouched');
    const accounted = a.got.packets.length + a.got.lost;
    t.true(accounted >= 37 && accounted <= 40, `every frame of the dead thread's call is sent or counted lost (${a.got.packets.length} + ${a.got.lost})`);
    t.true(a.got.pcmLost === 0 || a.got.pcmLost === 10, `caller frames in flight: all decoded or all counted lost (${a.got.pcmLost})`);
    if (a.got.pcmLost) t.is(a.got.pcm.length, 10 * 320, 'lost caller frames come back as silence of their length');

    // a thread that crashes (uncaught error inside it), three more times within the window: the pool gives up on threads
    for (let k = 0; k < 3; k++) {
      const w = pool.workerOf(cha)!;
      w.send({ t: 'crash' });
      await until(() => pool.workerOf(cha) !== w, { what: `death ${k + 2} noticed`, timeoutMs: 120_000, everyMs: 2 });
    }
    t.is(cha.mode, 'inline');
    t.is(chb.mode, 'inline');
    t.truthy(pool.broken);
    const n = a.got.packets.length;
    for (const blk of agentBlocks(3, 5)) cha.encode(blk);
    t.is(a.got.packets.length, n + 3, 'inline: a fresh codec sends every whole 20 ms frame at once (no resampler look-ahead any more)');
    const c = pool.open(collector().h);
    t.is(c.mode, 'inline', 'new calls open inline too');
    for (const ch of [cha, chb, c]) ch.close();
  } finally {
    await pool.close();
  }
});

test('decode on the event loop, encode on a worker (WEBRTC_CODEC_DECODE=inline): packets identical to inline, caller audio decoded at once, a dead pool keeps the decoder', async (t) => {
  const pool = new CodecPool(1, undefined, true);
  try {
    const a = { ...collector(), blocks: agentBlocks(40, 6) };
    const ch = pool.open(a.h);
    t.is(ch.mode, 'thread');
    const w = pool.workerOf(ch)!;
    t.truthy(w, 'encoding goes to a worker');
    for (const b of a.blocks) ch.encode(b, 1);
    const ref = inlineReference(a.blocks);
    // caller audio: every instruction is decoded before sink.packet() returns, no message involved
    const ops = decodeOps(ref.packets.map((p) => Uint8Array.from(p)));
    const half = Math.floor(ops.length / 2);
    for (const o of ops.slice(0, half)) feed(ch, o);
    const decodedBeforeAnyTurn = a.got.pcm.length;
    t.true(decodedBeforeAnyTurn > 0, 'decoded synchronously, on the event loop');
    await until(() => a.got.packets.length === ref.packets.length, { what: 'all packets from the worker', timeoutMs: 120_000, everyMs: 2 });
    t.deepEqual(a.got.packets, ref.packets, 'byte-identical Opus packets in order');
    t.is(a.got.tags, 40, 'tags come back with their packets');
    // the worker goes for good (four deaths): the call goes inline and its decoder carries on with the same state
    for (let k = 0; k < 4; k++) {
      const x = pool.workerOf(ch)!;
      x.send({ t: 'crash' });
      await until(() => pool.workerOf(ch) !== x, { what: `death ${k + 1} noticed`, timeoutMs: 120_000, everyMs: 2 });
    }
    t.is(ch.mode, 'inline');
    for (const o of ops.slice(half)) feed(ch, o);
    t.is(a.got.pcm.length, ref.pcm.length);
    t.true(a.got.pcm.every((s, i) => s === ref.pcm[i]), 'sample-exact caller audio across the fall-back: the decoder state was kept');
    t.is(a.got.pcmLost, 0, 'no caller frame was ever in flight');
    ch.close();
  } finally {
    await pool.close();
  }
});
