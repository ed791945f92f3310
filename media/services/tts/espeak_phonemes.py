"""Resident eSpeak NG phonemizer for the Piper voice (media/services/tts/piper-thread.ts): text in, IPA phonemes out,
clause by clause, through libespeak-ng's espeak_TextToPhonemes (as Piper's own phonemizer does) — one process per
Piper helper for its lifetime, instead of an `espeak-ng --ipa` process per clause (slow to start, slower still on a
loaded machine). Python standard library only, so the system python3 is enough.

Protocol: one JSON object per line on stdin, {"text": str, "voice": str}; one JSON object per line on stdout,
{"clauses": [str, ...]} or {"error": str}. The first line written is {"ready": true} once the library is loaded.
"""
import ctypes
import json
import sys

AUDIO_OUTPUT_SYNCHRONOUS = 2
ESPEAK_CHARS_UTF8 = 1
PHONEMES_IPA = 0x02


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    try:
        lib = ctypes.CDLL("libespeak-ng.so.1")
    except OSError as e:
        sys.stderr.write("cannot load libespeak-ng: %s\n" % e)
        return 1
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
    lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
    if lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, None, 0) < 0:
        sys.stderr.write("espeak_Initialize failed\n")
        return 1
    voice = None
    reply({"ready": True})
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        try:
            req = json.loads(line)
            if req["voice"] != voice:
                if lib.espeak_SetVoiceByName(req["voice"].encode()) != 0:
                    raise ValueError("unknown eSpeak voice %r" % req["voice"])
                voice = req["voice"]
            buf = ctypes.create_string_buffer(req["text"].encode("utf-8"))
            ptr = ctypes.c_void_p(ctypes.addressof(buf))
            clauses = []
            while ptr.value:
                ph = lib.espeak_TextToPhonemes(ctypes.byref(ptr), ESPEAK_CHARS_UTF8, PHONEMES_IPA)
                text = (ph or b"").decode("utf-8", "replace").strip()
                if text:
                    clauses.append(text)
            reply({"clauses": clauses})
        except Exception as e:  # a bad request answers an error; the process stays up
            voice = None
            reply({"error": str(e)})


if __name__ == "__main__":
    sys.exit(main())
