# Experiment (issue 24), bench/_server.ts applyServerPin: the bench's pacing thread (its main thread, tid = pid) alone
# on one CPU and the server's other threads on the others. Scope `tree`: the bench's child processes (callers, vendor
# fakes, PostgreSQL) on the others too, as an operator's cpuset isolating the core would; scope `server`: children
# anywhere (they compete for the pacing core as any neighbour does). Sweeps every 100 ms (threads and children come
# and go) until the bench exits.
import os, sys, time
root = int(sys.argv[1]); pace_cpu = int(sys.argv[2]); scope = sys.argv[3] if len(sys.argv) > 3 else 'tree'
allcpus = set(range(os.cpu_count()))
others = allcpus - {pace_cpu}
def tree(pid):
    out = [pid]
    try:
        for tid in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{tid}/children') as f:
                for c in f.read().split():
                    out += tree(int(c))
    except OSError:
        pass
    return out
n = 0
while os.path.exists(f'/proc/{root}'):
    for pid in tree(root):
        try:
            tids = [int(t) for t in os.listdir(f'/proc/{pid}/task')]
        except OSError:
            continue
        for tid in tids:
            want = {pace_cpu} if tid == root else others if (pid == root or scope == 'tree') else allcpus
            try:
                if os.sched_getaffinity(tid) != want:
                    os.sched_setaffinity(tid, want); n += 1
            except OSError:
                pass
    time.sleep(0.1)
print(f'[pin] {n} affinity changes', file=sys.stderr)
