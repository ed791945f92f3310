declare module '@echogarden/rnnoise-wasm' {
  const createRNNWasmModule: () => Promise<unknown>;
  export default createRNNWasmModule;
}
