// Who answered an outbound call, and what the call does about it: a session observer of calls whose agent has
// `voicemailDetection` on (docs/telephony.md "Answering machines"). It decides human / voicemail / IVR (phone menu),
// then:
//   voicemail, no voicemailMessage → the call ends with endedReason `voicemail`;
//   voicemail with a message → the agent stops talking (session.windUp), the supervisor waits for the end of the
//     greeting — the carrier's end-of-message (Twilio DetectMessageEnd `machine_end_*`, Telnyx greeting ended,
//     Vonage beep), else a beep heard in the audio (media/audio/beep.ts) or a silence after the greeting, at most
//     `maxGreetingWaitMs` — speaks the message (not interruptible), and the call ends `voicemail`;
//   IVR with an agent that can press keys (a sendDtmf tool) → menu sentences are joined into one turn until the
//     menu pauses, and no idle prompts while on hold (session.holdTurns);
//   human → nothing more.
//
// Where the decision comes from. Carrier AMD, where the carrier has it, decides human or machine ('unknown' leaves
// it to the audio). Otherwise — and, on a machine, to tell a menu from a mailbox when the agent can press keys —
// what the recogniser hears in the first seconds (classifyGreeting below: menu phrases → IVR, mailbox phrases →
// voicemail), a beep, a greeting reaching `machineWords` words (jambonz: ≥ 9), one run of speech longer than
// `greetingMs`, no speech within `initialSilenceMs` when the agent waits for the caller (Asterisk AMD's initial
// silence); a `windowMs` window that ends with the caller quiet and none of these → a person. The phrase rules act
// at once even while carrier AMD is pending (a mailbox that says "leave a message after the tone" is one); the
// weaker rules wait for the carrier when it has AMD.
import type { Logger } from '../../core/logger.ts';
import { BeepDetector } from '../audio/beep.ts';
import type { CallSession, EndedReason, SessionObserver } from './call-session.ts';

export type Answer = 'human' | 'voicemail' | 'ivr';

export interface AnswerVerdict {
  result: Answer;
  by: 'amd' | 'phrases' | 'words' | 'beep' | 'long_greeting' | 'initial_silence' | 'window';
  answeredBy?: string;
  words?: number;
  ms?: number;
}

/** What was done on a voicemail with a message (logs.voicemail). */
export interface VoicemailDrop {
  left: boolean;
  /** what ended the wait for the greeting */
  after: 'carrier' | 'beep' | 'silence' | 'timeout';
  waitedMs: number;
}

export interface AnswerOptions {
  /** carrier AMD runs for this call (its verdicts arrive as events), or null */
  amd: null | {
    current(): Promise<string | null>;
    subscribe(cb: (answeredBy: string, messageEnd: boolean) => void): Promise<() => void>;
    /** the carrier also reports the end of a machine's greeting (a silence in it is then no end) */
    messageEnd: boolean;
  };
  speakFirst: 'agent' | 'user';
  /** left after the beep (variables resolved by the session); null: hang up on a machine */
  voicemailMessage: string | null;
  /** the agent can press keys (sendDtmf): a machine may be a menu to get through */
  navigatesMenus: boolean;
  logger: Logger;
  onVerdict?(v: AnswerVerdict): void;
  /** after the message: the call ends once this resolves (its row marked first) */
  onVoicemail?(d: VoicemailDrop): void | Promise<void>;
  machineWords?: number;
  greetingMs?: number;
  initialSilenceMs?: number;
  windowMs?: number;
  /** a pause this long after the greeting ends it (no carrier end-of-message) */
  afterGreetingSilenceMs?: number;
  /** the same while the carrier's end-of-message may still come */
  carrierSilenceMs?: number;
  maxGreetingWaitMs?: number;
  /** a menu's pause that ends a joined caller turn */
  menuPauseMs?: number;
}

