// node-datachannel's native runtime (its threads and the callbacks it holds) keeps a Node process alive until
// cleanup() is called, even after every peer connection is closed. Each user (a media service, a test caller,
// the benchmark) takes a reference; the last one to let go tears the runtime down. It starts again by itself
// on the next peer connection.
import nodeDataChannel from 'node-datachannel';

let refs = 0;

export function acquireWebRtcRuntime(): () => void {
  refs++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    refs--;
    if (refs === 0) nodeDataChannel.cleanup();
  };
}
