#!/usr/bin/env python3
"""HiddenBench's hidden-profile tasks as quality-benchmark cases (bench/quality/README.md#the-distributed-condition).

A hidden-profile task gives every member some shared facts and each member facts of its own;
only all of them together single out the right answer, while the shared facts alone point to a
plausible wrong one. Each task becomes a case the benchmark runs: its shared facts a document
everyone reads, each member's facts a document only that member reads (`readers:`), the
possible answers the options, the correct answer the key the meetings never see — and beside it
`ceiling.yaml`, the same case with every fact shared, for the one call given every fact.

Input: a JSON file holding a list of tasks (or {"tasks": [...]}, or one task per line), each with
`name`, `description`, `shared_information` (a string or a list), `hidden_information` (a list
with one entry per member, or an object member -> facts; an entry a string or a list),
`possible_answers` (a list) and `correct_answer` (one of them, or its index).

Usage: python3 bench/quality/hiddenbench.py TASKS.json OUT
       python3 bench/quality/run.py --cases-dir OUT --modes ceiling,single,sc,meeting,council ...
Python 3 standard library only.
"""
import json
import os
import re
import sys

AGENT = """name: {name}
role: Group member {n}
description: A member of the group deciding; holds facts of their own.
system_prompt: |
  You are one member of a group making a decision together.
input_schema:
  type: object
  properties:
    prompt: {{type: string}}
    meeting_summary: {{type: string}}
    context_summary: {{type: string}}
  required: [prompt, meeting_summary, context_summary]
output_schema:
  type: object
  properties:
    response: {{type: string}}
    key_points: {{type: array, items: {{type: string}}}}
    risks: {{type: array, items: {{type: string}}}}
    recommendations: {{type: array, items: {{type: string}}}}
    citations:
      type: array
      items:
        type: object
        properties:
          document_id: {{type: string}}
          source_path: {{type: string}}
          quote: {{type: string}}
        required: [document_id, source_path, quote]
  required: [response, key_points, risks, recommendations, citations]
"""


def fail(msg):
    print(f"hiddenbench.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        try:
            doc = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            fail(f"{path}: expected JSON (a list of tasks, {{\"tasks\": [...]}} or one task a line): {e}")
    if isinstance(doc, dict):
        doc = doc.get("tasks", [doc] if "name" in doc else None)
    if not isinstance(doc, list):
        fail(f"{path}: expected a list of tasks")
    return doc


def facts(value, where):
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    fail(f"{where}: expected a string or a list of strings")


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "task"


def members(task, where):
    hidden = task.get("hidden_information")
    if isinstance(hidden, list):
        return [(f"member-{i}", facts(h, f"{where}.hidden_information[{i - 1}]"))
                for i, h in enumerate(hidden, 1)]
    if isinstance(hidden, dict):
        return [(f"member-{i}", facts(h, f"{where}.hidden_information.{k}"))
                for i, (k, h) in enumerate(hidden.items(), 1)]
    fail(f"{where}.hidden_information: expected a list (one entry per member) or an object")


def correct(task, answers, where):
    c = task.get("correct_answer")
    if isinstance(c, int) and not isinstance(c, bool) and 0 <= c < len(answers):
        return answers[c]
    if isinstance(c, str) and c.strip() in answers:
        return c.strip()
    fail(f"{where}.correct_answer: expected one of possible_answers (or its index), got {c!r}")


def bullets(items):
    return "".join(f"- {i}\n" for i in items)


def meeting_yaml(task_name, description, answers, holders, readers):
    """The case's meeting file, in the shape the benchmark's reader takes (one JSON string per
    option line). `readers`: whether each member's document is theirs alone."""
    agents = ",".join(m for m, _ in holders)
    lines = [f"# HiddenBench task {json.dumps(task_name)} (bench/quality/hiddenbench.py). agents: {agents}",
             f"topic: {json.dumps(task_name)}", "", "decision_packet:",
             f"  decision_to_make: {json.dumps(description)}", "  options:"]
    lines += [f"    - {json.dumps(a)}" for a in answers]
    lines += ["", "context_sources:", "  - type: file", "    path: docs/shared.md",
              "    purpose: What every member knows"]
    for m, _ in holders:
        lines += ["  - type: file", f"    path: docs/{m}.md",
                  f"    purpose: What {m} knows" if readers else f"    purpose: What {m} was told"]
        if readers:
            lines.append(f"    readers: [{m}]")
    return "\n".join(lines) + "\n"


def convert(tasks, out):
    cases = os.path.join(out, "cases")
    agents_dir = os.path.join(out, "agents")
    os.makedirs(cases, exist_ok=True)
    os.makedirs(agents_dir, exist_ok=True)
    keys, seen = {}, set()
    for n, task in enumerate(tasks, 1):
        where = f"tasks[{n - 1}]"
        if not isinstance(task, dict):
            fail(f"{where}: expected an object")
        name = str(task.get("name") or "").strip()
        description = str(task.get("description") or "").strip()
        if not name or not description:
            fail(f"{where}: expected a name and a description")
        answers = facts(task.get("possible_answers"), f"{where}.possible_answers")
        if len(answers) < 2:
            fail(f"{where}.possible_answers: expected two or more")
        shared = facts(task.get("shared_information", []), f"{where}.shared_information")
        holders = members(task, where)
        if len(holders) < 2:
            fail(f"{where}.hidden_information: expected two or more members")
        case = f"hb{n:02d}-{slug(name)}"
        if case in seen:
            fail(f"{where}: two tasks named {name!r}")
        seen.add(case)
        d = os.path.join(cases, case)
        os.makedirs(os.path.join(d, "docs"), exist_ok=True)
        with open(os.path.join(d, "docs", "shared.md"), "w", encoding="utf-8") as f:
            f.write(bullets(shared) or "- (nothing shared)\n")
        for m, own in holders:
            with open(os.path.join(d, "docs", f"{m}.md"), "w", encoding="utf-8") as f:
                f.write(bullets(own) or "- (nothing of their own)\n")
        for file, readers in (("meeting.yaml", True), ("ceiling.yaml", False)):
            with open(os.path.join(d, file), "w", encoding="utf-8") as f:
                f.write(meeting_yaml(name, description, answers, holders, readers))
        for m, _ in holders:
            path = os.path.join(agents_dir, f"{m}.yaml")
            if not os.path.exists(path):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(AGENT.format(name=m, n=m.split("-")[1]))
        keys[case] = {"reference": correct(task, answers, where), "required_questions": [],
                      "quotes": [], "why": "HiddenBench's correct_answer",
                      # Who holds which fact: run.py counts the holders a meeting asked and
                      # those who said their fact.
                      "hidden_facts": {m: own for m, own in holders}}
    with open(os.path.join(out, "keys.json"), "w", encoding="utf-8") as f:
        json.dump({"_note": "converted by bench/quality/hiddenbench.py; never read by a meeting",
                   "cases": keys}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return sorted(keys)


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    ids = convert(load(sys.argv[1]), sys.argv[2])
    print(f"hiddenbench.py: {len(ids)} case(s) in {os.path.join(sys.argv[2], 'cases')}; "
          f"run: python3 bench/quality/run.py --cases-dir {sys.argv[2]} "
          f"--modes ceiling,single,sc,meeting,council", file=sys.stderr)


if __name__ == "__main__":
    main()
