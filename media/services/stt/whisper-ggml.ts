// Converts a CTranslate2 Whisper model (model.bin + vocabulary.txt, as faster-whisper ships it) into whisper.cpp's
// ggml file, which `@napi-rs/whisper` loads. Runs once at setup (media/services/model-files.ts), never at run time.
//
// Same layout as whisper.cpp's models/convert-pt-to-ggml.py: header (magic, hyper-parameters), the 80 × 201 mel
// filter bank (librosa's slaney mel filters, computed here), the byte-level BPE vocabulary, then every tensor
// (name, dims reversed, f16 for matrices and f32 for vectors, conv biases and positional embeddings).
// CTranslate2 fuses attention projections (self: q|k|v, cross: k|v): they are split back here; Whisper's key
// projection has no bias (CTranslate2 stores zeros), so none is written.
import { readFileSync } from 'node:fs';

type Tensor = { dims: number[]; dtype: number; data: Buffer };

const CT2_FLOAT32 = 0;
const CT2_FLOAT16 = 4;

/** Parses a CTranslate2 model.bin (binary version 6). */
export function readCt2(bin: Buffer): { spec: string; vars: Map<string, Tensor> } {
  let o = 0;
  const u32 = () => ((o += 4), bin.readUInt32LE(o - 4));
  const u16 = () => ((o += 2), bin.readUInt16LE(o - 2));
  const str = () => {
    const n = u16();
    o += n;
    return bin.toString('utf8', o - n, o - 1);
  };
  const version = u32();
  if (version !== 6) throw new Error(`CTranslate2 model binary version ${version} is not supported (expected 6)`);
  const spec = str();
  u32(); // spec revision
  const vars = new Map<string, Tensor>();
  const count = u32();
  for (let i = 0; i < count; i++) {
    const name = str();
    const rank = bin[o++]!;
    const dims: number[] = [];
    for (let r = 0; r < rank; r++) dims.push(u32());
    const dtype = bin[o++]!;
    const bytes = u32();
    vars.set(name, { dims, dtype, data: bin.subarray(o, o + bytes) });
    o += bytes;
  }
  return { spec, vars };
}

function toF32(t: Tensor, from = 0, count = t.data.length / (t.dtype === CT2_FLOAT16 ? 2 : 4)): Float32Array {
  if (t.dtype === CT2_FLOAT32) return new Float32Array(t.data.buffer.slice(t.data.byteOffset + from * 4, t.data.byteOffset + (from + count) * 4));
  if (t.dtype !== CT2_FLOAT16) throw new Error(`unsupported CTranslate2 dtype ${t.dtype}`);
  const h = new Float16Array(t.data.buffer.slice(t.data.byteOffset + from * 2, t.data.byteOffset + (from + count) * 2));
  return Float32Array.from(h);
}

function toF16(t: Tensor, from = 0, count = t.data.length / (t.dtype === CT2_FLOAT16 ? 2 : 4)): Buffer {
  if (t.dtype === CT2_FLOAT16) return Buffer.from(t.data.subarray(from * 2, (from + count) * 2));
  const h = Float16Array.from(toF32(t, from, count));
  return Buffer.from(h.buffer);
}

/** librosa.filters.mel(sr=16000, n_fft=400, n_mels=80) with slaney scale and norm, as Whisper's mel_filters.npz. */
export function melFilters(sr = 16000, nFft = 400, nMels = 80): Float32Array {
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  const hzToMel = (f: number) => (f >= minLogHz ? minLogMel + Math.log(f / minLogHz) / logStep : f / fSp);
  const melToHz = (m: number) => (m >= minLogMel ? minLogHz * Math.exp(logStep * (m - minLogMel)) : fSp * m);
  const nBins = 1 + nFft / 2;
  const fft = Array.from({ length: nBins }, (_, i) => (i * (sr / 2)) / (nBins - 1));
  const top = hzToMel(sr / 2);
  const melF = Array.from({ length: nMels + 2 }, (_, i) => melToHz((i * top) / (nMels + 1)));
  const out = new Float32Array(nMels * nBins);
  for (let i = 0; i < nMels; i++) {
    const enorm = 2 / (melF[i + 2]! - melF[i]!);
    for (let j = 0; j < nBins; j++) {
      const lower = (fft[j]! - melF[i]!) / (melF[i + 1]! - melF[i]!);
      const upper = (melF[i + 2]! - fft[j]!) / (melF[i + 2]! - melF[i + 1]!);
      out[i * nBins + j] = Math.max(0, Math.min(lower, upper)) * enorm;
    }
  }
  return out;
}

/** GPT-2's byte ↔ printable-character table, inverted: the vocabulary file's characters back to raw bytes. */
function unicodeToBytes(): Map<string, number> {
  const bs: number[] = [];
  for (let c = 0x21; c <= 0x7e; c++) bs.push(c);
  for (let c = 0xa1; c <= 0xac; c++) bs.push(c);
  for (let c = 0xae; c <= 0xff; c++) bs.push(c);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++)
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  return new Map(bs.map((b, i) => [String.fromCodePoint(cs[i]!), b]));
}

