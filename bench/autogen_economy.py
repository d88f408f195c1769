#!/usr/bin/env python3
"""AutoGen 0.7.5's prompt characters as a server sees them (bench/RESULTS.md#prompt-economy-issue-12):
a SelectorGroupChat of 3 agents on `OpenAIChatCompletionClient` against a local fake
OpenAI-compatible server, N rounds (one selector call, one 400-character reply), the
characters counted over each request's message texts like ours (`bench.py`'s `volume`).

Two contents, the same shape: `short` (each agent's system message one sentence, as the
published baseline's peer) and `ours` (each agent's system message and description are our
agent files' role prompt and description, the PM's participants line), both on our topic.

Needs `autogen-agentchat==0.7.5` and `autogen-ext[openai]==0.7.5` (bench.py's venv).
Usage: python bench/autogen_economy.py N short|ours AGENTS_DIR TOPIC REPLY_TEXT
Prints JSON: {"calls": ..., "chars": ..., "selector_chars": ..., "agent_chars": ...}.
"""
import asyncio
import http.server
import json
import sys
import threading

import yaml
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import SelectorGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

AGENTS = ["arch", "biz", "ops"]
INFO = {"vision": False, "function_calling": False, "json_output": False, "family": "unknown",
        "structured_output": False}


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class Server:
    """Answers the selector with the next agent's name and an agent with its reply; keeps
    each request's character count."""

    def __init__(self, order, reply):
        self.order, self.reply, self.seen = list(order), reply, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                msgs = body.get("messages", [])
                chars = sum(len(text_of(m.get("content"))) for m in msgs)
                selector = any("select the next role" in text_of(m.get("content")) for m in msgs)
                outer.seen.append(("selector" if selector else "agent", chars))
                text = outer.order.pop(0) if selector else outer.reply
                out = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def persona(content, agents_dir, name):
    if content == "short":
        return f"the {name} specialist", f"You are the {name} specialist."
    src = "arch" if name == "ops" else name
    with open(f"{agents_dir}/{src}.yaml") as f:
        d = yaml.safe_load(f)
    if name == "ops":  # the bench's third agent: the architect's file, renamed (bench.py baseline_files)
        d = {k: v.replace("Software Architect", "Operations Engineer").replace("software architect", "operations engineer")
             for k, v in d.items() if isinstance(v, str)}
    return f"{d['role']} — {d['description']}", d["system_prompt"]


async def meeting(n, content, agents_dir, topic, reply):
    order = [AGENTS[i % len(AGENTS)] for i in range(n)]
    server = Server(order, reply)
    def client():
        return OpenAIChatCompletionClient(model="bench", base_url=server.url, api_key="sk-bench", model_info=INFO)
    agents = []
    for name in AGENTS:
        description, system = persona(content, agents_dir, name)
        agents.append(AssistantAgent(name, model_client=client(), description=description, system_message=system))
    team = SelectorGroupChat(agents, model_client=client(), termination_condition=MaxMessageTermination(n + 1))
    result = await team.run(task=topic)
    spoke = [m.source for m in result.messages[1:]]
    assert spoke == order, (spoke, order)
    server.httpd.shutdown()
    sel = sum(c for k, c in server.seen if k == "selector")
    ag = sum(c for k, c in server.seen if k == "agent")
    return {"calls": len(server.seen), "chars": sel + ag, "selector_chars": sel, "agent_chars": ag}


if __name__ == "__main__":
    n, content, agents_dir, topic, reply = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    print(json.dumps(asyncio.run(meeting(n, content, agents_dir, topic, reply))))
