// bench/turn-taking: when does the caller's turn end, by VAD silence alone and with the Smart Turn model, side by
// side in one run. Caller utterances made here with eSpeak NG and the Piper voice, at 16 kHz and through the
// phone-line simulation (media/audio/phone-line.ts): complete sentences, and sentences with a pause of 0.8–2 s where
// they are plainly unfinished (after "is", "for", "um", a comma in a number). Each clip streams in real time (20 ms
// frames; clips start STAGGER_MS apart) into the caller side of a call: the Silero VAD, then either nothing more
// (VAD-only: its 600 ms stop window ends the turn) or the turn model's policy (200 ms window → the model, 3 s cap;
// media/pipeline/turn/policy.ts) with the process-wide Smart Turn pool. Reported per voice and line:
//  - premature ends of turn: paused clips whose turn ended inside the pause (% of pauses);
//  - end of speech → end of turn for complete sentences, p50 / p99 (the end of speech is the last sample above
//    −40 dBFS of the clip, measured on the clip itself);
//  - the model's CPU per decision (its helper's CPU for features and inference) and its wait (request → answer);
//  - what the model got wrong, clip by clip (it was trained on human speech; eSpeak is not).
// Then the turn model's CPU per call and the calls per core it allows. Needs the Smart Turn model (setup) and, for
// the Piper voice, the Piper model; eSpeak NG on PATH. Env: VOICES=espeak,piper LINES=clean,phone STAGGER_MS=300.
//
//   node_modules/.bin/node --import tsx bench/turn-taking.ts
import os from 'node:os';
import { createVad } from '../media/vad/index.ts';
import { TurnPolicyStage, VAD_ONLY_STOP_MS } from '../media/pipeline/turn/policy.ts';
import { VadStage } from '../media/pipeline/input-stages.ts';
import { Collector, Pipeline } from '../media/pipeline/processor.ts';
import { closeSmartTurn, createSmartTurn } from '../media/services/turn/smart-turn.ts';
import { createLocalTts } from '../media/services/tts/local.ts';
import { closePiper } from '../media/services/tts/piper.ts';
import { resample } from '../core/audio/resample.ts';
import { concatInt16 } from '../media/audio/pcm.ts';
import { phoneLine } from '../media/audio/phone-line.ts';
import { f1, pct } from './_stats.ts';

const COMPLETE = [
  'What time do you open tomorrow?',
  'I would like to book a cleaning for Friday morning.',
  'Can I speak to Doctor Patel, please?',
  'My phone number is five five five, one two three four.',
  'I need to cancel my appointment.',
  'Do you accept my insurance?',
  'That works for me, thank you.',
  'Where is your office located?',
  'How much does whitening cost?',
  'Please call me back this afternoon.',
];
const PAUSED: Array<[string, string]> = [
  ['My phone number is five five five,', 'one two three four.'],
  ['I would like to book an appointment for', 'next Tuesday at three.'],
  ['Can you tell me, um,', 'what time you open tomorrow?'],
  ['The reason I am calling is', 'my tooth hurts.'],
  ['I was wondering if', 'you have anything this afternoon.'],
  ['My name is', 'Sarah Johnson.'],
  ['I need to, um,', 'move my appointment.'],
  ['Could you send the bill to', 'my email address?'],
  ['My date of birth is the fifth of', 'June, nineteen eighty.'],
  ['We would like two appointments, one for me and', 'one for my son.'],
];
const PAUSES_MS = [800, 1200, 1500, 2000];
const VOICES = (process.env.VOICES ?? 'espeak,piper').split(',');
const LINES = (process.env.LINES ?? 'clean,phone').split(',');
const STAGGER_MS = Number(process.env.STAGGER_MS ?? 300);
const TAIL_MS = 4500; // silence streamed after each clip: past the model's 3 s cap
const FRAME = 320;

const log = (m: string) => process.stdout.write(`${m}\n`);

