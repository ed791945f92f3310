"""Shared recogniser process for the `local` STT engine (PocketSphinx 5, model shipped in its PyPI wheel).

Started by media/services/stt/local.ts: a small pool of these per media process serves the utterances of every
call (not one process per call). Each process multiplexes many utterances: an utterance gets its own decoder for
its language model (decoders are reused across utterances with the same model; idle ones are kept up to
MAX_IDLE, least recently used dropped first), so utterances of different calls interleave freely. Each decoder
holds the acoustic model (≈ 9 MB), so at most MAX_ACTIVE utterances decode at once; later ones wait with their
audio buffered and are decoded (faster than real time) as soon as a decoder frees up.

Protocol on stdin: frames of
  1 byte type + 4 bytes little-endian utterance id + 4 bytes little-endian payload length + payload
  'O' open utterance <id>: payload is JSON {"lm": path to an ARPA model, "dict": path to a dictionary}
  'A' audio for <id>: s16le 16 kHz mono PCM
  'F' finalize <id>: end the utterance, emit its final (text may be empty)
  'X' abort <id>: drop it, no output
  'P' prepare: payload JSON {"lm", "dict", "count"}: build that many idle decoders for that model now (warm-up)
  'Q' quit
On stdout, one JSON object per line: {"type": "ready"}, {"id": n, "type": "interim"|"final", "text": "..."},
{"id": n, "type": "error", "message": "..."}.
"""
import json
import struct
import sys
from collections import OrderedDict

INTERIM_EVERY = 16000 * 3 // 10  # samples between partial hypotheses (300 ms)
MAX_IDLE = 24  # idle decoders kept for reuse (each holds the acoustic model: ≈ 9 MB)
MAX_ACTIVE = 24  # utterances decoding at once; more wait (audio buffered) for a free decoder
# One pass (no second flat-lexicon pass): about a third less CPU per second of speech, for the same words on the
# small per-agent language models (test/media/services/speech.test.ts measures the accuracy).
DECODER_OPTIONS = {"samprate": 16000, "loglevel": "FATAL", "fwdflat": False}


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

    idle = OrderedDict()  # (lm, dict) -> [decoders]; order = least recently used first
    idle_count = 0

    def model_key(opts):
        return (opts.get("lm") or "", opts.get("dict") or "")

    def take(key):
        nonlocal idle_count
        free = idle.get(key)
        if free:
            idle_count -= 1
            dec = free.pop()
            if not free:
                del idle[key]
            return dec
        kwargs = dict(DECODER_OPTIONS)
        if key[0]:
            kwargs["lm"] = key[0]
        if key[1]:
            kwargs["dict"] = key[1]
        return Decoder(**kwargs)

    def give_back(key, dec):
        nonlocal idle_count
        idle.setdefault(key, []).append(dec)
        idle.move_to_end(key)
        idle_count += 1
        while idle_count > MAX_IDLE:
            oldest = next(iter(idle))
            lst = idle[oldest]
            lst.pop(0)
            idle_count -= 1
            if not lst:
                del idle[oldest]

    # utterance id -> [key, decoder or None (waiting), samples since interim, last interim, buffered audio, finalized]
    utts = {}
    waiting = []  # utterance ids without a decoder, oldest first
    active = 0

    def hyp_text(dec):
        h = dec.hyp()
        return h.hypstr.strip() if h is not None else ""

    def feed(uid, u, payload):
        dec = u[1]
        dec.process_raw(payload, False, False)
        u[2] += len(payload) // 2
        if u[2] >= INTERIM_EVERY:
            u[2] = 0
            text = hyp_text(dec)
            if text and text != u[3]:
                u[3] = text
                emit({"id": uid, "type": "interim", "text": text})

    def end(uid, u, final):
        nonlocal active
        dec = u[1]
        dec.end_utt()
        if final:
            emit({"id": uid, "type": "final", "text": hyp_text(dec)})
        active -= 1
        give_back(u[0], dec)
        admit()

    def start(uid, u):
        nonlocal active
        dec = take(u[0])
        dec.start_utt()
        u[1] = dec
        active += 1

    def admit():
        # a decoder is free: the oldest waiting utterance gets it and catches up on its buffered audio
        while waiting and active < MAX_ACTIVE:
            uid = waiting.pop(0)
            u = utts.get(uid)
            if u is None:
                continue
            start(uid, u)
            for chunk in u[4]:
                feed(uid, u, chunk)
            u[4] = []
            if u[5]:
                utts.pop(uid, None)
                end(uid, u, True)

    emit({"type": "ready"})

    inp = sys.stdin.buffer
    while True:
        header = read_exact(inp, 9)
        if header is None:
            break
        kind = header[0:1]
        (uid, length) = struct.unpack("<II", header[1:9])
        payload = read_exact(inp, length) if length else b""
        if payload is None:
            break
        try:
            if kind == b"A":
                u = utts.get(uid)
                if u is None:
                    continue
                if u[1] is None:
                    u[4].append(payload)
                else:
                    feed(uid, u, payload)
            elif kind == b"O":
                u = [model_key(json.loads(payload)), None, 0, "", [], False]
                utts[uid] = u
                if active < MAX_ACTIVE:
                    start(uid, u)
                else:
                    waiting.append(uid)
            elif kind == b"F" or kind == b"X":
                u = utts.get(uid)
                if u is None:
                    if kind == b"F":
                        emit({"id": uid, "type": "final", "text": ""})
                    continue
                if u[1] is None:
                    if kind == b"F":
                        u[5] = True  # decoded (and answered) once a decoder frees up
                    else:
                        utts.pop(uid, None)
                    continue
                utts.pop(uid, None)
                end(uid, u, kind == b"F")
            elif kind == b"P":
                # build `count` idle decoders for this model now: creating one takes tens of ms, which would stall
                # every utterance of this process if it happened when many callers start speaking at once
                opts = json.loads(payload)
                key = model_key(opts)
                have = len(idle.get(key, []))
                for _ in range(max(0, min(int(opts.get("count", 1)), MAX_IDLE) - have)):
                    give_back(key, take(key))
            elif kind == b"Q":
                break
        except Exception as err:  # one bad model or utterance must not take the others down
            u = utts.pop(uid, None)
            if u is not None and u[1] is not None:
                active -= 1
                admit()
            emit({"id": uid, "type": "error", "message": str(err)[:300]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