// ── what the recogniser heard ────────────────────────────────────────────────────────────────────────────────
const MENU = [
  /\bpress(?:ing)?\s+(?:the\s+)?(?:\d|one|two|three|four|five|six|seven|eight|nine|zero|star|pound|hash)\b/,
  /\b(?:for|to)\s+[a-z ,']{2,40}\s+(?:press|dial|say)\b/,
  /\b(?:main\s+)?menu\b/,
  /\bmenu options?\b|\boptions? have changed\b|\blisten carefully\b/,
  /\byour call (?:is|may be) (?:important|recorded|monitored)\b/,
  /\b(?:please\s+)?(?:hold|stay on the line)\b.*\b(?:next available|representative|agent)\b/,
  /\bextension\b|\bdial by name\b|\bpara espa[nñ]ol\b/,
];
const MAILBOX = [
  /\bleave (?:a|an|your|my|me a|us a|us your)?\s*(?:brief\s+|short\s+|quick\s+)?(?:message|name|number)\b/,
  /\bmissed your call\b/,
  /\b(?:after|at) the (?:tone|beep)\b/,
  /\bvoice\s*mail\b|\bmail\s*box\b|\banswering machine\b/,
  /\b(?:is|are) (?:not available|unavailable)\b|\bcan(?:'t| ?not) (?:come to|take|get to) (?:the|your|my) (?:phone|call)\b/,
  /\byou(?:'ve| have) reached\b|\bnot here right now\b|\brecord your message\b|\bget back to you\b/,
];

/** A menu or a mailbox from the words of a greeting (lower-cased, punctuation ignored), or null. */
export function classifyGreeting(text: string): 'ivr' | 'voicemail' | null {
  const t = ` ${text.toLowerCase().replace(/[^a-z0-9ñ' ]+/g, ' ').replace(/\s+/g, ' ')} `;
  const menu = MENU.filter((r) => r.test(t)).length;
  const mailbox = MAILBOX.filter((r) => r.test(t)).length;
  if (menu === 0 && mailbox === 0) return null;
  return menu > mailbox ? 'ivr' : 'voicemail';
}

type Phase = 'classifying' | 'machine' | 'done' | 'awaiting_end' | 'leaving';

export class AnswerSupervisor implements SessionObserver {
  private session: CallSession | null = null;
  private phase: Phase = 'classifying';
  private t0 = 0;
  private heard = '';
  private words = 0;
  private speaking = false;
  private speechAt = 0;
  private runStart = 0;
  private over = false;
  private beeps: BeepDetector | null = new BeepDetector(16000);
  /** the carrier said the greeting is over before we were waiting for it */
  private messageEnded = false;
  private waitFrom = 0;
  private silenceTimer: NodeJS.Timeout | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private unsubscribe: (() => void) | null = null;
  private readonly o: Required<Omit<AnswerOptions, 'amd' | 'onVerdict' | 'onVoicemail' | 'voicemailMessage'>> &
    Pick<AnswerOptions, 'amd' | 'onVerdict' | 'onVoicemail' | 'voicemailMessage'>;

  constructor(opts: AnswerOptions) {
    this.o = {
      machineWords: 9, greetingMs: 4000, initialSilenceMs: 2500, windowMs: 5000,
      afterGreetingSilenceMs: 1500, carrierSilenceMs: 5000, maxGreetingWaitMs: 30_000, menuPauseMs: 2000,
      ...opts,
    };
  }

  started(session: CallSession): void {
    this.session = session;
    this.t0 = Date.now();
    if (this.o.amd) {
      const amd = this.o.amd;
      void (async () => {
        try {
          this.unsubscribe = await amd.subscribe((a, end) => this.onAmd(a, end));
          if (this.over) this.unsubscribe?.();
          const now = await amd.current();
          if (now) this.onAmd(now, now.toLowerCase().startsWith('machine_end_'));
        } catch (err) {
          this.o.logger.warn({ err }, 'answer supervision: AMD verdicts unavailable');
        }
      })();
    } else if (this.o.speakFirst === 'user') {
      this.after(this.o.initialSilenceMs, () => {
        if (this.phase === 'classifying' && !this.speaking && this.speechAt === 0) this.decide({ result: 'voicemail', by: 'initial_silence', ms: this.o.initialSilenceMs });
      });
    }
    this.after(this.o.windowMs, () => this.windowEnd());
  }

  callerAudio(pcm: Int16Array): void {
    if (!this.beeps || this.over) return;
    const beeps = this.beeps.push(pcm);
    if (!beeps.length) return;
    const b = beeps[beeps.length - 1]!;
    this.o.logger.info({ hz: b.freq, ms: b.ms }, 'beep heard');
    if (this.phase === 'awaiting_end') return this.leave('beep');
    if (this.phase === 'classifying' || this.phase === 'machine') {
      this.messageEnded = true; // the mailbox is recording now
      this.decide({ result: 'voicemail', by: 'beep', ms: Date.now() - this.t0 });
    }
  }

  userSpeech(speaking: boolean): void {
    this.speaking = speaking;
    if (this.phase === 'awaiting_end') {
      if (speaking) this.clearSilence();
      else this.armSilence();
      return;
    }
    if (this.phase !== 'classifying' || this.o.amd) {
      if (!speaking && this.phase === 'machine' && Date.now() - this.t0 >= this.o.windowMs) this.windowEnd();
      return;
    }
    if (!speaking) {
      if (Date.now() - this.t0 >= this.o.windowMs) this.windowEnd();
      return;
    }
    const at = Date.now();
    if (this.speechAt === 0) this.speechAt = at;
    if (at - this.t0 > this.o.windowMs) return;
    this.runStart = at;
    this.after(this.o.greetingMs, () => {
      if (this.phase === 'classifying' && this.speaking && this.runStart === at) this.decide({ result: 'voicemail', by: 'long_greeting', ms: Date.now() - at });
    });
  }

  userTurn(text: string): void {
    if (this.phase !== 'classifying' && this.phase !== 'machine') return;
    this.heard = `${this.heard} ${text}`.trim();
    this.words += text.trim().split(/\s+/).filter(Boolean).length;
    const kind = classifyGreeting(this.heard);
    if (kind) return this.decide({ result: kind, by: 'phrases', words: this.words });
    if (this.phase === 'machine') return; // a machine, not yet told apart: the window decides
    if (!this.o.amd && this.words >= this.o.machineWords) return this.decide({ result: 'voicemail', by: 'words', words: this.words });
    if (!this.speaking && Date.now() - this.t0 >= this.o.windowMs) this.windowEnd();
  }

  ended(_reason: EndedReason): void {
    this.over = true;
    this.stop();
  }

  private windowEnd(): void {
    if (this.speaking) return; // the caller is still talking: their words decide
    if (this.phase === 'machine') return this.decide({ result: 'voicemail', by: 'amd', words: this.words });
    if (this.phase !== 'classifying' || this.o.amd) return; // the carrier decides
    this.decide({ result: 'human', by: 'window', words: this.words });
  }

  private onAmd(answeredBy: string, messageEnd: boolean): void {
    const a = answeredBy.toLowerCase();
    const machine = a.startsWith('machine') || a === 'fax';
    if (messageEnd && machine) this.messageEnded = true;
    if (this.phase === 'awaiting_end') {
      if (messageEnd) this.leave('carrier');
      return;
    }
    if (this.phase !== 'classifying' && this.phase !== 'machine') return;
    if (a === 'human' && this.phase === 'classifying') return this.decide({ result: 'human', by: 'amd', answeredBy: a });
    if (!machine) return; // 'unknown': the carrier could not tell; the audio still can (phrases)
    if (a === 'fax' || !this.o.navigatesMenus || this.phase === 'machine' || this.messageEnded) {
      return this.decide({ result: 'voicemail', by: 'amd', answeredBy: a });
    }
    // a machine, and the agent can press keys: a menu or a mailbox? What it says decides (the window at most).
    this.phase = 'machine';
    this.o.logger.info({ answeredBy: a }, 'carrier AMD: a machine; telling a menu from a mailbox by what it says');
  }

  private decide(v: AnswerVerdict): void {
    if (this.phase !== 'classifying' && this.phase !== 'machine') return;
    this.phase = 'done';
    this.clearTimers();
    this.o.logger.info(v, 'answer supervision verdict');
    this.o.onVerdict?.(v);
    const session = this.session;
    if (!session || session.isEnded) return;
    if (v.result === 'ivr') {
      this.beeps = null;
      if (this.o.navigatesMenus) session.holdTurns(this.o.menuPauseMs);
      return;
    }
    if (v.result === 'human') {
      this.beeps = null;
      this.stop();
      return;
    }
    if (!this.o.voicemailMessage) {
      void session.end('voicemail');
      return;
    }
    session.windUp();
    this.phase = 'awaiting_end';
    this.waitFrom = Date.now();
    if (this.messageEnded) return this.leave(v.by === 'beep' ? 'beep' : 'carrier');
    this.after(this.o.maxGreetingWaitMs, () => this.leave('timeout'));
    if (!this.speaking) this.armSilence();
  }

  private armSilence(): void {
    this.clearSilence();
    const ms = this.o.amd?.messageEnd ? this.o.carrierSilenceMs : this.o.afterGreetingSilenceMs;
    this.silenceTimer = this.after(ms, () => this.leave('silence'));
  }

  private clearSilence(): void {
    if (this.silenceTimer) {
      clearTimeout(this.silenceTimer);
      this.timers.delete(this.silenceTimer);
      this.silenceTimer = null;
    }
  }

  /** The greeting is over: the message, then the end of the call. */
  private leave(after: VoicemailDrop['after']): void {
    if (this.phase !== 'awaiting_end') return;
    this.phase = 'leaving';
    this.stop();
    const session = this.session;
    if (!session || session.isEnded || !this.o.voicemailMessage) return;
    const drop: VoicemailDrop = { left: true, after, waitedMs: Date.now() - this.waitFrom };
    this.o.logger.info(drop, 'leaving the voicemail message');
    const speech = session.say(session.resolve(this.o.voicemailMessage), 'voicemail', false);
    void speech.done
      .then((state) => this.o.onVoicemail?.({ ...drop, left: state === 'played' }))
      .catch((err: unknown) => this.o.logger.warn({ err }, 'voicemail drop not recorded'))
      .finally(() => {
        if (!session.isEnded) void session.end('voicemail');
      });
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.over) fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.silenceTimer = null;
  }

  private stop(): void {
    this.clearTimers();
    this.beeps = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}

/** The supervision a call's snapshot asks for (null: none), its verdicts and drop kept on the call's logs. */
export function answerSupervisorFor(o: {
  snapshot: unknown;
  /** a web call (WebSocket, WebRTC): supervised only when the agent leaves messages or presses keys */
  web: boolean;
  amd: AnswerOptions['amd'];
  logger: Logger;
  /** merge into the call's logs (and add `tag` to its tags) */
  writeLogs(entry: Record<string, unknown>, tag?: string): Promise<void>;
}): AnswerSupervisor | null {
  const snap = (o.snapshot ?? {}) as { voicemailDetection?: unknown; voicemailMessage?: unknown; greeting?: { speakFirst?: unknown }; tools?: unknown };
  if (snap.voicemailDetection === false) return null;
  const message = typeof snap.voicemailMessage === 'string' && snap.voicemailMessage.trim() ? snap.voicemailMessage : null;
  const navigatesMenus = Array.isArray(snap.tools) && snap.tools.some((t) => !!t && typeof t === 'object' && (t as { type?: unknown }).type === 'sendDtmf');
  // a web call is a person in a browser unless the agent is built for phone lines it bridges to
  if (o.web && !message && !navigatesMenus) return null;
  return new AnswerSupervisor({
    amd: o.amd,
    speakFirst: snap.greeting?.speakFirst === 'user' ? 'user' : 'agent',
    voicemailMessage: message,
    navigatesMenus,
    logger: o.logger,
    onVerdict: (v) => void o.writeLogs({ voicemail_detection: v }),
    // tag voicemail_left: campaigns and GET /calls?tag=voicemail_left list the calls that left their message
    onVoicemail: (d) => o.writeLogs({ voicemail: d }, d.left ? 'voicemail_left' : undefined),
  });
}
