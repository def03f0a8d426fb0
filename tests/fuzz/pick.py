# pick.py BIN SRC_DIR OUT_DIR MAXFILES: copies to OUT_DIR the few files of SRC_DIR that cover the most
# edges (greedy set cover; each file's edges from a one-file libFuzzer merge). For tests/fuzz/corpus.
import os, sys, subprocess, tempfile, shutil
bin_, src, out, maxf = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
files = sorted(os.listdir(src), key=lambda f: os.path.getsize(os.path.join(src, f)))
sets = {}
tmp = tempfile.mkdtemp()
for f in files:
    d = os.path.join(tmp, 'in'); shutil.rmtree(d, ignore_errors=True); os.mkdir(d)
    shutil.copy(os.path.join(src, f), d)
    e = os.path.join(tmp, 'empty'); shutil.rmtree(e, ignore_errors=True); os.mkdir(e)
    ctl = os.path.join(tmp, 'ctl')
    if os.path.exists(ctl): os.remove(ctl)
    subprocess.run([bin_, '-merge=1', '-use_counters=0', '-merge_control_file=' + ctl, e, d],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = set()
    for line in open(ctl):
        if line.startswith('COV '):
            s |= set(line.split()[2:])
    sets[f] = s
allc = set().union(*sets.values())
chosen, have = [], set()
while len(chosen) < maxf:
    best = max(sets, key=lambda f: (len(sets[f] - have), -os.path.getsize(os.path.join(src, f))))
    gain = len(sets[best] - have)
    if gain == 0:
        break
    chosen.append(best); have |= sets[best]
os.makedirs(out, exist_ok=True)
for f in chosen:
    shutil.copy(os.path.join(src, f), os.path.join(out, f))
print(f'{len(chosen)} files cover {len(have)}/{len(allc)} edges, {sum(os.path.getsize(os.path.join(src,f)) for f in chosen)} bytes')
