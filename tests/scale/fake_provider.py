#!/usr/bin/env python3
"""A fake OpenAI-compatible provider for `make test-scale` (docs/design/scale.md), standard
library only: it answers every meeting of the batch at once, whatever their order, and counts
what a provider sees — requests, the most in flight at once, and any request body it was sent
twice (a call paid twice).

Each answer is built from the request's structured-output schema, so no script has to know how
the meetings interleave: a PM round calls the next participant in its `target_agent` enum that
has not answered yet (answers carry a marker the PM's whiteboard shows) and finishes once two
have, choosing the meeting's first option; an agent answers with its marker. Every request waits
DELAY seconds, so meetings overlap and a killed task dies mid-meeting. The first request whose
text holds FAIL_ON (a meeting's topic) is answered 429 with Retry-After: 1, once.

Usage: fake_provider.py PORT STATS_FILE [--delay 1.0] [--fail-on scale-meeting-5]
GET /stats gives the counts as JSON; they are also written to STATS_FILE after every request.
"""
import argparse
import hashlib
import http.server
import json
import os
import re
import threading
import time

LOCK = threading.Lock()
STATS = {"requests": 0, "in_flight": 0, "max_in_flight": 0, "answered": 0, "rate_limited": 0,
         "duplicates": [], "times": []}
SEEN = {}


def text_of(req):
    return "\n".join(str(m.get("content") or "") for m in req.get("messages", []))


def pm_answer(schema, text):
    props = schema.get("properties", {})
    actions = props.get("next_action", {}).get("enum", [])
    heard = sorted(set(re.findall(r"FAKE-ANSWER-([A-Za-z0-9_-]+)", text)))
    option = re.search(r"Option [A-Z][A-Za-z ]*", text)
    if "FINISH" in actions and (len(heard) >= 2 or actions == ["FINISH"]):
        return {"analysis": f"Heard {', '.join(heard) or 'nobody'}; the evidence is in.",
                "next_action": "FINISH", "target_agent": None, "prompt_for_agent": None,
                "final_report": "### Executive Summary\nThe batch meeting decided on the first option.\n\n"
                                "### Recommendation\nGo with the first option; revisit if the load doubles.",
                "answered_questions": None,
                "decision": {"choice": option.group(0).strip() if option else "Option A",
                             "confidence": "medium", "revisit_if": "the load doubles"},
                **({"calls": None} if "calls" in props else {})}
    targets = []
    for alt in props.get("target_agent", {}).get("anyOf", [props.get("target_agent", {})]):
        targets += alt.get("enum", [])
    target = next((t for t in targets if t not in heard), targets[0] if targets else "arch")
    return {"analysis": f"Heard {', '.join(heard) or 'nobody'} so far.", "next_action": "CALL_AGENT",
            "target_agent": target, "prompt_for_agent": f"Question for {target}: what does the evidence say?",
            "final_report": None, "decision": None,
            **({"calls": None} if "calls" in props else {}),
            **({"answered_questions": None} if "answered_questions" in props else {})}


def agent_answer(text):
    m = re.findall(r"Question for ([A-Za-z0-9_-]+)", text)
    who = m[-1] if m else "someone"
    return {"response": f"FAKE-ANSWER-{who}: the first option fits the load we measured.",
            "key_points": [f"FAKE-ANSWER-{who}: the first option fits the measured load."],
            "risks": [f"{who}: the load may double next year."],
            "recommendations": [f"{who}: go with the first option."], "citations": []}


def answer(req):
    fmt = req.get("response_format") or {}
    js = fmt.get("json_schema") or {}
    name, schema = js.get("name", ""), js.get("schema") or {}
    text = text_of(req)
    if name == "pm_decision" or "next_action" in schema.get("properties", {}):
        return pm_answer(schema, text)
    return agent_answer(text)


def save(path):
    with open(path + ".tmp", "w") as f:
        json.dump(STATS, f)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("stats")
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--fail-on", default="")
    args = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, code, body, headers=()):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                return self.reply(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
            with LOCK:
                return self.reply(200, STATS)

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            req = json.loads(raw or b"{}")
            digest = hashlib.sha256(json.dumps(req.get("messages"), sort_keys=True).encode()).hexdigest()[:16]
            with LOCK:
                STATS["requests"] += 1
                n = STATS["requests"]
                STATS["in_flight"] += 1
                STATS["max_in_flight"] = max(STATS["max_in_flight"], STATS["in_flight"])
                STATS["times"].append(round(time.time(), 3))
            try:
                time.sleep(args.delay)
                with LOCK:
                    fail = bool(args.fail_on) and not STATS["rate_limited"] and args.fail_on in text_of(req)
                    if fail:
                        STATS["rate_limited"] += 1
                if fail:
                    return self.reply(429, {"error": {"message": "rate limited (fake)", "type": "rate_limit_error"}},
                                      [("retry-after", "1")])
                body = answer(req)
                with LOCK:
                    if digest in SEEN:
                        STATS["duplicates"].append(digest)
                    SEEN[digest] = n
                    STATS["answered"] += 1
                sent = len(text_of(req)) + len(json.dumps(req.get("response_format") or {}))
                self.reply(200, {"id": f"fake-{n}", "object": "chat.completion", "created": int(time.time()),
                                 "model": req.get("model", "fake"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": json.dumps(body)}}],
                                 "usage": {"prompt_tokens": max(1, sent // 4), "completion_tokens": 60,
                                           "total_tokens": max(1, sent // 4) + 60}})
            finally:
                with LOCK:
                    STATS["in_flight"] -= 1
                    save(args.stats)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
