// The resampler lives in core/audio (the api normalises uploaded recordings with it too); media keeps this path.
export * from '../../core/audio/resample.ts';
