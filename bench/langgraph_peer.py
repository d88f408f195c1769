#!/usr/bin/env python3
"""The LangGraph side of the peer comparison (bench/RESULTS.md#against-autogen-and-langgraph-in-every-ui-mode):
the same shape as bench/autogen_peer.py — 3 agents, N rounds, each round one selector call
(which agent speaks) and one 400-character reply — as a LangGraph StateGraph whose selector
and agents are chat models replaying their answers (`GenericFakeChatModel`), the way a
LangGraph supervisor routes. Needs `langgraph` and `langchain-core` (bench.py makes a venv in
target/langgraph-venv).

Usage: python bench/langgraph_peer.py N
"""
import operator
import sys
from typing import Annotated, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph

AGENTS = ["arch", "biz", "ops"]


def reply(i):
    text = f"Answer {i}: " + "".join(f"aspect {i} depends on the replica lag and the job ordering; " for _ in range(10))
    return text[:400]


class State(TypedDict):
    messages: Annotated[list, operator.add]
    next: str
    rounds: int


def build(n):
    order = [AGENTS[i % len(AGENTS)] for i in range(n)]
    selector = GenericFakeChatModel(messages=iter([AIMessage(content=a) for a in order]))
    models = {
        name: GenericFakeChatModel(messages=iter(
            [AIMessage(content=reply(i + 1)) for i in range(n) if order[i] == name] or [AIMessage(content="-")]))
        for name in AGENTS
    }

    def select(state):
        if state["rounds"] >= n:
            return {"next": END}
        prompt = [SystemMessage(content="Choose who speaks next: " + ", ".join(AGENTS))] + state["messages"]
        return {"next": selector.invoke(prompt).content}

    def agent(name):
        def speak(state):
            prompt = [SystemMessage(content=f"You are the {name} specialist.")] + state["messages"]
            answer = models[name].invoke(prompt)
            return {"messages": [AIMessage(content=answer.content, name=name)], "rounds": state["rounds"] + 1}
        return speak

    g = StateGraph(State)
    g.add_node("select", select)
    for name in AGENTS:
        g.add_node(name, agent(name))
        g.add_edge(name, "select")
    g.add_edge(START, "select")
    g.add_conditional_edges("select", lambda s: s["next"], {**{a: a for a in AGENTS}, END: END})
    return g.compile()


def main():
    n = int(sys.argv[1])
    graph = build(n)
    out = graph.invoke({"messages": [HumanMessage(content="Should the nightly reports move to a read replica?")],
                        "next": "", "rounds": 0}, {"recursion_limit": 2 * n + 10})
    spoke = [m.name for m in out["messages"][1:]]
    assert len(spoke) == n, (len(spoke), n)


if __name__ == "__main__":
    main()
