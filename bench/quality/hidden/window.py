#!/usr/bin/env python3
"""The distributed condition's case whose documents exceed the window (bench/quality/README.md#the-distributed-condition):
one hidden-profile task where each member holds a long document — a log, a price list, a
capacity report of about 15,000 characters, its one decisive line past the first third — so
that one call given every fact must cut them to the context budget (24,000 characters for a
model the price table does not know), while each member of a meeting reads its own whole.

Deterministic (no randomness): `python3 bench/quality/hidden/window.py > bench/quality/hidden/window.json`
writes the task file the repository holds; run it like the others:
`python3 bench/quality/run.py --tasks bench/quality/hidden/window.json --modes ceiling,single,meeting`.
"""
import json
import sys

SITES = ["Lisbon", "Oslo", "Warsaw", "Vienna", "Madrid", "Prague", "Milan", "Zurich"]
ENTRIES = 150
AT = 110  # where the decisive line sits: past what a cut to the budget keeps


def lines(kind, decisive):
    out = []
    for i in range(1, ENTRIES + 1):
        site = SITES[i % len(SITES)]
        if kind == "incidents":
            line = (f"Incident {i:03d}: {site} site, rack {i % 40 + 1}: a disk in array {i % 7 + 1} "
                    f"was replaced during the maintenance window; no customer impact.")
        elif kind == "prices":
            line = (f"Price line {i:03d}: {site} site, {i % 12 + 1} kW rack with {i % 4 + 1} "
                    f"cross-connects: {900 + 7 * i} EUR a month, unchanged this year.")
        else:
            line = (f"Capacity {i:03d}: {site} site, hall {i % 5 + 1}: {i % 30 + 10}% of its cages "
                    f"are free; the waiting list is {i % 6} weeks.")
        out.append(line)
        if i == AT:
            out.append(decisive)
    return out


def task():
    return {
        "name": "Site for the new data replica",
        "description": "Which site should host the new replica of the customer database?",
        "shared_information": [
            "Frankfurt has the lowest latency to most of our customers.",
            "Frankfurt, Dublin and Stockholm all meet the storage size the replica needs.",
            "The replica must be running within two months.",
        ],
        "hidden_information": [
            lines("incidents", "Incident 111: Frankfurt site: the landlord will not renew the "
                               "power contract; the site loses power in six weeks."),
            lines("prices", "Price line 111: Dublin site: every rack price doubles from next "
                            "month; no replica fits the budget there."),
            lines("capacity", "Capacity 111: Stockholm site: a free, pre-approved cage for the "
                              "replica, with on-site staff, ready this month."),
        ],
        "possible_answers": ["Frankfurt", "Dublin", "Stockholm"],
        "correct_answer": "Stockholm",
    }


if __name__ == "__main__":
    json.dump([task()], sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
