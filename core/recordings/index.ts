// Audio recordings: decode (upload formats → 24 kHz mono s16) and the org-scoped store.
export * from './decode.ts';
export * from './store.ts';
export { decodeOffThread } from './decoder.ts';
