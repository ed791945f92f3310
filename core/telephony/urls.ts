// Every URL handed to a carrier, built from PUBLIC_URL (config.publicUrl / config.baseUrl). Media-stream URLs use
// wss when PUBLIC_URL is https (ws otherwise).
import type { Config } from '../config.ts';
import { smartfloStreamSig } from './signing.ts';

type UrlConfig = Pick<Config, 'baseUrl' | 'SIGNING_SECRET' | 'DATA_DIR'>;

const wsBase = (config: Pick<Config, 'baseUrl'>) => config.baseUrl.replace(/^http/, 'ws');

export const twilioStreamUrl = (config: Pick<Config, 'baseUrl'>, callId: string) => `${wsBase(config)}/telephony/twilio/stream/${callId}`;
export const twilioAnswerUrl = (config: Pick<Config, 'baseUrl'>, callId: string) => `${config.baseUrl}/telephony/twilio/answer/${callId}`;
export const twilioStatusUrl = (config: Pick<Config, 'baseUrl'>, callId: string) => `${config.baseUrl}/telephony/twilio/status/${callId}`;
export const twilioAmdUrl = (config: Pick<Config, 'baseUrl'>, callId: string) => `${config.baseUrl}/telephony/twilio/amd/${callId}`;
export const twilioRecordingUrl = (config: Pick<Config, 'baseUrl'>, callId: string) => `${config.baseUrl}/telephony/twilio/recording/${callId}`;
/** A Twilio number's VoiceUrl (inbound calls) and its StatusCallback. */
export const twilioVoiceUrl = (config: Pick<Config, 'baseUrl'>) => `${config.baseUrl}/telephony/twilio/voice`;
export const twilioVoiceStatusUrl = (config: Pick<Config, 'baseUrl'>) => `${config.baseUrl}/telephony/twilio/voice-status`;

/** The static signed stream URL pasted into the Smartflo portal (`voice_bot_wss_url`). */
export function smartfloStreamUrl(config: UrlConfig, configId: number): string {
  return `${wsBase(config)}/telephony/smartflo/stream/${configId}?sig=${smartfloStreamSig(config, configId)}`;
}

/** Replace scheme, host and port of a carrier's default REST base with an override; the path stays the carrier's. */
export function withBase(defaultUrl: string, override: string | undefined): string {
  if (!override) return defaultUrl;
  const d = new URL(defaultUrl);
  const o = new URL(override);
  d.protocol = o.protocol;
  d.host = o.host;
  return d.toString().replace(/\/+$/, '');
}