async function synth(voice: string, text: string): Promise<Int16Array> {
  const tts = voice === 'piper' ? createLocalTts({ languages: ['en'], model: 'piper' }) : createLocalTts({ languages: ['en'], model: 'espeak-ng', wordsPerMinute: 150, binary: 'espeak-ng' });
  if (voice === 'piper' && tts.model !== 'piper') throw new Error('the Piper voice is not installed (run scripts/setup.sh)');
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
  return resample(concatInt16(parts), 24000, 16000);
}

/** First and last 10 ms block above −40 dBFS, in samples. */
function speechSpan(pcm: Int16Array): [number, number] {
  const block = 160;
  const thr = 32768 * 0.01;
  let first = -1;
  let last = -1;
  for (let o = 0; o + block <= pcm.length; o += block) {
    let e = 0;
    for (let i = o; i < o + block; i++) e += pcm[i]! * pcm[i]!;
    if (Math.sqrt(e / block) >= thr) {
      if (first < 0) first = o;
      last = o + block;
    }
  }
  return [Math.max(0, first), Math.max(0, last)];
}

interface Clip {
  name: string;
  pcm: Int16Array;
  /** ms into the clip: where speech ends, and for a paused clip where the pause starts and ends */
  speechEndMs: number;
  pause?: { fromMs: number; toMs: number };
}

async function makeClips(voice: string, line: string): Promise<Clip[]> {
  const lead = new Int16Array(16000 * 0.3);
  const clips: Clip[] = [];
  for (const text of COMPLETE) {
    const s = await synth(voice, text);
    const pcm = concatInt16([lead, s]);
    clips.push({ name: text, pcm, speechEndMs: (speechSpan(pcm)[1] / 16000) * 1000 });
  }
  for (let i = 0; i < PAUSED.length; i++) {
    const [a, b] = PAUSED[i]!;
    const pauseMs = PAUSES_MS[i % PAUSES_MS.length]!;
    // the pause goes inside the sentence said as one utterance (so the words before it keep the intonation of an
    // unfinished sentence): at the quietest 10 ms between words near where the first part, said alone, ends
    const [whole, first] = [await synth(voice, `${a} ${b}`), await synth(voice, a)];
    const [w0, w1] = speechSpan(whole);
    const [f0, f1] = speechSpan(first);
    const near = w0 + (f1 - f0);
    let cut = near;
    let quietest = Infinity;
    for (let o = Math.max(w0, near - 2400); o + 160 <= Math.min(w1, near + 2400); o += 160) {
      let e = 0;
      for (let k = o; k < o + 160; k++) e += whole[k]! * whole[k]!;
      if (e < quietest) {
        quietest = e;
        cut = o + 80;
      }
    }
    const pcm = concatInt16([lead, whole.subarray(w0, cut), new Int16Array((pauseMs / 1000) * 16000), whole.subarray(cut, w1), new Int16Array(3200)]);
    const fromMs = ((lead.length + cut - w0) / 16000) * 1000;
    clips.push({ name: `${a} … (${pauseMs} ms) … ${b}`, pcm, speechEndMs: fromMs + pauseMs + ((w1 - cut) / 16000) * 1000, pause: { fromMs, toMs: fromMs + pauseMs } });
  }
  return line === 'phone' ? clips.map((c) => ({ ...c, pcm: phoneLine(c.pcm, 16000) })) : clips;
}

interface Run {
  clip: Clip;
  mode: 'vad' | 'model';
  /** ms of audio streamed when each end of turn came */
  ends: number[];
  decisions: Array<{ atMs: number; complete: boolean; probability: number; cpuMs: number; waitMs: number; stale: boolean }>;
}

