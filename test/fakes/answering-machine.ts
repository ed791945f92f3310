// An answering machine on a fake carrier's media stream: it answers with a greeting (a tone: speech to the fake
// engines' energy VAD, words to their scripted STT), pauses, beeps (a 1 kHz tone, as mailboxes do), then records.
// It counts what it records: the agent audio played to the line after its beep.
import type { FakePhoneStream } from './carrier-phone.ts';
import type { FakeCarrierStream } from './twilio-media.ts';

type Line = Pick<FakeCarrierStream | FakePhoneStream, 'say' | 'tone' | 'silence' | 'heardMs'>;

export interface MachineRun {
  /** agent audio the line had played when the greeting started and when the beep ended (ms) */
  heardAtGreeting: number;
  heardAtBeep: number;
  /** agent audio recorded after the beep so far (ms) */
  recordedMs(): number;
}

export async function answeringMachine(line: Line, o: { greetingMs?: number; beepMs?: number; onBeep?: () => void | Promise<void> } = {}): Promise<MachineRun> {
  const heardAtGreeting = line.heardMs;
  await line.tone(o.greetingMs ?? 2500);
  await line.silence(400);
  const beepMs = o.beepMs ?? 500;
  const rate = 8000;
  const beep = Int16Array.from({ length: (beepMs * rate) / 1000 }, (_, i) => Math.round(9000 * Math.sin((2 * Math.PI * 1000 * i) / rate)));
  await line.say(beep, rate);
  const heardAtBeep = line.heardMs;
  await o.onBeep?.();
  return { heardAtGreeting, heardAtBeep, recordedMs: () => line.heardMs - heardAtBeep };
}
