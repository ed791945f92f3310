"""Shared recogniser process for the `local` STT engine (PocketSphinx 5, model shipped in its PyPI wheel).

Started by media/services/stt/local.ts: a small pool of these per media process serves the utterances of every
call (not one process per call). Each process multiplexes many utterances: an utterance gets its own decoder for
its language model (decoders are reused across utterances with the same model; idle ones are kept up to
MAX_IDLE, least recently used dropped first), so utterances of different calls interleave freely. Each decoder
holds the acoustic model (≈ 7 MB), so at most MAX_ACTIVE utterances decode at once; later ones wait with their
audio buffered and are decoded (faster than real time) as soon as a decoder frees up.

Scheduling. A reader thread takes every message off stdin as soon as it arrives and queues the audio per
utterance; the decoding loop (this thread) then picks what to decode, so the order of the pipe does not decide
who waits. When more callers speak at once than the CPU can decode in real time, audio queues up; what matters
for the caller is how long the final takes once the utterance is finalized (the caller has stopped speaking and
waits for the reply), not how far behind an utterance still being spoken is. So:
  1. a finalized utterance is decoded to its end before anything else, oldest first (its final goes out at once);
  2. otherwise utterances still being spoken are decoded round robin, a slice of audio each, so every one keeps up
     as well as the CPU allows (its interim transcripts and its eventual final wait the least).
Under overload (the oldest undecoded audio of some utterance still being spoken arrived more than DEGRADE_LAG_S
ago: decoding is falling behind real time, not just catching up a burst), new utterances get a cheaper decoder (every other frame scored, two Gaussians per frame: much less CPU for a little
word accuracy) until the queue has drained: worse words for a while, rather than every caller waiting.

Protocol on stdin: frames of
  1 byte type + 4 bytes little-endian utterance id + 4 bytes little-endian payload length + payload
  'O' open utterance <id>: payload is JSON {"lm": path to an ARPA model, "dict": path to a dictionary, "cmn":
      optional cepstral mean the call's previous utterance ended with}
  'A' audio for <id>: s16le 16 kHz mono PCM
  'F' finalize <id>: end the utterance, emit its final (text may be empty)
  'X' abort <id>: drop it, no output
  'P' prepare: payload JSON {"lm", "dict", "count"}: build that many idle decoders for that model now (warm-up)
  'Q' quit
On stdout, one JSON object per line: {"type": "ready"}, {"id": n, "type": "interim", "text": "..."},
{"id": n, "type": "final", "text": "...", "cmn": "..."} (cmn: the call's cepstral mean, for its next 'O'),
{"id": n, "type": "error", "message": "..."}, and {"type": "load", "backlog_ms": n} (audio received but not yet
decoded, summed over utterances; sent when it changes by 100 ms or more, at most every 100 ms).
"""
import json
import struct
import sys
import threading
import time
from collections import OrderedDict, deque

INTERIM_EVERY = 16000 * 3 // 10  # samples between partial hypotheses (300 ms)
MAX_IDLE = 32  # idle decoders kept for reuse (each holds the acoustic model: ≈ 7 MB)
MAX_ACTIVE = 32  # utterances decoding at once; more wait (audio buffered) for a free decoder
SLICE_BYTES = 16000 * 2 // 10  # round robin: up to 100 ms of one utterance's audio per turn
DEGRADE_LAG_S = 0.3  # decoding this far behind real time: new utterances get the cheaper decoder
# One pass (no second flat-lexicon pass): less CPU per second of speech, for the same words on the small per-agent
# language models (test/media/services/speech.test.ts checks the accuracy).
DECODER_OPTIONS = {"samprate": 16000, "loglevel": "FATAL", "fwdflat": False}
FAST_OPTIONS = {"ds": 2, "topn": 2}


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


class Inbox:
    """Messages from the reader thread; the decoding loop drains them all at once."""

    def __init__(self):
        self.cond = threading.Condition()
        self.items = deque()
        self.eof = False

    def put(self, item):
        with self.cond:
            self.items.append(item)
            self.cond.notify()

    def close(self):
        with self.cond:
            self.eof = True
            self.cond.notify()

    def take(self, block):
        with self.cond:
            while block and not self.items and not self.eof:
                self.cond.wait()
            out = list(self.items)
            self.items.clear()
            return out, self.eof


