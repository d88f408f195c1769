//! What a meeting cost (docs/design/llm.md#prices): live calls priced at the embedded table's
//! prices, in the MeetingResult, the terminal's last line and the report's appendix; a model
//! the table does not know is unpriced everywhere, never $0; a replay is not priced.

use serde_json::Value;

use crate::fake_http::{json, openai_ok, with_header, FakeServer};
use crate::fixtures::{demo_cassette, meeting_cmd, pm, NOW};
use crate::harness::{programs_path, root, skip_without, Cli, Run, Tool, Workdir};

/// A meeting of one turn (the PM asks arch, arch answers, the PM finishes) against a fake
/// OpenAI server that reports 1,000 prompt and 100 completion tokens a call, with `model`.
fn priced_meeting(work: &Workdir, model: &str, extra: &[&str]) -> Run {
    served_meeting(work, model, extra, None)
}

/// [`priced_meeting`], each reply carrying a gateway's bill of `billed` dollars when given
/// (LiteLLM's `x-litellm-response-cost`).
fn served_meeting(work: &Workdir, model: &str, extra: &[&str], billed: Option<&str>) -> Run {
    let replies = [
        pm::call("arch", "What would a rewrite cost?"),
        pm::answer(
            "A rewrite costs two engineers a quarter.",
            &["Two engineers, one quarter."],
        ),
        pm::finish("### Executive Summary\nRewrite.\n\n### Recommendation\nRewrite it."),
    ];
    let server = FakeServer::start(
        replies
            .iter()
            .map(|r| {
                let body = openai_ok(&r.to_string(), Some((1000, 100)));
                match billed {
                    Some(usd) => with_header(200, "x-litellm-response-cost", usd, &body),
                    None => json(200, &body),
                }
            })
            .collect(),
    );
    let out = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args([
            "--provider",
            "openai",
            "--model",
            model,
            "--trace-id",
            "cost-test",
        ])
        .args(["--report-file", "report.md"])
        .args(extra)
        .run();
    assert_eq!(server.count(), 3, "{}", out.stderr());
    out
}

/// The built-in table's prices of an OpenAI model, per token: (input, output).
fn table_price(model: &str) -> (f64, f64) {
    let text = std::fs::read_to_string(root().join("share/prices/prices.json")).unwrap();
    let table: Value = serde_json::from_str(&text).unwrap();
    let row = &table["models"][model];
    (
        row["input"].as_f64().unwrap(),
        row["output"].as_f64().unwrap(),
    )
}

#[test]
fn a_meeting_on_a_priced_model_says_what_it_cost_everywhere() {
    let work = Workdir::new();
    let out = priced_meeting(&work, "gpt-4o-mini", &[]);
    out.success();
    let result: Value = out.json();
    let (input, output) = table_price("gpt-4o-mini");
    let expected = 3.0 * (1000.0 * input + 100.0 * output);
    let usd = result["cost"]["usd"].as_f64().expect("a total");
    assert!((usd - expected).abs() < 1e-12, "{usd} vs {expected}");
    assert!(result["cost"]["prices"]
        .as_str()
        .unwrap()
        .contains("LiteLLM"));
    let shown = format!("${expected:.4}");
    out.stderr_has(&format!(", {shown} → "));
    let report = work.read("report.md");
    assert!(
        report.contains(&format!("- Cost: {shown} (at the prices of LiteLLM")),
        "{report}"
    );
    // The batch table says it too.
    if skip_without(Tool::Jq) {
        return;
    }
    let mut summary = Cli::new(std::process::Command::new("sh"));
    summary
        .arg(root().join("share/flows/summary.sh"))
        .arg(work.join("runs/cost-test"))
        .env("PATH", programs_path());
    let table = summary.run();
    table.success();
    let rounded = (expected * 10000.0).round() / 10000.0;
    table.stdout_has(&format!("| ${rounded} |"));
}

#[test]
fn a_model_the_table_does_not_know_is_unpriced_never_free() {
    let work = Workdir::new();
    let out = priced_meeting(&work, "qwen3:8b", &[]);
    out.success();
    let result: Value = out.json();
    assert!(result["cost"]["usd"].is_null(), "{result}");
    assert_eq!(result["cost"]["by_caller"]["pm"], Value::Null);
    let unpriced = result["cost"]["unpriced"].as_array().unwrap();
    assert!(
        unpriced.iter().any(|u| u == "arch (openai qwen3:8b)"),
        "{result}"
    );
    out.stderr_has("unpriced (");
    let report = work.read("report.md");
    assert!(report.contains("- Cost: unpriced ("), "{report}");
    let saved = crate::fixtures::report_result(&work.join("runs/cost-test")).unwrap();
    assert!(saved["cost"]["usd"].is_null() && saved["cost"]["unpriced"].is_array());
    assert!(!report.contains("$0.0000") && !out.stderr().contains("$0.0000"));
}

