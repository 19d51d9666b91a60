#!/usr/bin/env python3
"""Score a secrets scanner's output against a corpus made by gen_corpus.py.

    python3 score.py LABELS_DIR --tool {plangate,betterleaks,gitleaks,kingfisher} --results FILE [--root DIR] [--json]

LABELS_DIR holds labels.jsonl and decoys.jsonl (the corpus dir).  --root is the
directory the tool scanned when it is not LABELS_DIR itself (e.g. the corpus
was copied to BIG/corpus and the tool scanned BIG: pass --root BIG/corpus,
findings outside it are then ignored).

Matching rule
  * A finding is located by (file, line); file is made relative to the
    corpus root.  Findings are de-duplicated by location (file, start line),
    so two rules firing on one line count once.
  * A label is FOUND when some finding is in the same file and its line range
    [start, end] overlaps the label's [line, end_line] (single-line labels:
    the same line; PEM blocks and GCP service-account JSON: any line of the
    block, given by the optional start_line/end_line fields).
  * A finding location that overlaps no label is a FALSE POSITIVE; it is
    attributed to a decoy class when it overlaps a decoys.jsonl entry, else
    it is "unlabeled".  Extra findings on a labeled line are not FPs.
  * recall = found labels / labels;  precision = TP locations / all locations.
  * Findings in labels.jsonl / decoys.jsonl themselves are ignored.
"""
import argparse
import collections
import json
import os
import sys

# Types whose value carries a distinctive provider prefix / fixed shape.  The
# plangate target is that every one of these is found at least once (ideally
# always); generic / keyword-only types are excluded.
PROVIDER_PREFIXED = {
    "aws-access-key-id", "aws-session-token", "gcp-api-key", "gcp-service-account", "azure-storage-connection-string",
    "github-pat", "github-fine-grained-pat", "github-oauth", "github-user-to-server", "github-app-token", "github-refresh-token",
    "gitlab-pat", "gitlab-pipeline-trigger", "gitlab-runner-token", "gitlab-deploy-token", "bitbucket-app-password",
    "slack-bot-token", "slack-user-token", "slack-app-token", "slack-webhook", "discord-webhook", "telegram-bot-token",
    "teams-webhook", "twilio-api-key", "sendgrid-api-key", "mailgun-api-key", "mailchimp-api-key", "stripe-secret-key",
    "stripe-restricted-key", "stripe-webhook-secret", "square-access-token", "shopify-access-token", "braintree-access-token",
    "openai-api-key", "openai-project-key", "anthropic-api-key", "huggingface-token", "groq-api-key", "replicate-api-token",
    "npm-token", "pypi-token", "rubygems-api-key", "nuget-api-key", "dockerhub-pat", "digitalocean-token", "linear-api-key",
    "notion-token", "atlassian-api-token", "newrelic-user-key", "sentry-auth-token", "sentry-dsn", "doppler-token", "vault-token",
    "terraform-cloud-token", "pulumi-token", "postman-api-key", "grafana-service-account-token", "grafana-cloud-token",
    "databricks-token", "mapbox-secret-token", "age-secret-key", "private-key-rsa", "private-key-ec", "private-key-openssh",
    "private-key-pkcs8", "private-key-encrypted", "private-key-pgp",
}
SKIP_FILES = {"labels.jsonl", "decoys.jsonl"}


def load_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


