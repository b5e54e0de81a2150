#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judge of test_hotkeys.sh's report-mode run (see there for the scenario).

A src_ip VIP with hot_mode "report": one source (a client opening many
connections that must share one backend) carries half of the packets. The
expected backend comes from the test's own Maglev model (maglev_ref.py, from
the configuration's seed and backends), never from the daemon:
  - hot_set's sample (an action before the hot phase) is what hot_set
    answers and every later hot_list reports;
  - hot_list, read over the socket while the key was hot (the run's hot_list
    actions), lists the key as reported with kind "report", and no override
    exists for it (nor any other);
  - every packet of the key spillgen sent that came back came from the one
    backend the model gives for the source key, and all its connections
    were seen there (no flow at more than one backend);
  - the contrast, the spread-mode run of the same VIP and key (its spillgen
    results as SPREAD_RESULTS): the key's connections reached several
    backends.
usage: hotkeys_report_check.py CONFIG SCENARIO LIVE RESULTS SPREAD_RESULTS
"""

import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import maglev_ref  # noqa: E402


def main(cfg_path, scen_path, live_path, res_path, spread_path):
    cfg = json.load(open(cfg_path))
    scen = json.load(open(scen_path))
    live = json.load(open(live_path))
    res = json.load(open(res_path))
    spread = json.load(open(spread_path))
    ok = True

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL: " + msg)

    vip = cfg["vips"][0]
    if vip.get("hot_mode") != "report" or vip.get("key") != "src_ip":
        bad("the configuration's VIP is not a src_ip VIP in report mode")
    hot_ph = [p for p in scen["phases"] if "hot" in p][0]
    src = hot_ph["hot"]["src"]
    table = maglev_ref.vip_table(cfg["maglev"]["seed"], cfg["maglev"]["table_size"],
                                 vip["backends"])
    home = maglev_ref.backend_for(table, maglev_ref.lbhash.key_from_seed(cfg["maglev"]["seed"]),
                                  src, vip["address"], 0, vip["port"], socket.IPPROTO_TCP,
                                  "src_ip")
    print("model: key src %s homed on %s" % (src, home))

    # --- the daemon saw the key hot, in report mode, and overrode nothing ----
    lists = [a for a in live.get("actions", []) if a.get("method") == "hot_list"]
    for a in live.get("actions", []):
        if "error" in a:
            bad("action %s failed: %s" % (a.get("method"), a["error"]))
    for a in live.get("actions_not_done", []):
        bad("action at %.1f s was never made" % a["at"])
    # hot_set's sample, as the actions set it, is what hot_list reports.
    sets = [a for a in live.get("actions", []) if a.get("method") == "hot_set"]
    for a in sets:
        want = a["params"]["sample"]
        if (a.get("result") or {}).get("sample") != want:
            bad("hot_set sample %s answered %s" % (want, a.get("result")))
        for b in lists:
            if b["at"] > a["at"] and (b.get("result") or {}).get("params", {}).get("sample") != want:
                bad("hot_list at %.2f s reports sample %s after hot_set sample %s"
                    % (b["at"], (b.get("result") or {}).get("params", {}).get("sample"), want))
    seen_hot = 0
    for a in lists:
        r = a.get("result") or {}
        rep = [x for x in r.get("reported", []) if x.get("key", {}).get("src") == src]
        if rep:
            seen_hot += 1
            if rep[0].get("kind") != "report":
                bad("hot_list at %.2f s reports the key with kind %r, not \"report\""
                    % (a["at"], rep[0].get("kind")))
        if r.get("overrides"):
            bad("hot_list at %.2f s shows overrides on a report-mode VIP: %s"
                % (a["at"], r["overrides"]))
    if seen_hot == 0:
        bad("no hot_list read while the key was hot lists it as reported (%d reads)"
            % len(lists))
    q = live.get("quiet") or {}
    ev = q.get("hot_events") or []
    promos = [e for e in ev if e.get("event") in ("promote", "replan")]
    if promos:
        bad("the controller promoted or re-planned on a report-mode VIP: %s" % promos)

    # --- every connection of the key on the model's single backend -----------
    hk = [h for h in res["hot_keys"] if h["phase"] == hot_ph["name"]]
    if not hk:
        bad("spillgen reports no figures for the hot key")
    else:
        hk = hk[0]
        per = {e["address"]: e["packets"] for e in hk["per_backend"]}
        print("report run: key's packets per backend %s, share %.3f"
              % (per, hk["measured_share"]))
        if list(per) != [home]:
            bad("the key's packets reached %s, the model homes it on %s only" % (per, home))
        if hk["packets"] <= 0 or per.get(home, 0) != hk["packets"]:
            bad("the key's received packets %s are not all on %s (%s)"
                % (hk["packets"], home, per))
        if hk["backends"] != 1:
            bad("the key reached %s backends, not 1" % hk["backends"])
    if res["flows"]["multi_backend"] != 0:
        bad("%d flows reached more than one backend" % res["flows"]["multi_backend"])

    # --- contrast: the same key in spread mode split over several backends ---
    sk = [h for h in spread["hot_keys"] if h["phase"] == hot_ph["name"]]
    if not sk:
        bad("the spread run's results carry no figures for the key")
    else:
        sper = {e["address"]: e["packets"] for e in sk[0]["per_backend"]}
        print("spread run: key's packets per backend %s" % sper)
        if len(sper) < 2:
            bad("in spread mode the key's connections reached %s only" % list(sper))
        if home not in sper:
            bad("in spread mode the key never reached its model home %s" % home)
    print("report-mode check: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
