"""Long-lived eSpeak NG synthesizer for the `local` TTS engine (libespeak-ng through ctypes; Python standard library
only, so the system python3 is enough).

Started by media/services/tts/espeak-pool.ts: a small pool of these per media process synthesizes for every call,
instead of one `espeak-ng` process per sentence. Starting a process per sentence costs the media process a fork of
itself on its event loop (all at once when many calls reply together) and the new process loading the phoneme
tables and voice, which takes longer than the synthesis itself.

Protocol on stdin: frames of 1 byte type + 4 bytes little-endian request id + 4 bytes little-endian payload length +
payload:
  'S' synthesize <id>: payload JSON {"text": str, "voice": str, "wpm": int}
  'X' abort <id>: stop that request (queued or in progress); its 'E' still comes
  'Q' quit
On stdout, frames with the same header: 'R' ready (id 0, payload: the sample rate as ASCII), 'A' audio for <id>
(s16le mono at that rate), 'E' end of <id> (payload empty when it completed, else an error message).
Requests are served in arrival order, one at a time (a sentence is quick to synthesize).
"""
import ctypes
import json
import struct
import sys
import threading
from collections import deque

AUDIO_OUTPUT_SYNCHRONOUS = 2
POS_CHARACTER = 1
ESPEAK_CHARS_UTF8 = 1
ESPEAK_ENDPAUSE = 0x1000  # the pause at the end of the text, as the espeak-ng command adds (sentences keep their gap)
ESPEAK_RATE = 1
BUFFER_MS = 60  # audio handed back per callback while synthesizing

out = sys.stdout.buffer
out_lock = threading.Lock()


def send(kind, rid, payload=b""):
    with out_lock:
        out.write(kind + struct.pack("<II", rid, len(payload)) + payload)
        out.flush()


def read_exact(stream, n):
    buf = b""
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


class Voice(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_char_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


def set_voice(lib, name):
    """Select a voice as the espeak-ng command's -v does: by voice name or file ('en-us', 'gmw/en', 'en-us+klatt'),
    else by language ('en-gb'), keeping a '+variant'. Returns True when a voice was set."""
    if lib.espeak_SetVoiceByName(name.encode()) == 0:
        return True
    base, _, variant = name.partition("+")
    spec = Voice(None, base.encode(), None, 0, 0, 0, 0, 0, None)
    if lib.espeak_SetVoiceByProperties(ctypes.byref(spec)) != 0:
        return False
    if variant:
        current = lib.espeak_GetCurrentVoice()
        if not current or not current.contents.identifier:
            return False
        return lib.espeak_SetVoiceByName(current.contents.identifier + b"+" + variant.encode()) == 0
    return True


def main():
    try:
        lib = ctypes.CDLL("libespeak-ng.so.1")
    except OSError as err:
        sys.stderr.write("libespeak-ng is not installed: %s\n" % err)
        return 1
    rate = lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, BUFFER_MS, None, 0)
    if rate <= 0:
        sys.stderr.write("espeak_Initialize failed (%d)\n" % rate)
        return 1

    cond = threading.Condition()
    queue = deque()  # (id, request)
    aborted = set()
    state = {"eof": False, "current": None}

    def reader():
        inp = sys.stdin.buffer
        try:
            while True:
                header = read_exact(inp, 9)
                if header is None:
                    break
                kind = header[0:1]
                (rid, length) = struct.unpack("<II", header[1:9])
                payload = read_exact(inp, length) if length else b""
                if payload is None or kind == b"Q":
                    break
                with cond:
                    if kind == b"S":
                        queue.append((rid, payload))
                        cond.notify()
                    elif kind == b"X":
                        aborted.add(rid)
        finally:
            with cond:
                state["eof"] = True
                cond.notify()

    CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)

    def on_audio(wav, n, _events):
        rid = state["current"]
        if rid in aborted:
            return 1  # stop this synthesis
        if n > 0 and wav:
            send(b"A", rid, ctypes.string_at(wav, n * 2))
        return 0

    callback = CALLBACK(on_audio)  # kept referenced for the library's lifetime
    lib.espeak_SetSynthCallback(callback)
    lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetVoiceByProperties.argtypes = [ctypes.POINTER(Voice)]
    lib.espeak_GetCurrentVoice.restype = ctypes.POINTER(Voice)
    threading.Thread(target=reader, daemon=True).start()
    send(b"R", 0, str(rate).encode())

    voice = None
    wpm = None
    while True:
        with cond:
            while not queue and not state["eof"]:
                cond.wait()
            if not queue:
                break
            rid, payload = queue.popleft()
            if rid in aborted:
                aborted.discard(rid)
                send(b"E", rid)
                continue
            state["current"] = rid
        error = b""
        try:
            req = json.loads(payload)
            want_voice = str(req.get("voice") or "en-us")
            if want_voice != voice:
                if not set_voice(lib, want_voice):
                    raise ValueError("eSpeak NG has no voice '%s'" % want_voice)
                voice = want_voice
                wpm = None  # a new voice resets the rate
            want_wpm = int(req.get("wpm") or 175)
            if want_wpm != wpm:
                lib.espeak_SetParameter(ESPEAK_RATE, want_wpm, 0)
                wpm = want_wpm
            text = str(req.get("text") or "").encode("utf-8")
            if text.strip():
                code = lib.espeak_Synth(text, len(text) + 1, 0, POS_CHARACTER, 0, ESPEAK_CHARS_UTF8 | ESPEAK_ENDPAUSE, None, None)
                if code not in (0, 1) and rid not in aborted:  # 1: stopped by the callback (aborted)
                    raise RuntimeError("espeak_Synth failed (%d)" % code)
        except Exception as err:  # one bad request must not take the others down
            voice = None
            error = str(err)[:300].encode("utf-8")
        with cond:
            state["current"] = None
            aborted.discard(rid)
        send(b"E", rid, error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