def load_json_any(path):
    """Parse a JSON document, or JSON Lines, or a file with leading non-JSON noise."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    s = text.strip()
    if not s:
        return []
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    items = []
    for line in s.splitlines():
        line = line.strip()
        if line.startswith("{") or line.startswith("["):
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    if items:
        return items
    i = min([p for p in (s.find("{"), s.find("[")) if p >= 0], default=-1)
    if i >= 0:
        return json.loads(s[i:])
    raise SystemExit(f"score.py: cannot parse {path} as JSON")


def parse_plangate(doc):
    docs = doc if isinstance(doc, list) else [doc]
    for d in docs:
        for f in d.get("findings", []):
            yield f["file"], int(f["line"]), int(f.get("end_line", f["line"])), f.get("type", "?")


def parse_betterleaks(doc):
    # gitleaks-compatible: a list of {File, StartLine, EndLine, RuleID}
    # betterleaks 2.x:      {"schema_version": "1", "findings": [{rule_id, location: {path, start_line, end_line}}]}
    # --jsonl:              one finding object per line (either shape)
    if isinstance(doc, dict):
        docs = doc.get("findings") or []
    else:
        docs = []
        for x in doc:
            if isinstance(x, dict) and "findings" in x and isinstance(x["findings"], list):
                docs.extend(x["findings"])
            elif isinstance(x, list):
                docs.extend(x)
            else:
                docs.append(x)
    for f in docs:
        if "File" in f:
            s = int(f.get("StartLine") or 0)
            yield f["File"], s, int(f.get("EndLine") or s), f.get("RuleID", "?")
        else:
            loc = f.get("location", {})
            s = int(loc.get("start_line") or 0)
            yield loc.get("path", ""), s, int(loc.get("end_line") or s), f.get("rule_id", "?")


def parse_kingfisher(doc):
    # kingfisher 2.x --format json: {"findings": [{"rule": {"id", "name"}, "finding": {"path", "line", ...}}], "metadata": ...}
    # --format jsonl: one {"rule":..., "finding":...} per line
    if isinstance(doc, dict):
        docs = doc.get("findings") or []
    else:
        docs = []
        for x in doc:
            if isinstance(x, dict) and "findings" in x and "finding" not in x:
                docs.extend(x["findings"] or [])
            else:
                docs.append(x)
    for f in docs:
        fi = f.get("finding", f)
        rule = f.get("rule", {})
        path = fi.get("path") or fi.get("file") or ""
        line = int(fi.get("line") or 0)
        yield path, line, int(fi.get("end_line") or line), rule.get("id") or rule.get("name") or "?"


PARSERS = {"plangate": parse_plangate, "betterleaks": parse_betterleaks, "gitleaks": parse_betterleaks, "kingfisher": parse_kingfisher}


def normalise(path, root_real, root_given):
    p = path.replace("\\", "/")
    if p.startswith("file://"):
        p = p[7:]
    if os.path.isabs(p):
        rp = os.path.realpath(p)
        for r in (root_real, root_given):
            if rp == r or p == r:
                return ""
            if rp.startswith(r + "/"):
                return rp[len(r) + 1:]
            if p.startswith(r + "/"):
                return p[len(r) + 1:]
        return None  # outside the corpus
    while p.startswith("./"):
        p = p[2:]
    for r in (root_given.rstrip("/") + "/", root_real + "/"):
        rel_r = os.path.relpath(r) + "/"
        if p.startswith(rel_r) and rel_r != "./":
            return p[len(rel_r):]
    return p


def score(labels_dir, tool, results, root=None, scan_dir=None):
    labels = load_jsonl(os.path.join(labels_dir, "labels.jsonl"))
    decoys = load_jsonl(os.path.join(labels_dir, "decoys.jsonl"))
    root = root or labels_dir
    root_real = os.path.realpath(root)
    root_given = os.path.abspath(root)
    raw = list(PARSERS[tool](load_json_any(results)))

    by_file = collections.defaultdict(list)
    for i, lb in enumerate(labels):
        by_file[lb["file"]].append(i)
    dby_file = collections.defaultdict(list)
    for d in decoys:
        dby_file[d["file"]].append(d)

    locs = {}  # (file, start) -> (end, set(rules))
    outside = 0
    for path, s, e, rule in raw:
        if scan_dir and not os.path.isabs(path.replace("file://", "")):
            path = os.path.join(os.path.abspath(scan_dir), path)
        rel = normalise(path, root_real, root_given)
        if rel is None:
            outside += 1
            continue
        if rel in SKIP_FILES:
            continue
        key = (rel, s)
        if key in locs:
            locs[key] = (max(locs[key][0], e), locs[key][1] | {rule})
        else:
            locs[key] = (max(s, e), {rule})

    found = [False] * len(labels)
    found_by = [set() for _ in labels]
    tp_locs, fps = 0, []
    rule_stats = collections.defaultdict(lambda: [0, 0])
    for (rel, s), (e, rules) in sorted(locs.items()):
        hit = False
        for i in by_file.get(rel, ()):
            lb = labels[i]
            if s <= lb.get("end_line", lb["line"]) and e >= lb.get("start_line", lb["line"]):
                found[i] = True
                found_by[i] |= rules
                hit = True
        if hit:
            tp_locs += 1
        else:
            cls = "unlabeled"
            for d in dby_file.get(rel, ()):
                if s <= d.get("end_line", d["line"]) and e >= d.get("start_line", d["line"]):
                    cls = d["type"]
                    break
            fps.append({"file": rel, "line": s, "rules": sorted(rules), "decoy_class": cls})
        for r in rules:
            rule_stats[r][0 if hit else 1] += 1

    per_type = collections.OrderedDict()
    for i, lb in enumerate(labels):
        t = per_type.setdefault(lb["type"], {"total": 0, "found": 0})
        t["total"] += 1
        t["found"] += found[i]
    for t in per_type.values():
        t["recall"] = round(t["found"] / t["total"], 3)
    decoy_total = collections.Counter(d["type"] for d in decoys)
    decoy_fp = collections.Counter(f["decoy_class"] for f in fps)
    per_decoy = {c: {"total": decoy_total[c], "flagged": decoy_fp.get(c, 0)} for c in sorted(decoy_total)}
    n_found = sum(found)
    n_locs = len(locs)
    missed = [dict(labels[i]) for i in range(len(labels)) if not found[i]]
    prov_missed_entirely = sorted(t for t, v in per_type.items() if t in PROVIDER_PREFIXED and v["found"] == 0)
    prov_partial = sorted(t for t, v in per_type.items() if t in PROVIDER_PREFIXED and 0 < v["found"] < v["total"])
    return {
        "tool": tool, "labels": len(labels), "found": n_found, "recall": round(n_found / len(labels), 4) if labels else 0.0,
        "finding_locations": n_locs, "tp_locations": tp_locs, "false_positives": len(fps),
        "precision": round(tp_locs / n_locs, 4) if n_locs else 0.0, "raw_findings": len(raw), "findings_outside_root": outside,
        "decoys": len(decoys), "decoys_flagged": sum(v for k, v in decoy_fp.items() if k != "unlabeled"),
        "unlabeled_fps": decoy_fp.get("unlabeled", 0),
        "types": len(per_type), "types_fully_found": sum(1 for v in per_type.values() if v["found"] == v["total"]),
        "provider_types_missed_entirely": prov_missed_entirely, "provider_types_partially_found": prov_partial,
        "per_type": per_type, "per_decoy_class": per_decoy,
        "per_rule": {r: {"tp": v[0], "fp": v[1]} for r, v in sorted(rule_stats.items())},
        "missed": missed, "fps": fps,
    }


def print_report(m, out=sys.stdout):
    w = out.write
    w(f"== {m['tool']}: recall {m['recall']:.3f} ({m['found']}/{m['labels']})  precision {m['precision']:.3f} "
      f"({m['tp_locations']}/{m['finding_locations']} locations, {m['false_positives']} FP: {m['decoys_flagged']} on decoys, "
      f"{m['unlabeled_fps']} unlabeled)\n")
    w(f"   types fully found {m['types_fully_found']}/{m['types']}; raw findings {m['raw_findings']}")
    if m["findings_outside_root"]:
        w(f" ({m['findings_outside_root']} outside the corpus root, ignored)")
    w("\n")
    w(f"   provider-prefixed types missed entirely ({len(m['provider_types_missed_entirely'])}): {', '.join(m['provider_types_missed_entirely']) or '-'}\n")
    w(f"   provider-prefixed types partly missed ({len(m['provider_types_partially_found'])}): {', '.join(m['provider_types_partially_found']) or '-'}\n")
    w("\n-- recall per secret type\n")
    for t, v in sorted(m["per_type"].items(), key=lambda kv: (kv[1]["recall"], kv[0])):
        w(f"   {t:34s} {v['found']:3d}/{v['total']:<3d} {v['recall']:.2f}\n")
    w("\n-- decoys flagged per class (false positives)\n")
    for c, v in sorted(m["per_decoy_class"].items(), key=lambda kv: -kv[1]["flagged"]):
        w(f"   {c:34s} {v['flagged']:3d}/{v['total']}\n")
    w("\n-- precision per tool rule (tp/fp locations)\n")
    for r, v in sorted(m["per_rule"].items(), key=lambda kv: (-kv[1]["fp"], kv[0])):
        w(f"   {r[:60]:60s} tp {v['tp']:3d}  fp {v['fp']:3d}\n")
    w(f"\n-- missed secrets ({len(m['missed'])})\n")
    for x in sorted(m["missed"], key=lambda x: (x["type"], x["file"])):
        w(f"   {x['type']:34s} {x['file']}:{x['line']}\n")
    w(f"\n-- false positives ({len(m['fps'])})\n")
    for x in sorted(m["fps"], key=lambda x: (x["decoy_class"], x["file"], x["line"])):
        w(f"   {x['decoy_class']:22s} {x['file']}:{x['line']}  [{', '.join(x['rules'])[:80]}]\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("labels_dir")
    ap.add_argument("--tool", required=True, choices=sorted(PARSERS))
    ap.add_argument("--results", required=True)
    ap.add_argument("--root", help="directory the corpus sat in when scanned (default: LABELS_DIR)")
    ap.add_argument("--scan-dir", help="directory the tool scanned, for tools that report paths relative to it (plangate)")
    ap.add_argument("--json", action="store_true", help="print the metrics as JSON instead of the text report")
    a = ap.parse_args()
    m = score(a.labels_dir, a.tool, a.results, a.root, a.scan_dir)
    if a.json:
        json.dump(m, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_report(m)


if __name__ == "__main__":
    main()
