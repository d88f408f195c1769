#!/usr/bin/env python3
"""The AutoGen side of the bounded-board comparison (bench/RESULTS.md#bounded-board-issue-15): a
SelectorGroupChat of 3 assistant agents on replay model clients, N rounds, each round one
selector call (which agent speaks) and one 400-character reply. The shape of our replayed
meeting: the PM routes, a specialist answers. Needs `autogen-agentchat==0.7.5` and
`autogen-ext==0.7.5` (bench.py makes a venv in target/autogen-venv).

Usage: python bench/autogen_peer.py N
"""
import asyncio
import sys

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import SelectorGroupChat
from autogen_ext.models.replay import ReplayChatCompletionClient

AGENTS = ["arch", "biz", "ops"]
INFO = {"vision": False, "function_calling": False, "json_output": False, "family": "unknown",
        "structured_output": False}


def reply(i):
    text = f"Answer {i}: " + "".join(f"aspect {i} depends on the replica lag and the job ordering; " for _ in range(10))
    return text[:400]


async def meeting(n):
    order = [AGENTS[i % len(AGENTS)] for i in range(n)]
    agents = []
    for name in AGENTS:
        turns = [reply(i + 1) for i in range(n) if order[i] == name]
        client = ReplayChatCompletionClient(turns or ["-"], model_info=INFO)
        agents.append(AssistantAgent(name, model_client=client, description=f"the {name} specialist",
                                     system_message=f"You are the {name} specialist."))
    selector = ReplayChatCompletionClient(order, model_info=INFO)
    team = SelectorGroupChat(agents, model_client=selector,
                             termination_condition=MaxMessageTermination(n + 1))
    result = await team.run(task="Should the nightly reports move to a read replica?")
    spoke = [m.source for m in result.messages[1:]]
    assert spoke == order, (spoke, order)
    return len(result.messages)


if __name__ == "__main__":
    print(asyncio.run(meeting(int(sys.argv[1]))))