#[test]
fn a_replayed_meeting_is_not_priced() {
    let work = Workdir::new();
    let out = meeting_cmd(work.path(), &demo_cassette(), &[]).run();
    out.success();
    let result: Value = out.json();
    assert!(result.get("cost").is_none(), "{result}");
    assert!(!work.read("report.md").contains("- Cost:"));
}

/// `--prices FILE`: a private table prices a model the built-in one does not know; a file
/// that is no price table is refused before any call, naming it.
#[test]
fn a_private_price_table_prices_a_private_model() {
    let work = Workdir::new();
    let table = work.write(
        "prices.json",
        r#"{"source": "our contract", "date": "2026-12-01", "models": {"house-model": {"provider": "openai", "input": 1e-6, "output": 2e-6}}}"#,
    );
    let out = priced_meeting(&work, "house-model", &["--prices", table.to_str().unwrap()]);
    out.success();
    let result: Value = out.json();
    let usd = result["cost"]["usd"]
        .as_f64()
        .expect("priced by the private table");
    assert!(
        (usd - 3.0 * (1000.0 * 1e-6 + 100.0 * 2e-6)).abs() < 1e-12,
        "{usd}"
    );
    assert_eq!(result["cost"]["prices"], "our contract of 2026-12-01");
    let bad = work.write("bad.json", "{\"models\": 3}");
    work.cli("meeting")
        .args([
            "--topic",
            "x",
            "--agents",
            "arch",
            "--provider",
            "sample",
            "--prices",
        ])
        .arg(&bad)
        .run()
        .exit(2)
        .stderr_has("bad.json");
}

/// A gateway's own bill (LiteLLM's `x-litellm-response-cost`) wins over the table, also for a
/// model the table does not know.
#[test]
fn a_gateways_bill_wins_over_the_table() {
    let work = Workdir::new();
    let out = served_meeting(&work, "house-model", &[], Some("0.125"));
    out.success();
    let result: Value = out.json();
    assert_eq!(result["cost"]["usd"].as_f64(), Some(0.375), "{result}");
    assert_eq!(result["cost"]["by_caller"]["pm"].as_f64(), Some(0.25));
    assert_eq!(result["cost"]["billed"], serde_json::json!(["arch", "pm"]));
    assert!(result["cost"].get("unpriced").is_none(), "{result}");
    // The report says the cost is the gateway's bill, not the table's prices.
    let report = std::fs::read_to_string(work.join("report.md")).unwrap();
    assert!(
        report.contains("- Cost: $0.3750 (as the gateway billed it)"),
        "{report}"
    );
}

/// A fake OpenAI server for a meeting that would go on as long as it may: the PM asks arch a
/// new question every round and finishes only in its closing round; every call reports
/// 2,000 prompt and 300 completion tokens.
fn endless_server() -> FakeServer {
    let round = std::sync::atomic::AtomicUsize::new(0);
    FakeServer::answering(move |req| {
        let n = round.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let reply = if req.body.contains("Mode: forced_finish") {
            pm::finish("### Executive Summary\nStop here.\n\n### Recommendation\nRewrite it.")
        } else if req.body.contains("pm_decision") {
            pm::call("arch", &format!("What does option {n} cost?"))
        } else {
            pm::answer(
                &format!("Option {n} costs {n} weeks."),
                &[&format!("{n} weeks")],
            )
        };
        json(200, &openai_ok(&reply.to_string(), Some((2000, 300))))
    })
}

/// `meeting` against [`endless_server`] with gpt-4o-mini and up to 40 loops.
fn endless_meeting(work: &Workdir, server: &FakeServer, extra: &[&str]) -> Run {
    work.cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "openai", "--model", "gpt-4o-mini"])
        .args(["--trace-id", "budget-test", "--max-loops", "40"])
        .args(["--report-file", "report.md"])
        .args(extra)
        .run()
}

