// Audio utilities shared by transports, pipeline and engines.
export { Resampler, resample, type ResamplerOptions } from './resample.ts';
export { encodeMulaw, decodeMulaw, linearToMulaw, mulawToLinear } from './mulaw.ts';
export { bytesToInt16, int16ToBytes, int16ToFloat32, float32ToInt16, concatInt16, rms, dbfs, applyGain, mixInto, samplesFor, Framer } from './pcm.ts';
export { readWav, writeWav, type PcmAudio } from './wav.ts';
