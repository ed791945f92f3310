// The neural local engines' shared state (the Whisper, Piper and Smart Turn helper-process pools, the in-process llama.cpp
// model), closed together when a media process shuts down: their native code must not be torn down by process exit.
// Each is re-created on its next use.
import { closeLocalModel } from './llm/llama.ts';
import { closeWhisper } from './stt/whisper.ts';
import { closePiper } from './tts/piper.ts';
import { closeSmartTurn } from './turn/smart-turn.ts';

export async function closeNeuralEngines(): Promise<void> {
  await Promise.allSettled([closeWhisper(), closePiper(), closeLocalModel(), closeSmartTurn()]);
}