/// `--max-cost`: the meeting closes in time to write its report inside the budget, and says
/// why with the arithmetic — the event, the terminal's closing line, the Process Note, the
/// appendix; what it spent (priced as the report prices it) never passes the limit.
#[test]
fn a_cost_budget_closes_the_meeting_inside_it() {
    let work = Workdir::new();
    let server = endless_server();
    let out = endless_meeting(&work, &server, &["--max-cost", "0.01"]);
    out.success();
    out.stderr_has("pm closing round (cost budget): FINISH (");
    let result: Value = out.json();
    assert_eq!(result["status"], "finished");
    assert_eq!(result["forced"], true);
    let usd = result["cost"]["usd"].as_f64().expect("priced");
    assert!(usd <= 0.01, "spent ${usd} of a $0.01 budget");
    let (input, output) = table_price("gpt-4o-mini");
    let per_call = 2000.0 * input + 300.0 * output;
    assert!(
        usd > 0.01 / 2.0 && server.count() >= 6,
        "the budget left half unspent: ${usd} in {} calls of ${per_call}",
        server.count()
    );
    let run_dir = work.join("runs/budget-test");
    let board = crate::fixtures::final_board(&run_dir);
    assert_eq!(board["max_cost"]["usd"], 0.01);
    assert_eq!(board["max_cost"]["input_usd_per_mtok"], input * 1e6);
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    let forced: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "forced_finish")
        .collect();
    assert_eq!(forced.len(), 1, "{events}");
    let message = forced[0]["message"].as_str().unwrap();
    assert!(message.starts_with("cost budget: spent $"), "{message}");
    let report = std::fs::read_to_string(work.join("report.md")).unwrap();
    let note = report
        .split("## Process Note")
        .nth(1)
        .expect("a Process Note");
    assert!(
        note.contains("Meeting stopped by its cost budget")
            && note.contains("of $0.0100 had been spent")
            && note.contains("per million prompt"),
        "{note}"
    );
    assert!(report.contains("- Cost budget: $0.0"), "{report}");
    assert!(report.contains(" of $0.0100 spent"), "{report}");
}

/// A budget in dollars needs prices: a model the table does not price is refused before any
/// call, naming the caller, the model and `--prices`; a budget of no dollars is refused too.
#[test]
fn a_cost_budget_needs_priced_models() {
    let work = Workdir::new();
    let server = endless_server();
    let out = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .args(["--topic", "Adopt Rust?", "--agents", "arch"])
        .args([
            "--provider",
            "openai",
            "--model",
            "qwen3:8b",
            "--max-cost",
            "1",
        ])
        .run();
    out.exit(2)
        .stderr_has("--max-cost: pm uses openai qwen3:8b, which the price table")
        .stderr_has("--prices FILE");
    assert_eq!(server.count(), 0);
    work.cli("meeting")
        .args([
            "--topic",
            "Adopt Rust?",
            "--agents",
            "arch",
            "--max-cost",
            "0",
        ])
        .run()
        .exit(2)
        .stderr_has("--max-cost");
}

/// The meeting file's `budget.max_cost_usd` sets the budget, and `--max-cost` wins over it.
#[test]
fn the_meeting_file_sets_the_cost_budget_and_the_flag_wins() {
    let work = Workdir::new();
    work.write(
        "m.yaml",
        "topic: Adopt Rust for ingest?\nbudget:\n  max_cost_usd: 0.02\n",
    );
    let server = endless_server();
    let file = ["--meeting-file", "m.yaml", "--quiet"];
    let run = |extra: &[&str]| {
        let mut cmd = work.cli("meeting");
        cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
            .env("OPENAI_API_KEY", "test-key")
            .args(["--agents", "arch", "--provider", "openai"])
            .args(["--model", "gpt-4o-mini", "--max-loops", "40"])
            .args(file)
            .args(extra);
        cmd.run()
    };
    let out = run(&[]);
    let from_file: Value = out.success().json();
    let usd = from_file["cost"]["usd"].as_f64().unwrap();
    assert!(usd > 0.01 && usd <= 0.02, "${usd} of the file's $0.02");
    let out = run(&["--max-cost", "0.005"]);
    let from_flag: Value = out.success().json();
    let usd = from_flag["cost"]["usd"].as_f64().unwrap();
    assert!(usd <= 0.005, "${usd} of the flag's $0.005");
}

