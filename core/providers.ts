// Which engine providers can run on this install: the one registry both the api (POST /call and test calls
// refuse up front; GET /user/configurations/providers reports it) and media (media/services/index.ts builds
// engines only for ids listed here) read.
//
// A provider can run when (1) this install has an adapter for its id in that family and (2) the credential
// variables of its vendor are set (non-empty). Adding an adapter: its factory in media/services/index.ts and its
// id on one line of ADAPTERS below (a test checks that both lists agree).
import type { Family } from './catalog.ts';

/** Provider ids with an adapter on this install, per family. One line per id. */
export const ADAPTERS: Readonly<Record<Family, readonly string[]>> = {
  llm: [
    'openai',
    'groq',
    'anthropic',
    'google',
    'local',
  ],
  stt: [
    'local',
    'soniox',
    'deepgram',
    'assemblyai',
    'sarvam',
    'cartesia',
  ],
  tts: [
    'local',
    'elevenlabs',
    'cartesia',
    'inworld',
    'xai',
    'openai',
    'sarvam',
  ],
};

/** Config variables a vendor id needs (one vendor's key serves every family it appears in). `local` needs none. */
export const VENDOR_CREDENTIALS: Readonly<Record<string, readonly string[]>> = {
  openai: ['OPENAI_API_KEY'],
  groq: ['GROQ_API_KEY'],
  anthropic: ['ANTHROPIC_API_KEY'],
  google: ['GOOGLE_API_KEY'],
  soniox: ['SONIOX_API_KEY'],
  deepgram: ['DEEPGRAM_API_KEY'],
  assemblyai: ['ASSEMBLYAI_API_KEY'],
  sarvam: ['SARVAM_API_KEY'],
  cartesia: ['CARTESIA_API_KEY'],
  elevenlabs: ['ELEVENLABS_API_KEY'],
  xai: ['XAI_API_KEY'],
  inworld: ['INWORLD_API_KEY'],
  local: [],
};

export const FAMILIES: readonly Family[] = ['llm', 'stt', 'tts'];

export function hasAdapter(family: Family, id: string): boolean {
  return ADAPTERS[family].includes(id);
}

export function credentialEnvs(id: string): readonly string[] {
  return Object.hasOwn(VENDOR_CREDENTIALS, id) ? VENDOR_CREDENTIALS[id]! : [];
}

/** Only the names are read; values never leave this function. */
type ConfigLike = object;

/** The credential variables of a vendor that are unset or empty in this config. */
export function missingCredentials(config: ConfigLike, id: string): string[] {
  const values = config as Record<string, unknown>;
  return credentialEnvs(id).filter((name) => !(typeof values[name] === 'string' && (values[name] as string).length > 0));
}

export interface ProviderStatus {
  /** Every credential variable the vendor needs is set. */
  configured: boolean;
  /** This install has an adapter for the id in this family. */
  adapter: boolean;
  /** Both: a call on it can run here. */
  available: boolean;
}

export function providerStatus(config: ConfigLike, family: Family, id: string): ProviderStatus {
  const configured = missingCredentials(config, id).length === 0;
  const adapter = hasAdapter(family, id);
  return { configured, adapter, available: configured && adapter };
}

export type ProviderCheck =
  | { ok: true }
  | { ok: false; status: 501; reason: 'provider_not_supported'; detail: string }
  | { ok: false; status: 400; reason: 'missing_credentials'; detail: string };

/**
 * Can a call with these engines run here? A provider without an adapter (501) is reported before a missing
 * credential (400), families in the order llm, stt, tts.
 */
export function checkAgentProviders(config: ConfigLike, agent: Record<Family, { provider: string }>): ProviderCheck {
  for (const family of FAMILIES) {
    const id = agent[family].provider;
    if (!hasAdapter(family, id)) return { ok: false, status: 501, reason: 'provider_not_supported', detail: `${family} provider '${id}' is not implemented on this install` };
  }
  for (const family of FAMILIES) {
    const id = agent[family].provider;
    const missing = missingCredentials(config, id);
    if (missing.length > 0) return { ok: false, status: 400, reason: 'missing_credentials', detail: `${family} provider '${id}' needs ${missing.join(' and ')}` };
  }
  return { ok: true };
}