/** Converts model.bin + vocabulary.txt (CTranslate2 Whisper, English-only or multilingual) to a ggml file. */
export function convertCt2WhisperToGgml(modelBin: string, vocabularyTxt: string): Buffer {
  const { spec, vars } = readCt2(readFileSync(modelBin));
  if (spec !== 'WhisperSpec') throw new Error(`${modelBin} is a ${spec}, not a Whisper model`);
  const get = (name: string): Tensor => {
    const t = vars.get(name);
    if (!t) throw new Error(`${modelBin} has no tensor ${name}`);
    return t;
  };
  const scalar = (name: string) => get(name).data.readInt16LE(0);
  const nLayers = (prefix: string) => {
    let n = 0;
    while (vars.has(`${prefix}/layer_${n}/ffn/linear_0/weight`)) n++;
    return n;
  };
  const emb = get('decoder/embeddings/weight');
  const encPos = get('encoder/position_encodings/encodings');
  const decPos = get('decoder/position_encodings/encodings');
  const conv1 = get('encoder/conv1/weight');
  const nVocab = emb.dims[0]!;
  const state = emb.dims[1]!;
  const hparams = [nVocab, encPos.dims[0]!, state, scalar('encoder/num_heads'), nLayers('encoder'), decPos.dims[0]!, state, scalar('decoder/num_heads'), nLayers('decoder'), conv1.dims[1]!, 1];

  const parts: Buffer[] = [];
  const i32 = (...v: number[]) => {
    const b = Buffer.alloc(4 * v.length);
    v.forEach((x, i) => b.writeInt32LE(x, i * 4));
    parts.push(b);
  };
  i32(0x67676d6c, ...hparams);
  const filters = melFilters(16000, 400, hparams[9]!);
  i32(hparams[9]!, 201);
  parts.push(Buffer.from(filters.buffer));

  // vocabulary: the regular tokens (ids below <|endoftext|>); whisper.cpp names the special ones itself
  const lines = readFileSync(vocabularyTxt, 'utf8').split('\n');
  const eot = lines.indexOf('<|endoftext|>');
  if (eot < 0) throw new Error(`${vocabularyTxt} has no <|endoftext|> token`);
  const map = unicodeToBytes();
  i32(eot);
  for (let id = 0; id < eot; id++) {
    const bytes = Buffer.from([...lines[id]!].map((ch) => {
      const b = map.get(ch);
      if (b === undefined) throw new Error(`vocabulary token ${id} has a character outside the byte table`);
      return b;
    }));
    i32(bytes.length);
    parts.push(bytes);
  }

  const tensor = (name: string, dims: number[], data: Buffer, f16: boolean) => {
    const nameBytes = Buffer.from(name, 'utf8');
    i32(dims.length, nameBytes.length, f16 ? 1 : 0, ...[...dims].reverse());
    parts.push(nameBytes, data);
  };
  const f32 = (t: Tensor, from?: number, count?: number) => Buffer.from(toF32(t, from, count).buffer);
  const linear = (dst: string, src: string, rows?: [number, number], bias = true) => {
    const w = get(`${src}/weight`);
    const cols = w.dims[1]!;
    const [r0, nr] = rows ?? [0, w.dims[0]!];
    tensor(`${dst}.weight`, [nr, cols], toF16(w, r0 * cols, nr * cols), true);
    if (bias) tensor(`${dst}.bias`, [nr], f32(get(`${src}/bias`), r0, nr), false);
  };
  const norm = (dst: string, src: string) => {
    tensor(`${dst}.weight`, [state], f32(get(`${src}/gamma`)), false);
    tensor(`${dst}.bias`, [state], f32(get(`${src}/beta`)), false);
  };
  const selfAttention = (dst: string, src: string) => {
    norm(`${dst}.attn_ln`, `${src}/self_attention/layer_norm`);
    linear(`${dst}.attn.query`, `${src}/self_attention/linear_0`, [0, state]);
    linear(`${dst}.attn.key`, `${src}/self_attention/linear_0`, [state, state], false);
    linear(`${dst}.attn.value`, `${src}/self_attention/linear_0`, [2 * state, state]);
    linear(`${dst}.attn.out`, `${src}/self_attention/linear_1`);
  };
  const mlp = (dst: string, src: string) => {
    norm(`${dst}.mlp_ln`, `${src}/ffn/layer_norm`);
    linear(`${dst}.mlp.0`, `${src}/ffn/linear_0`);
    linear(`${dst}.mlp.2`, `${src}/ffn/linear_1`);
  };

  tensor('encoder.positional_embedding', encPos.dims, f32(encPos), false);
  tensor('encoder.conv1.weight', conv1.dims, toF16(conv1), true);
  tensor('encoder.conv1.bias', [state, 1], f32(get('encoder/conv1/bias')), false);
  const conv2 = get('encoder/conv2/weight');
  tensor('encoder.conv2.weight', conv2.dims, toF16(conv2), true);
  tensor('encoder.conv2.bias', [state, 1], f32(get('encoder/conv2/bias')), false);
  for (let l = 0; l < hparams[4]!; l++) {
    selfAttention(`encoder.blocks.${l}`, `encoder/layer_${l}`);
    mlp(`encoder.blocks.${l}`, `encoder/layer_${l}`);
  }
  norm('encoder.ln_post', 'encoder/layer_norm');

  tensor('decoder.positional_embedding', decPos.dims, f32(decPos), false);
  tensor('decoder.token_embedding.weight', emb.dims, toF16(emb), true);
  for (let l = 0; l < hparams[8]!; l++) {
    const src = `decoder/layer_${l}`;
    const dst = `decoder.blocks.${l}`;
    selfAttention(dst, src);
    norm(`${dst}.cross_attn_ln`, `${src}/attention/layer_norm`);
    linear(`${dst}.cross_attn.query`, `${src}/attention/linear_0`);
    linear(`${dst}.cross_attn.key`, `${src}/attention/linear_1`, [0, state], false);
    linear(`${dst}.cross_attn.value`, `${src}/attention/linear_1`, [state, state]);
    linear(`${dst}.cross_attn.out`, `${src}/attention/linear_2`);
    mlp(dst, src);
  }
  norm('decoder.ln', 'decoder/layer_norm');
  return Buffer.concat(parts);
}
