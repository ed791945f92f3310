// Voicemail (answering-machine) detection on outbound phone calls whose agent has `voicemailDetection` on: a session
// observer that watches the caller side and ends the call with endedReason `voicemail` on a machine. Two sources,
// never both: carrier AMD (Twilio async AMD; the verdict arrives from the api process as `answered_by` on the row and
// a NOTIFY, see media/transports/carriers/events.ts; `machine_*` and `fax` are a machine), else heuristics over the first
// seconds of the call, after Asterisk AMD and jambonz (docs/telephony.md): final transcripts of speech started in the
// window reaching `machineWords` (a recorded greeting talks on, a person says "hello?" and waits); one run of caller
// speech longer than `greetingMs` (longer than Asterisk's, since our VAD bridges the pauses between words and
// clauses; a person's "hello, this is Sam, who's calling?" is about 2 s); no caller speech within `initialSilenceMs`,
// only when the agent waits for the caller (speakFirst = user; when the agent speaks first a person often listens).
// A `windowMs` window that ends with the caller quiet and none of these → a person; the detector stops.
import type { Logger } from '../../core/logger.ts';
import type { CallSession, EndedReason, SessionObserver } from './call-session.ts';

export interface VoicemailOptions {
  /** carrier AMD is running for this call: wait for its verdict instead of the heuristics */
  amd: null | {
    /** the verdict if it is already known (row column), else null */
    current(): Promise<string | null>;
    /** subscribe to the verdict; returns the unsubscribe */
    subscribe(cb: (answeredBy: string) => void): Promise<() => void>;
  };
  speakFirst: 'agent' | 'user';
  logger: Logger;
  /** what was decided and why (kept on the call's logs) */
  onVerdict?(v: VoicemailVerdict): void;
  machineWords?: number;
  greetingMs?: number;
  initialSilenceMs?: number;
  windowMs?: number;
}

export interface VoicemailVerdict {
  result: 'machine' | 'human';
  by: 'amd' | 'words' | 'long_greeting' | 'initial_silence' | 'window';
  answeredBy?: string;
  words?: number;
  ms?: number;
}

export function isMachine(answeredBy: string): boolean {
  const a = answeredBy.toLowerCase();
  return a.startsWith('machine') || a === 'fax';
}

export class VoicemailDetector implements SessionObserver {
  private session: CallSession | null = null;
  private decided = false;
  private t0 = 0;
  private words = 0;
  private speaking = false;
  private speechAt = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private unsubscribe: (() => void) | null = null;
  private readonly o: Required<Omit<VoicemailOptions, 'amd' | 'onVerdict'>> & Pick<VoicemailOptions, 'amd' | 'onVerdict'>;

  constructor(opts: VoicemailOptions) {
    this.o = { machineWords: 9, greetingMs: 4000, initialSilenceMs: 2500, windowMs: 5000, ...opts };
  }

  started(session: CallSession): void {
    this.session = session;
    this.t0 = Date.now();
    if (this.o.amd) {
      const amd = this.o.amd;
      void (async () => {
        try {
          this.unsubscribe = await amd.subscribe((a) => this.onAmd(a));
          if (this.decided) this.unsubscribe?.();
          const now = await amd.current();
          if (now) this.onAmd(now);
        } catch (err) {
          this.o.logger.warn({ err }, 'voicemail detection: AMD verdicts unavailable');
        }
      })();
      return;
    }
    if (this.o.speakFirst === 'user') {
      this.after(this.o.initialSilenceMs, () => {
        if (!this.speaking && this.speechAt === 0) this.decide({ result: 'machine', by: 'initial_silence', ms: this.o.initialSilenceMs });
      });
    }
    this.after(this.o.windowMs, () => this.windowEnd());
  }

  userSpeech(speaking: boolean): void {
    if (this.decided || this.o.amd) return;
    this.speaking = speaking;
    if (!speaking) {
      if (Date.now() - this.t0 >= this.o.windowMs) this.windowEnd();
      return;
    }
    const at = Date.now();
    if (this.speechAt === 0) this.speechAt = at;
    if (at - this.t0 > this.o.windowMs) return;
    this.after(this.o.greetingMs, () => {
      if (this.speaking && this.runStart === at) this.decide({ result: 'machine', by: 'long_greeting', ms: Date.now() - at });
    });
    this.runStart = at;
  }
  private runStart = 0;

  userTurn(text: string): void {
    if (this.decided || this.o.amd) return;
    this.words += text.trim().split(/\s+/).filter(Boolean).length;
    if (this.words >= this.o.machineWords) this.decide({ result: 'machine', by: 'words', words: this.words });
    else if (!this.speaking && Date.now() - this.t0 >= this.o.windowMs) this.windowEnd();
  }

  ended(_reason: EndedReason): void {
    this.decided = true;
    this.stop();
  }

  private windowEnd(): void {
    if (this.decided || this.speaking) return; // the caller is still talking: their words decide
    this.decide({ result: 'human', by: 'window', words: this.words });
  }

  private onAmd(answeredBy: string): void {
    if (this.decided) return;
    const a = answeredBy.toLowerCase();
    if (isMachine(a)) this.decide({ result: 'machine', by: 'amd', answeredBy: a });
    else if (a === 'human') this.decide({ result: 'human', by: 'amd', answeredBy: a });
    // 'unknown': AMD could not tell; the call goes on as if a person answered
  }

  private decide(v: VoicemailVerdict): void {
    if (this.decided) return;
    this.decided = true;
    this.stop();
    this.o.logger.info(v, 'voicemail detection verdict');
    this.o.onVerdict?.(v);
    if (v.result === 'machine' && this.session && !this.session.isEnded) void this.session.end('voicemail');
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.decided) fn();
    }, ms);
    this.timers.add(t);
  }

  private stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}