async function runAll(clips: Clip[]): Promise<Run[]> {
  const model = createSmartTurn();
  await model.ready();
  const runs: Run[] = [];
  const streams: Array<{ run: Run; pipeline: Pipeline; audio: Int16Array; at: number; startAt: number }> = [];
  let k = 0;
  for (const clip of clips) {
    for (const mode of ['vad', 'model'] as const) {
      const vad = await createVad();
      const run: Run = { clip, mode, ends: [], decisions: [] };
      const stream = { run, pipeline: null as unknown as Pipeline, audio: concatInt16([clip.pcm, new Int16Array((TAIL_MS / 1000) * 16000)]), at: 0, startAt: k++ * STAGGER_MS };
      const msNow = () => (stream.at / 16000) * 1000;
      const sink = new Collector((f) => {
        if (f.type === 'userStoppedSpeaking') run.ends.push(msNow());
      });
      const stages = [new VadStage(vad)];
      if (mode === 'model') {
        const policy = new TurnPolicyStage(model, { onDecision: (d) => run.decisions.push({ atMs: msNow(), ...d }) });
        await policy.activate(vad);
        stream.pipeline = new Pipeline([...stages, policy, sink], (err) => log(`pipeline error: ${String(err)}`));
      } else stream.pipeline = new Pipeline([...stages, sink], (err) => log(`pipeline error: ${String(err)}`));
      streams.push(stream);
      runs.push(run);
    }
  }
  // one 20 ms clock for every stream
  const t0 = performance.now();
  await new Promise<void>((done) => {
    let tick = 0;
    const step = () => {
      const now = performance.now() - t0;
      let live = 0;
      for (const s of streams) {
        if (now < s.startAt) {
          live++;
          continue;
        }
        // catch up to real time (a late tick sends the frames it owes)
        while (s.at < s.audio.length && (s.at / 16000) * 1000 <= now - s.startAt) {
          s.pipeline.push({ type: 'audioIn', pcm: s.audio.subarray(s.at, s.at + FRAME) });
          s.at += FRAME;
        }
        if (s.at < s.audio.length) live++;
      }
      if (!live) return done();
      tick++;
      setTimeout(step, Math.max(0, tick * 20 - (performance.now() - t0)));
    };
    step();
  });
  await new Promise((r) => setTimeout(r, 500));
  for (const s of streams) await s.pipeline.close();
  return runs;
}

