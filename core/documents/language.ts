// Language-aware full-text search: pick the PostgreSQL text-search configuration for a document's language.
// Detection uses franc-min (trigram model, ISO 639-3 codes); unknown or unsupported languages fall back to
// 'english' stemming for undetermined short Latin text and to 'simple' (no stemming, no stop words) otherwise.
import { franc } from 'franc-min';

/** ISO 639-3 → PostgreSQL built-in text search configuration. */
const CONFIG_BY_LANG: Record<string, string> = {
  eng: 'english', spa: 'spanish', fra: 'french', deu: 'german', ita: 'italian', por: 'portuguese', nld: 'dutch',
  rus: 'russian', swe: 'swedish', dan: 'danish', fin: 'finnish', nob: 'norwegian', nno: 'norwegian',
  hun: 'hungarian', ron: 'romanian', tur: 'turkish', arb: 'arabic', ind: 'indonesian', ell: 'greek',
  npi: 'nepali', tam: 'tamil', lit: 'lithuanian', gle: 'irish', hye: 'armenian', eus: 'basque', cat: 'catalan',
  srp: 'serbian', hin: 'hindi', ydd: 'yiddish',
};

/** Every configuration this module can return (all built into PostgreSQL ≥ 16). */
export const TS_CONFIGS: readonly string[] = [...new Set(['english', 'simple', ...Object.values(CONFIG_BY_LANG)])];

export function detectTsConfig(sample: string, available?: ReadonlySet<string>): string {
  const text = sample.slice(0, 5000);
  const lang = franc(text, { minLength: 20 });
  let cfg: string;
  if (lang === 'und') cfg = /^[\p{Script=Latin}\p{N}\p{P}\p{S}\s]*$/u.test(text) ? 'english' : 'simple';
  else cfg = CONFIG_BY_LANG[lang] ?? 'simple';
  if (available && !available.has(cfg)) return 'simple';
  return cfg;
}

export const isTsConfig = (s: string) => TS_CONFIGS.includes(s);
