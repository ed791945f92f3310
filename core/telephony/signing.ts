// Signed values handed to carriers: the Twilio stream token (a <Parameter>, since Twilio drops query strings on
// <Stream url>), the Smartflo static stream signature (`voice_bot_wss_url` ?sig=, signed with the configuration id)
// and the Smartflo outbound `custom_identifier` ("{callId}.{sig}"). HMAC-SHA256 with the service signing secret;
// every purpose has its own prefix so one signature never verifies as another.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.ts';
import { signingSecret } from '../storage/signing.ts';

type SecretConfig = Pick<Config, 'SIGNING_SECRET' | 'DATA_DIR'>;

function sign(config: SecretConfig, purpose: string, value: string): string {
  return createHmac('sha256', signingSecret(config)).update(`telephony:${purpose}:${value}`).digest('base64url').slice(0, 32);
}

function same(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

/** Token for the Twilio media stream of one call (sent as <Parameter name="token">). */
export function streamToken(config: SecretConfig, callId: string): string {
  return sign(config, 'twilio-stream', callId);
}

export function verifyStreamToken(config: SecretConfig, callId: string, token: unknown): boolean {
  return typeof token === 'string' && token.length > 0 && same(token, streamToken(config, callId));
}

/** Signature of the Smartflo static stream URL of one configuration. */
export function smartfloStreamSig(config: SecretConfig, configId: number | string): string {
  return sign(config, 'smartflo-stream', String(configId));
}

export function verifySmartfloStreamSig(config: SecretConfig, configId: number | string, sig: unknown): boolean {
  return typeof sig === 'string' && sig.length > 0 && same(sig, smartfloStreamSig(config, configId));
}

/** Signature of a configuration-level URL of a carrier that signs nothing (Exotel's Voicebot applet URL). */
export function configUrlSig(config: SecretConfig, carrier: string, configId: number | string): string {
  return sign(config, `${carrier}-config`, String(configId));
}

export function verifyConfigUrlSig(config: SecretConfig, carrier: string, configId: number | string, sig: unknown): boolean {
  return typeof sig === 'string' && sig.length > 0 && same(sig, configUrlSig(config, carrier, configId));
}

/** "{callId}.{sig}": attached to a Smartflo click-to-call dial, returned in the stream's custom parameters. */
export function customIdentifier(config: SecretConfig, callId: string): string {
  return `${callId}.${sign(config, 'smartflo-call', callId)}`;
}

/** The call id of a genuine custom identifier; null when absent or forged. */
export function parseCustomIdentifier(config: SecretConfig, value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{32})$/i.exec(value.trim());
  if (!m) return null;
  const callId = m[1]!.toLowerCase();
  return same(m[2]!, sign(config, 'smartflo-call', callId)) ? callId : null;
}
