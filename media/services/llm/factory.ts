// One LLM adapter from a provider id and a model, for the live pipeline (media/services/index.ts) and for the
// one-shot callers outside a call (post-call analysis in activities/): the same adapters either way.
import type { Config } from '../../../core/config.ts';
import { llmEntry } from '../../../core/catalog.ts';
import type { LlmService } from '../types.ts';
import { AnthropicLlm } from './anthropic.ts';
import { GoogleLlm } from './google.ts';
import { createLocalLlm } from './local.ts';
import { OpenAiCompatLlm } from './openai.ts';

export class UnknownLlmProviderError extends Error {}

/** `model` null: the catalog's default model of the provider (`local`: the demo responder). */
export function createLlm(config: Config, provider: string, model: string | null): LlmService {
  const m = model ?? llmEntry(provider)?.defaultModel ?? provider;
  const key = (k: string | undefined) => (k ? { apiKey: k } : {});
  switch (provider) {
    case 'openai':
      return new OpenAiCompatLlm({ provider: 'openai', model: m, baseUrl: config.OPENAI_BASE_URL, ...key(config.OPENAI_API_KEY) });
    case 'groq':
      return new OpenAiCompatLlm({ provider: 'groq', model: m, baseUrl: config.GROQ_BASE_URL, ...key(config.GROQ_API_KEY) });
    case 'anthropic':
      return new AnthropicLlm({ model: m, baseUrl: config.ANTHROPIC_BASE_URL, ...key(config.ANTHROPIC_API_KEY) });
    case 'google':
      return new GoogleLlm({ model: m, baseUrl: config.GOOGLE_BASE_URL, ...key(config.GOOGLE_API_KEY) });
    case 'local':
      return createLocalLlm(config, model ?? 'local-demo');
    default:
      throw new UnknownLlmProviderError(`no LLM adapter for provider '${provider}'`);
  }
}
