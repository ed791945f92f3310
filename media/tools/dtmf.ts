// The sendDtmf tool: the LLM presses keys on the phone keypad (to get through a phone menu). One function with one
// parameter, `digits` — `0-9 * #`, `w` for a half-second pause, at most 32 — and nothing added to the system prompt.
// How the keys reach the line is the call's business (ToolRunContext.sendDtmf: in-band tones through the
// transport, or the carrier's DTMF API on the carriers that have one); the result tells the LLM what was sent.
import { SEND_DTMF_DESCRIPTION } from '../../core/agent-config/schema.ts';
import type { RuntimeTool, ToolRunContext } from './runtime.ts';

export const MAX_DTMF_KEYS = 32;
const DIGITS = /^[0-9*#w]+$/;

export type DtmfSender = (digits: string) => Promise<{ via: 'in-band' | 'carrier' }>;

/** What the LLM sent, normalised (spaces and dashes dropped, `W` as `w`), or why it cannot be sent. */
export function parseDigits(raw: unknown): { digits: string } | { error: string } {
  if (typeof raw !== 'string') return { error: 'digits is required: a string of the keys 0-9, * and #, with w for a half-second pause.' };
  const digits = raw.replace(/[\s-]+/g, '').replace(/W/g, 'w');
  if (!digits || !DIGITS.test(digits)) return { error: `'${raw.slice(0, 64)}' cannot be dialled: use only the keys 0-9, * and #, and w for a half-second pause.` };
  if (digits.length > MAX_DTMF_KEYS) return { error: `At most ${MAX_DTMF_KEYS} keys can be sent at once; send them in parts.` };
  if (!/[^w]/.test(digits)) return { error: 'digits holds only pauses: name the keys to press.' };
  return { digits };
}

export function sendDtmfTool(ctx: Pick<ToolRunContext, 'sendDtmf' | 'logger'>, name: string, description: string): RuntimeTool {
  return {
    spec: {
      name,
      description: description || SEND_DTMF_DESCRIPTION,
      parameters: {
        type: 'object',
        properties: {
          digits: { type: 'string', description: 'The keys to press in order: 0-9, * and #; w waits half a second.', pattern: `^[0-9*#w]{1,${MAX_DTMF_KEYS}}$` },
        },
        required: ['digits'],
      },
    },
    kind: 'sendDtmf',
    messages: [],
    messagesOrder: 'random',
    async run(args) {
      const parsed = parseDigits(args.digits);
      if ('error' in parsed) return { status: 'failed', content: parsed.error };
      if (!ctx.sendDtmf) return { status: 'failed', content: 'This call has no keypad: no keys were sent.' };
      try {
        const { via } = await ctx.sendDtmf(parsed.digits);
        ctx.logger.info({ tool: name, digits: parsed.digits, via }, 'keys sent');
        return { status: 'success', content: `Pressed ${parsed.digits} on the keypad (${via === 'carrier' ? 'sent by the phone carrier' : 'as tones on the line'}).` };
      } catch (err) {
        ctx.logger.warn({ tool: name, err }, 'keys could not be sent');
        return { status: 'failed', content: `The keys could not be sent: ${(err as Error).message}` };
      }
    },
  };
}