/// A prompt that cannot fit the model's input window (the price table's `max_input_tokens`),
/// even counted at the fewest tokens it could be, is not sent: the PM is not asked, the
/// fallback report says why, and the server sees no request (docs/design/llm.md#truncation).
#[test]
fn a_prompt_beyond_the_models_window_is_not_sent() {
    let work = Workdir::new();
    let table = work.write(
        "prices.json",
        r#"{"source": "ours", "date": "2026-12-01", "models": {"tiny": {"provider": "openai", "input": 1e-6, "output": 2e-6, "max_input_tokens": 100}}}"#,
    );
    let server = endless_server();
    let out = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "openai", "--model", "tiny", "--prices"])
        .arg(&table)
        .args(["--report-file", "report.md"])
        .run();
    out.exit(1)
        .stderr_has("does not fit tiny's input window of 100 tokens");
    assert_eq!(server.count(), 0, "nothing sent");
    let report = work.read("report.md");
    assert!(report.contains("- Report kind: fallback"), "{report}");
    assert!(report.contains("max_input_tokens"), "{report}");
}

/// A dollar budget is priced once, by init-board, with the models the callers will use — the
/// config file's model per caller included — whether init-board runs alone or inside
/// `meeting`, and a resume keeps that price (it priced the budget again without the config
/// file's models, so a resumed meeting's limit changed under it).
#[test]
fn a_cost_budget_is_priced_once_with_the_callers_models() {
    let work = Workdir::new();
    let config = work.write("config.yaml", "model: gpt-4o-mini\nmodels:\n  pm: gpt-4o\n");
    let (dear, _) = table_price("gpt-4o");
    let (cheap, _) = table_price("gpt-4o-mini");
    assert!(dear > cheap);
    // init-board alone: the PM's model is the config file's.
    let packet = work
        .cli("collect-context")
        .args(["--topic", "Adopt Rust for ingest?"])
        .run()
        .success()
        .stdout();
    let board: Value = work
        .cli("init-board")
        .env("AGENT_MEETING_CONFIG", &config)
        .env("OPENAI_API_KEY", "test-key")
        .args([
            "--agents",
            "arch",
            "--provider",
            "openai",
            "--max-cost",
            "1",
        ])
        .stdin(packet)
        .run()
        .success()
        .json();
    assert_eq!(board["max_cost"]["input_usd_per_mtok"], dear * 1e6);
    // meeting: stopped after its first round, then resumed to its end.
    let server = endless_server();
    let meeting = |args: &[&str]| {
        work.cli("meeting")
            .env("AGENT_MEETING_CONFIG", &config)
            .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
            .env("OPENAI_API_KEY", "test-key")
            .env("AGENT_MEETING_NOW", NOW)
            .args(args)
            .run()
    };
    meeting(&[
        "--topic",
        "Adopt Rust for ingest?",
        "--agents",
        "arch",
        "--provider",
        "openai",
        "--trace-id",
        "priced",
        "--max-loops",
        "3",
        "--max-cost",
        "1",
        "--report-file",
        "report.md",
        "--stage",
        "agent-turn=exit 1",
    ])
    .exit(1);
    let run_dir = work.join("runs/priced");
    let first: Value =
        serde_json::from_str(&work.read("runs/priced/0002-init-board.out.json")).unwrap();
    assert_eq!(first["max_cost"]["input_usd_per_mtok"], dear * 1e6);
    meeting(&["--resume", "runs/priced", "--stage", "agent-turn="]).success();
    let last = crate::fixtures::final_board(&run_dir);
    assert_eq!(last["status"], "finished");
    assert_eq!(
        last["max_cost"], first["max_cost"],
        "priced again on resume"
    );
}

/// A price below zero (or not a number) is no price: a table with one is refused before any
/// call, naming the file and the field — a negative price made spending look like earning, and
/// `--max-cost` never closed the meeting; named by `AGENT_MEETING_PRICES`, the same.
#[test]
fn a_price_table_with_a_negative_price_is_refused() {
    let work = Workdir::new();
    let table = work.write(
        "prices.json",
        r#"{"source": "tampered", "date": "2026-12-01", "models": {"gpt-4o-mini": {"provider": "openai", "input": -1e-3, "output": 6e-7}}}"#,
    );
    let server = endless_server();
    let out = endless_meeting(
        &work,
        &server,
        &["--max-cost", "0.01", "--prices", table.to_str().unwrap()],
    );
    out.exit(2).one_stderr_line().stderr_has(
        "prices.json: models.gpt-4o-mini.input: -0.001 (expected dollars per token, 0 or more)",
    );
    assert_eq!(server.count(), 0);
    // Named by its variable, the same table is the same refusal.
    work.cli("meeting")
        .env("AGENT_MEETING_PRICES", &table)
        .env("OPENAI_API_KEY", "test-key")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "openai", "--max-cost", "0.01"])
        .run()
        .exit(2)
        .stderr_has("models.gpt-4o-mini.input: -0.001");
}
