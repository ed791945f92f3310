// WAV reading/writing lives in core/audio (the api decodes uploaded recordings with it too); media keeps this path.
export * from '../../core/audio/wav.ts';
