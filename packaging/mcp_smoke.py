#!/usr/bin/env python3
"""An MCP client in miniature for `make test-dist`: starts a server over stdio (the command
given, or with --mcpb DIR WORKSPACE the command an unpacked .mcpb bundle's manifest.json names),
sends initialize, notifications/initialized and tools/list, checks the answers, closes stdin and
wants exit 0. Prints the server's name, version and tools."""
import json
import os
import subprocess
import sys


def bundle_command(folder, workspace):
    """The command, arguments and environment a client derives from a bundle's manifest."""
    manifest = json.load(open(os.path.join(folder, "manifest.json")))
    config = manifest["server"]["mcp_config"]

    def fill(text):
        return text.replace("${__dirname}", folder).replace("${user_config.workspace}", workspace)

    env = {k: fill(v) for k, v in config.get("env", {}).items() if "${user_config." not in v}
    return [fill(config["command"])] + [fill(a) for a in config.get("args", [])], env


def main():
    args = sys.argv[1:]
    env = dict(os.environ)
    if args[:1] == ["--mcpb"]:
        command, extra = bundle_command(os.path.abspath(args[1]), os.path.abspath(args[2]))
        env.update(extra)
    else:
        command = args
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)

    def call(id, method, params):
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        assert answer.get("id") == id and "result" in answer, f"{method}: {answer}"
        return answer["result"]

    init = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "mcp_smoke", "version": "1"}})
    assert init["protocolVersion"] == "2025-06-18", init
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    tools = [t["name"] for t in call(2, "tools/list", {})["tools"]]
    assert "meeting_run" in tools, tools
    server.stdin.close()
    code = server.wait(timeout=30)
    assert code == 0, f"exit {code}"
    info = init["serverInfo"]
    print(f"mcp: {info['name']} {info['version']}, {len(tools)} tools: {', '.join(tools)}")


if __name__ == "__main__":
    main()
