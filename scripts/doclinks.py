#!/usr/bin/env python3
"""Every relative link of the Markdown docs (README, ARCHITECTURE, CHANGELOG,
tests/README, docs/) names a file that exists and, with a #fragment, a heading
in it; ARCHITECTURE.md's code map names every entry of src/ and every crate
of crates/ once (`- \`crates/model/\``), and nothing else. Exits 1 naming each broken link or code-map mismatch."""
import re, os, sys
ROOT=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def slug(text):
    t=text.strip().lower()
    t=re.sub(r'`','',t)
    t=re.sub(r'[^\w\- ]','',t)
    return t.replace(' ','-')
def anchors(path):
    out=set()
    incode=False
    for l in open(path).read().split('\n'):
        if l.startswith('```'): incode=not incode
        if incode: continue
        m=re.match(r'^#{1,6} (.*)$',l)
        if m: out.add(slug(m.group(1)))
    return out
bad=0
files=['README.md','ARCHITECTURE.md','CHANGELOG.md','tests/README.md']+[os.path.join(d,f)[len(ROOT)+1:] for d,_,fs in os.walk(ROOT+'/docs') for f in fs if f.endswith('.md')]
for f in files:
    p=os.path.join(ROOT,f); text=open(p).read()
    text=re.sub(r'```.*?```','',text,flags=re.S)
    for m in re.finditer(r'\]\(([^)\s]+)\)',text):
        t=m.group(1)
        if re.match(r'^[a-z]+:',t): continue
        path,_,anc=t.partition('#')
        target=os.path.normpath(os.path.join(os.path.dirname(p),path)) if path else p
        if not os.path.exists(target):
            print(f'{f}: missing {t}'); bad+=1; continue
        if anc and target.endswith('.md') and anc not in anchors(target):
            print(f'{f}: no anchor {t}'); bad+=1
# The code map: one `- \`name.rs\`` or `- \`name/\`` line per entry of src/,
# one `- \`crates/name/\`` line per crate of crates/.
src=sorted(re.sub(r'\.rs$','',e) for e in os.listdir(os.path.join(ROOT,'src')))
crates_dir=os.path.join(ROOT,'crates')
crates=sorted(os.listdir(crates_dir)) if os.path.isdir(crates_dir) else []
arch=open(os.path.join(ROOT,'ARCHITECTURE.md')).read()
mapped=sorted(re.findall(r'^- `([a-z_]+)(?:\.rs|/)`',arch,flags=re.M))
mapped_crates=sorted(re.findall(r'^- `crates/([a-z_]+)/`',arch,flags=re.M))
for e in sorted(set(src)-set(mapped)):
    print(f'ARCHITECTURE.md: code map misses src/{e}'); bad+=1
for e in sorted(set(crates)-set(mapped_crates)):
    print(f'ARCHITECTURE.md: code map misses crates/{e}'); bad+=1
for e in sorted(set(mapped)-set(src)):
    print(f'ARCHITECTURE.md: code map names src/{e}, not in src/'); bad+=1
for e in sorted(set(mapped_crates)-set(crates)):
    print(f'ARCHITECTURE.md: code map names crates/{e}, not in crates/'); bad+=1
for m, where in ((mapped, 'src/'), (mapped_crates, 'crates/')):
    for e in sorted({x for x in m if m.count(x)>1}):
        print(f'ARCHITECTURE.md: code map names {where}{e} twice'); bad+=1
print(f'== doc links: {bad} broken' if bad else '== doc links: all resolve')
sys.exit(1 if bad else 0)
