// The Opus codec wrapper lives in core/audio (the api decodes uploaded Opus recordings with it too).
export * from '../../core/audio/opus.ts';
