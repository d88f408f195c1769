#!/usr/bin/env python3
"""Regenerate share/prices/prices.json, the subset of LiteLLM's price table that agent-meeting
embeds (docs/design/llm.md#prices): the chat and responses models of OpenAI, Anthropic and Gemini, with
input, output, cached-read and cache-write prices per token, the input window and the
endpoints. Usage: python3 share/prices/make_prices.py PATH/model_prices_and_context_window.json VERSION
(the file ships in the litellm wheel as litellm/model_prices_and_context_window_backup.json)."""
import datetime
import json
import sys

KEEP = {"openai", "anthropic", "gemini"}
# (ours, LiteLLM's field), in the order written.
FIELDS = [
    ("input", "input_cost_per_token"),
    ("output", "output_cost_per_token"),
    ("cache_read", "cache_read_input_token_cost"),
    ("cache_write", "cache_creation_input_token_cost"),
    ("max_input_tokens", "max_input_tokens"),
    ("endpoints", "supported_endpoints"),
]


def main():
    src, version = sys.argv[1], sys.argv[2]
    table = json.load(open(src))
    models = {}
    for name, v in sorted(table.items()):
        if not isinstance(v, dict) or v.get("litellm_provider") not in KEEP:
            continue
        if v.get("mode") not in ("chat", "responses") or "input_cost_per_token" not in v:
            continue
        row = {"provider": v["litellm_provider"]}
        row.update({short: v[long] for short, long in FIELDS if v.get(long) is not None})
        models[name] = row
    out = {
        "source": f"LiteLLM {version}, model_prices_and_context_window.json (MIT, Copyright (c) 2023 Berri AI; see NOTICE)",
        "date": datetime.date.today().isoformat(),
        "unit": "USD per token",
        "models": models,
    }
    with open("share/prices/prices.json", "w") as f:
        json.dump(out, f, indent=0, separators=(",", ":"))
        f.write("\n")
    print(f"{len(models)} models", file=sys.stderr)


if __name__ == "__main__":
    main()