const loadAtStart = os.loadavg();
log(`bench/turn-taking: ${COMPLETE.length} complete and ${PAUSED.length} paused sentences per voice and line; ${os.availableParallelism()} cores, load average ${loadAtStart.map((l) => l.toFixed(1)).join(' ')}`);
const allCpu: number[] = [];
const allWait: number[] = [];
let decisionsPerTurn: number[] = [];
const summary: string[] = [];
// for the threshold sweep: each paused clip's likeliest "complete" inside its pause, each finished sentence's first
// decision (decisions do not depend on the threshold; what the policy does with them does)
const pauseP: number[] = [];
const finishedP: number[] = [];
for (const voice of VOICES) {
  for (const line of LINES) {
    const clips = await makeClips(voice, line);
    const runs = await runAll(clips);
    log(`\n${voice}, ${line === 'phone' ? '8 kHz phone line' : '16 kHz'}:`);
    for (const mode of ['vad', 'model'] as const) {
      const mine = runs.filter((r) => r.mode === mode);
      const paused = mine.filter((r) => r.clip.pause);
      const premature = paused.filter((r) => r.ends.some((e) => e < r.clip.pause!.toMs));
      const complete = mine.filter((r) => !r.clip.pause);
      const delays = complete.flatMap((r) => (r.ends.length ? [r.ends[0]! - r.clip.speechEndMs] : []));
      const never = complete.filter((r) => !r.ends.length).length;
      const cpu = mine.flatMap((r) => r.decisions.map((d) => d.cpuMs));
      const wait = mine.flatMap((r) => r.decisions.map((d) => d.waitMs));
      if (mode === 'model') {
        for (const r of paused) pauseP.push(Math.max(0, ...r.decisions.filter((d) => !d.stale && d.atMs >= r.clip.pause!.fromMs && d.atMs < r.clip.pause!.toMs).map((d) => d.probability)));
        for (const r of complete) finishedP.push(r.decisions.find((d) => !d.stale)?.probability ?? 0);
        allCpu.push(...cpu);
        allWait.push(...wait);
        decisionsPerTurn = decisionsPerTurn.concat(mine.map((r) => r.decisions.length));
      }
      const label = mode === 'vad' ? `VAD only (${VAD_ONLY_STOP_MS} ms)` : 'Smart Turn';
      const row = `  ${label.padEnd(20)} premature ends ${premature.length}/${paused.length} (${f1((100 * premature.length) / paused.length)} %)  end of speech → end of turn p50 ${f1(pct(delays, 50))} ms, p99 ${f1(pct(delays, 99))} ms${never ? `, ${never} never ended` : ''}${cpu.length ? `  decision CPU p50 ${f1(pct(cpu, 50))} ms, p99 ${f1(pct(cpu, 99))} ms; wait p50 ${f1(pct(wait, 50))} ms` : ''}`;
      log(row);
      summary.push(`${voice}\t${line}\t${mode}\t${premature.length}/${paused.length}\t${f1(pct(delays, 50))}\t${f1(pct(delays, 99))}\t${f1(pct(cpu, 50))}`);
      if (mode === 'model') {
        for (const r of premature) log(`    premature: "${r.clip.name}" (p=${r.decisions.find((d) => d.complete && d.atMs < r.clip.pause!.toMs)?.probability.toFixed(2) ?? '?'})`);
        for (const r of complete) {
          const d0 = r.decisions.find((d) => !d.stale);
          if (d0 && !d0.complete) log(`    judged unfinished (ended by the cap or a later pause): "${r.clip.name}" (p=${d0.probability.toFixed(2)}, ended ${f1((r.ends[0] ?? NaN) - r.clip.speechEndMs)} ms after speech)`);
        }
      }
    }
  }
}
// the turn model's share of a call: its CPU per decision times the decisions per caller turn, at one turn every 6 s
const cpuP50 = pct(allCpu, 50);
const perTurn = decisionsPerTurn.reduce((a, n) => a + n, 0) / Math.max(1, decisionsPerTurn.length);
const TURN_EVERY_S = 6;
const share = (cpuP50 * perTurn) / (TURN_EVERY_S * 1000);
log(`\nSmart Turn over all runs: ${allCpu.length} decisions, CPU p50 ${f1(cpuP50)} ms, p99 ${f1(pct(allCpu, 99))} ms; wait p50 ${f1(pct(allWait, 50))} ms, p99 ${f1(pct(allWait, 99))} ms; ${perTurn.toFixed(2)} decisions per caller turn`);
log(`turn model per call (a caller turn every ${TURN_EVERY_S} s): ${(share * 100).toFixed(2)} % of a core, ${Math.floor(1 / share)} calls per core for the model alone`);
log(`load average: at start ${loadAtStart.map((l) => l.toFixed(1)).join(' ')}, at end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
// what another "complete" threshold would have done with the same decisions: a pause judged complete ends the turn
// inside it; a finished sentence judged unfinished waits for the cap
log('\nthreshold sweep (the same decisions): threshold · premature ends of the pauses · finished sentences left to the cap');
for (const th of [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98]) {
  const prem = pauseP.filter((p) => p >= th).length;
  const capped = finishedP.filter((p) => p < th).length;
  log(`  ${th.toFixed(2)}  ${prem}/${pauseP.length} (${f1((100 * prem) / pauseP.length)} %)  ${capped}/${finishedP.length} (${f1((100 * capped) / finishedP.length)} %)`);
}
if (process.env.TSV) log(summary.join('\n'));
await closeSmartTurn();
await closePiper();
