#!/usr/bin/env python3
"""Usage: fusedtune variants --full --json ... | scripts/gpu/pick_forms.py
Prints, one per line, the JSON config of the first tensor-core variant (in the cost model's order)
of each epilogue form (its tile and cluster, the deepest ring): ping-pong 128-row with TMA stores and direct, cooperative BN >= 192 with TMA
stores (early E) and direct, staged, late, and cooperative BN 128 with TMA stores."""
import json, sys

forms = [
    ("pp_ts", lambda c: c.get("pingpong") == 2 and c.get("tstore") and not c.get("staged")),
    ("pp_direct", lambda c: c.get("pingpong") == 2 and not c.get("tstore")),
    ("pp_staged", lambda c: c.get("pingpong") == 2 and c.get("staged")),
    ("coop_ts_wide", lambda c: not c.get("pingpong") and c.get("tstore") and not c.get("staged") and not c.get("late")
     and not c.get("streamk") and c["bn"] >= 192),
    ("coop_direct_wide", lambda c: not c.get("pingpong") and not c.get("tstore") and not c.get("split_k") and c["bn"] >= 192),
    ("coop_staged", lambda c: not c.get("pingpong") and c.get("staged")),
    ("coop_ts_128", lambda c: not c.get("pingpong") and c.get("tstore") and not c.get("staged") and not c.get("late")
     and not c.get("streamk") and c["bn"] == 128),
]
items = [v for v in json.load(sys.stdin) if v["name"].startswith("tc_")]
for name, ok in forms:
    match = [v["config"] for v in items if ok(v["config"])]
    if match:  # the first one's tile and cluster with the deepest ring
        first = match[0]
        same = [c for c in match if all(c.get(k) == first.get(k) for k in first if k != "stages")]
        print(json.dumps(max(same, key=lambda c: c["stages"]), separators=(",", ":")))
