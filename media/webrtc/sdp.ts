// The few SDP facts the answerer needs from a browser offer, and candidate rewriting for servers behind NAT.

export interface OfferAudio {
  mid: string;
  /** the offer's payload type for opus/48000/2 */
  opusPt: number;
  /** the offer's direction for the audio section */
  direction: 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
}

export interface OfferFacts {
  audio: OfferAudio | null;
  /** mid of the m=application (data channel) section, if any */
  dataMid: string | null;
}

/** Parse the media sections of an offer (first audio section with Opus, first data-channel section). */
export function parseOffer(sdp: string): OfferFacts {
  const sections = sdp.split(/\r?\nm=/).slice(1).map((s) => `m=${s}`);
  let audio: OfferAudio | null = null;
  let dataMid: string | null = null;
  for (const section of sections) {
    const lines = section.split(/\r?\n/);
    const mLine = lines[0]!;
    const mid = lines.find((l) => l.startsWith('a=mid:'))?.slice(6).trim() ?? null;
    if (mLine.startsWith('m=audio ') && !audio && mid !== null) {
      if (/^m=audio 0 /.test(mLine)) continue; // rejected/stopped section
      const rtpmap = lines.map((l) => /^a=rtpmap:(\d+) opus\/48000(?:\/\d+)?\s*$/i.exec(l)).find((m) => m);
      if (!rtpmap) continue;
      const dir = (['sendrecv', 'sendonly', 'recvonly', 'inactive'] as const).find((d) => lines.includes(`a=${d}`)) ?? 'sendrecv';
      audio = { mid, opusPt: Number(rtpmap[1]), direction: dir };
    } else if (mLine.startsWith('m=application ') && /webrtc-datachannel/.test(mLine) && dataMid === null && mid !== null) {
      dataMid = mid;
    }
  }
  return { audio, dataMid };
}

/**
 * Replace the address of host candidates with the announced one (a server behind 1:1 NAT, or a container whose
 * UDP port range is published on the host); duplicates that the rewrite creates are dropped.
 */
export function announceCandidate(candidate: string, announced: string | undefined): string | null {
  if (!announced) return candidate;
  const m = /^(a=)?(candidate:\S+ \d+ \S+ \d+ )(\S+)( \d+ typ host.*)$/i.exec(candidate.trim());
  if (!m) return candidate;
  // IPv6 host candidates cannot be reached through an IPv4 announcement (and vice versa): drop the other family
  const isV6 = m[3]!.includes(':');
  const announcedV6 = announced.includes(':');
  if (isV6 !== announcedV6) return null;
  return `${m[1] ?? ''}${m[2]}${announced}${m[4]}`;
}

export function announceSdp(sdp: string, announced: string | undefined): string {
  if (!announced) return sdp;
  const seen = new Set<string>();
  const eol = sdp.includes('\r\n') ? '\r\n' : '\n';
  const out: string[] = [];
  for (const line of sdp.split(/\r?\n/)) {
    if (line.startsWith('a=candidate:')) {
      const rewritten = announceCandidate(line, announced);
      if (!rewritten) continue;
      const key = rewritten.split(' ').slice(1).join(' ');
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(rewritten);
    } else if (line.startsWith('c=IN ')) {
      out.push(`c=IN ${announced.includes(':') ? 'IP6' : 'IP4'} ${announced}`);
    } else {
      out.push(line);
    }
  }
  return out.join(eol);
}
