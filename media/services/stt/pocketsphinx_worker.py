"""Streaming recogniser process for the `local` STT engine (PocketSphinx 5, model shipped in its PyPI wheel).

Started by media/services/stt/local.ts, one process per call. Protocol on stdin: frames of
  1 byte type ('A' audio: s16le 16 kHz mono PCM, 'F' finalize the current utterance, 'Q' quit)
  + 4 bytes little-endian payload length + payload.
On stdout, one JSON object per line: {"type": "ready"}, {"type": "interim"|"final", "text": "..."},
{"type": "error", "message": "..."}.
argv[1] is a JSON object: {"lm": path to an ARPA model, "dict": path to a dictionary} (both optional).
"""
import json
import struct
import sys

INTERIM_EVERY = 16000 * 3 // 10  # samples between partial hypotheses (300 ms)
MAX_UTTERANCE = 16000 * 30  # force a final after 30 s without a finalize


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read_exact(stream, n):
    buf = b""
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def main():
    try:
        from pocketsphinx import Decoder
    except ImportError as err:  # pragma: no cover - reported to the caller
        emit({"type": "error", "message": "pocketsphinx is not installed: %s" % err})
        return 1
    opts = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    kwargs = {"samprate": 16000, "loglevel": "FATAL"}
    if opts.get("lm"):
        kwargs["lm"] = opts["lm"]
    if opts.get("dict"):
        kwargs["dict"] = opts["dict"]
    decoder = Decoder(**kwargs)
    emit({"type": "ready"})

    inp = sys.stdin.buffer
    in_utt = False
    samples = 0
    since_interim = 0
    last = ""

    def hyp_text():
        h = decoder.hyp()
        return h.hypstr.strip() if h is not None else ""

    def finish():
        nonlocal in_utt, last
        if not in_utt:
            return
        decoder.end_utt()
        in_utt = False
        text = hyp_text()
        last = ""
        if text:
            emit({"type": "final", "text": text})

    while True:
        header = read_exact(inp, 5)
        if header is None:
            break
        kind = header[0:1]
        (length,) = struct.unpack("<I", header[1:5])
        payload = read_exact(inp, length) if length else b""
        if payload is None:
            break
        if kind == b"A":
            if not in_utt:
                decoder.start_utt()
                in_utt = True
                samples = 0
                since_interim = 0
                last = ""
            decoder.process_raw(payload, False, False)
            n = len(payload) // 2
            samples += n
            since_interim += n
            if since_interim >= INTERIM_EVERY:
                since_interim = 0
                text = hyp_text()
                if text and text != last:
                    last = text
                    emit({"type": "interim", "text": text})
            if samples >= MAX_UTTERANCE:
                finish()
        elif kind == b"F":
            finish()
        elif kind == b"Q":
            break
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