def reader(inp, inbox):
    try:
        while True:
            header = read_exact(inp, 9)
            if header is None:
                break
            (uid, length) = struct.unpack("<II", header[1:9])
            payload = read_exact(inp, length) if length else b""
            if payload is None:
                break
            inbox.put((header[0:1], uid, payload))
            if header[0:1] == b"Q":
                break
    finally:
        inbox.close()


class Utt:
    __slots__ = ("uid", "key", "cmn", "dec", "since_interim", "last_interim", "queue", "queued", "finalized")

    def __init__(self, uid, key, cmn):
        self.uid = uid
        self.key = key
        self.cmn = cmn  # the call's own cepstral mean (None: the model's initial one)
        self.dec = None
        self.since_interim = 0
        self.last_interim = ""
        self.queue = deque()  # (arrival time, audio) received, not yet decoded
        self.queued = 0  # bytes in queue
        self.finalized = False


def main():
    try:
        from pocketsphinx import Decoder
    except ImportError as err:  # pragma: no cover - reported to the caller
        emit({"type": "error", "message": "pocketsphinx is not installed: %s" % err})
        return 1

    idle = OrderedDict()  # (lm, dict, fast) -> [decoders]; order = least recently used first
    idle_count = 0
    initial_cmn = {}  # key -> the cepstral mean a new decoder starts with

    # Decoders are shared by every call, but the cepstral mean (the channel's average spectrum, which live decoding
    # keeps adapting) belongs to one caller's line: each utterance starts from its own call's mean (or the model's
    # initial one), never from whoever used the decoder last. This also makes a call's words depend only on its
    # own audio, not on which decoder or process it landed on.

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
        if key[2]:
            kwargs.update(FAST_OPTIONS)
        if key[0]:
            kwargs["lm"] = key[0]
        if key[1]:
            kwargs["dict"] = key[1]
        dec = Decoder(**kwargs)
        initial_cmn.setdefault(key, dec.get_cmn())
        return dec

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

    utts = {}  # uid -> Utt (open or finalized, not yet answered)
    finals = deque()  # finalized uids, oldest first: decoded before anything else
    rr = deque()  # uids being spoken, round-robin order
    waiting = deque()  # uids without a decoder, oldest first
    active = 0
    backlog = 0  # bytes queued over all utterances
    reported = {"ms": 0, "at": 0.0}

    def hyp_text(dec):
        h = dec.hyp()
        return h.hypstr.strip() if h is not None else ""

    def model_key(opts, fast):
        return (opts.get("lm") or "", opts.get("dict") or "", fast)

    def report_load(force=False):
        ms = backlog * 1000 // 32000
        now = time.monotonic()
        if (force or abs(ms - reported["ms"]) >= 100 or (ms == 0) != (reported["ms"] == 0)) and now - reported["at"] >= 0.1:
            reported["ms"] = ms
            reported["at"] = now
            emit({"type": "load", "backlog_ms": ms})

    def start(u):
        nonlocal active
        dec = take(u.key)
        dec.set_cmn(u.cmn or initial_cmn[u.key])
        dec.start_utt()
        u.dec = dec
        active += 1

    def admit():
        while waiting and active < MAX_ACTIVE:
            uid = waiting.popleft()
            u = utts.get(uid)
            if u is not None and u.dec is None:
                start(u)

    def decode(u, max_bytes):
        """Decode up to max_bytes of u's queued audio (all of it when None)."""
        nonlocal backlog
        done = 0
        while u.queue and (max_bytes is None or done < max_bytes):
            chunk = u.queue.popleft()[1]
            u.queued -= len(chunk)
            backlog -= len(chunk)
            done += len(chunk)
            u.dec.process_raw(chunk, False, False)
            u.since_interim += len(chunk) // 2
            if u.since_interim >= INTERIM_EVERY and not u.finalized:
                u.since_interim = 0
                text = hyp_text(u.dec)
                if text and text != u.last_interim:
                    u.last_interim = text
                    emit({"id": u.uid, "type": "interim", "text": text})

    def finish(u, final):
        nonlocal active, backlog
        utts.pop(u.uid, None)
        backlog -= u.queued
        u.queue.clear()
        u.queued = 0
        if u.dec is not None:
            u.dec.end_utt()
            if final:
                emit({"id": u.uid, "type": "final", "text": hyp_text(u.dec), "cmn": u.dec.get_cmn()})
            active -= 1
            give_back(u.key, u.dec)
            u.dec = None
            admit()
        elif final:
            emit({"id": u.uid, "type": "final", "text": ""})

    def fail(uid, err):
        nonlocal active, backlog
        u = utts.pop(uid, None)
        if u is not None:
            backlog -= u.queued
            if u.dec is not None:
                active -= 1
                admit()
        emit({"id": uid, "type": "error", "message": str(err)[:300]})

    def handle(kind, uid, payload):
        nonlocal backlog
        if kind == b"A":
            u = utts.get(uid)
            if u is not None and not u.finalized:
                u.queue.append((time.monotonic(), payload))
                u.queued += len(payload)
                backlog += len(payload)
        elif kind == b"O":
            now = time.monotonic()
            fast = any(x.queue and now - x.queue[0][0] > DEGRADE_LAG_S for x in utts.values() if not x.finalized)
            opts = json.loads(payload)
            cmn = opts.get("cmn")
            u = Utt(uid, model_key(opts, fast), cmn if isinstance(cmn, str) and cmn else None)
            utts[uid] = u
            if active < MAX_ACTIVE:
                start(u)
            else:
                waiting.append(uid)
            rr.append(uid)
        elif kind == b"F":
            u = utts.get(uid)
            if u is None:
                emit({"id": uid, "type": "final", "text": ""})
            elif not u.finalized:
                u.finalized = True
                finals.append(uid)
        elif kind == b"X":
            u = utts.get(uid)
            if u is not None:
                finish(u, False)
        elif kind == b"P":
            # build `count` idle decoders for this model now: creating one is slow enough that it would stall
            # every utterance of this process if it happened when many callers start speaking at once
            opts = json.loads(payload)
            key = model_key(opts, False)
            have = len(idle.get(key, []))
            for _ in range(max(0, min(int(opts.get("count", 1)), MAX_IDLE) - have)):
                give_back(key, take(key))

    inbox = Inbox()
    t = threading.Thread(target=reader, args=(sys.stdin.buffer, inbox), daemon=True)
    t.start()
    emit({"type": "ready"})

    quit_ = False
    while not quit_:
        busy = bool(finals) or any(u.queue and u.dec is not None for u in utts.values())
        items, eof = inbox.take(block=not busy)
        for kind, uid, payload in items:
            if kind == b"Q":
                quit_ = True
                break
            try:
                handle(kind, uid, payload)
            except Exception as err:  # one bad model or utterance must not take the others down
                fail(uid, err)
        if quit_ or (eof and not items and not busy):
            break
        # 1. finalized utterances first, oldest first: decode what is left and answer
        if finals:
            uid = finals.popleft()
            u = utts.get(uid)
            if u is not None:
                try:
                    if u.dec is None:
                        # it waited for a decoder and is about to be answered: it gets one now, past MAX_ACTIVE
                        # if need be (the decoder goes back to the idle list, itself bounded, right after)
                        start(u)
                    decode(u, None)
                    finish(u, True)
                except Exception as err:
                    fail(uid, err)
            report_load()
            continue
        # 2. round robin over utterances still being spoken, a slice each
        n = len(rr)
        for _ in range(n):
            uid = rr.popleft()
            u = utts.get(uid)
            if u is None:
                continue  # answered or dropped: leaves the rotation
            rr.append(uid)
            if u.finalized or u.dec is None or not u.queue:
                continue
            try:
                decode(u, SLICE_BYTES)
            except Exception as err:
                fail(uid, err)
            break
        report_load()
    return 0


if __name__ == "__main__":
    sys.exit(main())
