// Every URL handed to a carrier, built from PUBLIC_URL (config.publicUrl / config.baseUrl). Media-stream URLs use
// wss when PUBLIC_URL is https (ws otherwise).
import type { Config } from '../config.ts';
import { smartfloStreamSig, streamToken } from './signing.ts';

type UrlConfig = Pick<Config, 'baseUrl' | 'SIGNING_SECRET' | 'DATA_DIR'>;

const wsBase = (config: Pick<Config, 'baseUrl'>) => config.baseUrl.replace(/^http/, 'ws');

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

// ── webhooks and media streams of one call (api/routes/carrier-webhooks.ts, media/transports/carriers/) ──────────
/** A per-call webhook of a carrier: `{base}/telephony/{carrier}/{hook}/{callId}`; `signed` adds our per-call token. */
export function carrierHookUrl(config: UrlConfig, carrier: string, hook: string, callId: string, signed = false): string {
  return `${config.baseUrl}/telephony/${carrier}/${hook}/${callId}${signed ? `?token=${streamToken(config, callId)}` : ''}`;
}
/** A number's inbound voice webhook (answer URL) and its status webhook. */
export const carrierVoiceUrl = (config: Pick<Config, 'baseUrl'>, carrier: string) => `${config.baseUrl}/telephony/${carrier}/voice`;
export const carrierVoiceStatusUrl = (config: Pick<Config, 'baseUrl'>, carrier: string) => `${config.baseUrl}/telephony/${carrier}/voice-status`;
/** The media stream of one call, authenticated by the signed per-call token in the query string. */
export function carrierStreamUrl(config: UrlConfig, carrier: string, callId: string): string {
  return `${wsBase(config)}/telephony/${carrier}/stream/${callId}?token=${streamToken(config, callId)}`;
}
