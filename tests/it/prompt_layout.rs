//! The prompt layout (docs/design/prompts.md#prompt-layout): the stable prefix (system, then the
//! meeting's block) is the same bytes in every call of a meeting (the PM's after its first: a
//! block of their own), Anthropic requests mark it
//! with `cache_control`, the reply format is said once, and empty lists are left out.

use agent_meeting::llm::SCHEMA_BLOCK_HEAD;
use agent_meeting::model::Board;
use agent_meeting::stage::{agent_turn as turn, pm_step as pm};
use serde_json::{json, Value};

use crate::fake_http::*;
use crate::fixtures::{self as common, board, board_with_call};
use crate::fixtures::{demo_cassette, meeting_cmd};
use crate::harness::{cli, Cli, Workdir};

/// Where the per-call part of a user message starts (after the meeting's block).
const CHANGING: &str = "\n# Whiteboard\n";

fn exchange_log(work: &Workdir) -> Vec<Value> {
    work.read("runs/demo-test/llm.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `(system, stable block, rest of the first user message)` of one logged call.
fn parts(line: &Value) -> (&str, &str, &str) {
    let system = line["system"].as_str().unwrap();
    let user = line["messages"][0]["content"].as_str().unwrap();
    let at = user
        .find(CHANGING)
        .unwrap_or_else(|| panic!("no {CHANGING:?} in {user}"));
    (system, &user[..at], &user[at..])
}

#[test]
fn the_stable_prefix_is_the_same_bytes_in_every_call_of_a_meeting() {
    let work = Workdir::new();
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .run()
        .exit(0);
    let log = exchange_log(&work);
    let (pms, agents): (Vec<&Value>, Vec<&Value>) = log.iter().partition(|l| l["caller"] == "pm");
    assert_eq!(
        (pms.len(), agents.len()),
        (4, 4),
        "the demo: 4 PM calls, 4 agent calls"
    );

    // One system and one meeting block for every call, the PM's and every agent's alike.
    let (system, stable, _) = parts(agents[0]);
    assert!(
        stable.contains("<<<document meetings/demo/docs/costs.md"),
        "the documents: {stable}"
    );
    assert!(
        stable.contains("- document_id \"meetings/demo/docs/team.md\", source_path \"meetings/demo/docs/team.md\""),
        "the citable ids"
    );
    assert!(stable.contains("Required questions"), "the decision packet");
    assert!(
        system.len() + stable.len() >= 4096,
        "long enough for a provider's prefix cache"
    );
    // The PM reads the documents' text until someone has answered it, then an index of them
    // (docs/design/context.md#what-the-pm-reads): its later rounds share a block of their own.
    let (_, pm_later, _) = parts(pms[1]);
    assert!(
        !pm_later.contains("<<<document") && pm_later.contains("Required questions"),
        "{pm_later}"
    );
    for line in &log {
        let (s, st, rest) = parts(line);
        assert_eq!(s, system, "call {}: the meeting's system", line["seq"]);
        let block = if line["caller"] == "pm" && line["seq"] != pms[0]["seq"] {
            pm_later
        } else {
            stable
        };
        assert_eq!(st, block, "call {}: the meeting block", line["seq"]);
        let own = if line["caller"] == "pm" {
            "\n# Your part: PM\n"
        } else {
            "\n# Question from the PM\n"
        };
        assert!(rest.contains(own), "the caller's own part follows: {rest}");
        // What is sent starts with those bytes (the stable block is the message's head).
        let sent = format!("{s}{}", line["messages"][0]["content"].as_str().unwrap());
        assert!(sent.starts_with(&format!("{system}{block}")));
    }
    // An agent call sees the whiteboard the PM call before it saw, without the latest answer
    // (the demo's lists are short of the agents' cut): the shared prefix runs on through the
    // lists.
    let mut pairs = 0;
    for pair in log.windows(2) {
        if pair[0]["caller"] == "pm" && pair[1]["caller"] != "pm" {
            let (_, _, pm_rest) = parts(&pair[0]);
            let (_, _, agent_rest) = parts(&pair[1]);
            let board_of = |r: &str| r[..r.find("\n# Your").unwrap()].to_string();
            let (pm_board, agent_board) = (board_of(pm_rest), board_of(agent_rest));
            let lists = pm_board
                .split("\nLatest: ")
                .next()
                .unwrap()
                .trim_end()
                .to_string();
            if lists.ends_with("# Whiteboard") {
                assert_eq!(agent_board.trim_end(), "\n# Whiteboard\nNothing on it yet.");
            } else {
                pairs += 1;
                assert_eq!(agent_board.trim_end(), lists, "the PM's lists, no latest");
            }
        }
    }
    assert!(
        pairs >= 2,
        "the demo has agent calls after a filled whiteboard"
    );
    // The retry appends to the unchanged prompt.
    let retried: Vec<&&Value> = agents
        .iter()
        .filter(|l| l["messages"].as_array().unwrap().len() == 3)
        .collect();
    assert_eq!(retried.len(), 1, "the demo has one agent retry");
    let first = agents
        .iter()
        .find(|l| l["caller"] == retried[0]["caller"])
        .unwrap();
    assert_eq!(first["messages"][0], retried[0]["messages"][0]);
}

/// A stage program pointed at `server` as its provider (`openai` or `anthropic`).
fn program(name: &str, server: &FakeServer, provider: &str) -> Cli {
    let mut c = cli(name);
    c.env("OPENAI_API_KEY", "sk-test-LAYOUT0123456789")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-LAYOUT0123456789")
        .env("ANTHROPIC_BASE_URL", format!("{}/anthropic", server.url))
        .env("MEETING_RETRY_BASE_MS", "0")
        .env("AGENT_MEETING_NOW", common::NOW)
        .args(["--provider", provider]);
    c
}

fn answer() -> Value {
    json!({"response": "About $4,000 per month.", "key_points": [], "risks": [],
           "recommendations": [], "citations": [{"document_id": "docs/costs.md",
           "source_path": "docs/costs.md", "quote": "The cluster costs $4,000 per month."}]})
}

fn with_provider(mut b: Board, provider: &str) -> Board {
    b.llm.provider = provider.into();
    b
}

#[test]
fn anthropic_requests_mark_the_system_and_the_documents_block() {
    let server = FakeServer::start(vec![json(
        200,
        &anthropic_tool("agent_turn_result", answer(), Some((100, 20))),
    )]);
    let b = with_provider(board_with_call("arch"), "anthropic");
    program("agent-turn", &server, "anthropic")
        .stdin(serde_json::to_string(&b).unwrap())
        .run()
        .success();
    let body = server.request(0).json();
    let ephemeral = json!({"type": "ephemeral"});
    let system = body["system"].as_array().expect("system as text blocks");
    assert_eq!(system.len(), 1);
    assert_eq!(system[0]["cache_control"], ephemeral);
    assert_eq!(
        system[0]["text"],
        turn::agent_system_prompt(false).unwrap().as_str()
    );
    let content = body["messages"][0]["content"].as_array().expect("blocks");
    assert_eq!(content.len(), 2, "{content:?}");
    assert_eq!(
        content[0]["cache_control"], ephemeral,
        "the documents block"
    );
    let docs = content[0]["text"].as_str().unwrap();
    assert!(
        docs.contains("The cluster costs $4,000 per month."),
        "{docs}"
    );
    assert!(docs.contains("Documents you may cite"), "{docs}");
    assert!(
        content[1].get("cache_control").is_none(),
        "the changing part is not marked"
    );
    let rest = content[1]["text"].as_str().unwrap();
    assert!(
        rest.contains("What does the cluster cost per month?"),
        "{rest}"
    );
    // The PM's request is marked the same way: system, then its meeting block.
    let server = FakeServer::start(vec![json(
        200,
        &anthropic_tool(
            "pm_decision",
            common::pm::call("biz", "What does the cluster cost?"),
            Some((100, 20)),
        ),
    )]);
    program("pm-step", &server, "anthropic")
        .stdin(serde_json::to_string(&with_provider(board(), "anthropic")).unwrap())
        .run()
        .success();
    let body = server.request(0).json();
    assert_eq!(body["system"][0]["cache_control"], ephemeral);
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        ephemeral
    );
    assert!(body["messages"][0]["content"][1]["text"]
        .as_str()
        .unwrap()
        .contains("Participants"));
}

/// The whole text of a request as sent to an OpenAI-compatible server.
fn sent_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect()
}

#[test]
fn the_reply_format_is_said_once() {
    for native in [true, false] {
        let server = FakeServer::start(vec![
            json(200, &openai_ok(&answer().to_string(), Some((100, 20)))),
            json(
                200,
                &openai_ok(
                    &common::pm::call("biz", "What does it cost?").to_string(),
                    Some((100, 20)),
                ),
            ),
        ]);
        let flags: &[&str] = if native { &[] } else { &["--no-native-schema"] };
        for (i, (stage, b)) in [
            ("agent-turn", board_with_call("arch")),
            ("pm-step", board()),
        ]
        .into_iter()
        .enumerate()
        {
            program(stage, &server, "openai")
                .args(flags)
                .stdin(serde_json::to_string(&with_provider(b, "openai")).unwrap())
                .run()
                .success();
            let body = server.request(i).json();
            let text = sent_text(&body);
            assert_eq!(
                text.matches("Reply fields: ").count(),
                usize::from(native),
                "{stage}: the field guide, only with native output"
            );
            assert!(
                !text.contains("{\"response\": \"...\""),
                "{stage}: no JSON example"
            );
            assert!(
                !text.contains("{\"analysis\": \"...\""),
                "{stage}: no JSON example"
            );
            let blocks = text.matches(SCHEMA_BLOCK_HEAD).count();
            if native {
                assert_eq!(blocks, 0, "{stage}: the schema travels in the request only");
                assert!(!text.contains("\"properties\""), "{stage}: {text}");
                assert!(body["response_format"]["json_schema"].is_object());
            } else {
                assert_eq!(blocks, 1, "{stage}: one schema block: {text}");
                let (field, short) = if stage == "pm-step" {
                    ("\"next_action\"", "\"next_action\": \"CALL_AGENT\", ")
                } else {
                    ("\"key_points\"", "string[]")
                };
                assert_eq!(text.matches(field).count(), 1, "{stage}: once: {text}");
                assert!(text.contains(short), "{stage}: compact: {text}");
                assert_eq!(body["response_format"], json!({"type": "json_object"}));
            }
        }
    }
}

#[test]
fn empty_lists_and_sections_are_left_out() {
    // A fresh board: no whiteboard lists but the seeded open question, no errors.
    let mut b = board();
    crate::fixtures::set_open_questions(&mut b, vec![]);
    let text = pm::render_pm_user(&b).unwrap();
    let mut call = board_with_call("arch");
    crate::fixtures::set_open_questions(&mut call, vec![]);
    call.context_bundle.documents.clear();
    call.context_bundle.summary.clear();
    let agent = turn::render_agent_user(&call, &call.pending_calls[0]).unwrap();
    for (who, t) in [("pm", &text), ("agent", &agent)] {
        assert!(!t.contains("(none)"), "{who}: {t}");
        assert!(!t.to_lowercase().contains("(empty"), "{who}: {t}");
        for header in [
            "Key points:",
            "Open questions:",
            "Candidate decisions:",
            "Risks:",
            "Recent errors:",
            "Last error:",
        ] {
            assert!(!t.contains(header), "{who}: an empty {header}: {t}");
        }
        let first = if who == "pm" {
            "\nLatest: No participant has spoken yet.\n"
        } else {
            "# Whiteboard\nNothing on it yet.\n"
        };
        assert!(t.contains(first), "{who}: {t}");
        assert!(
            !t.contains("\n\n\n"),
            "{who}: no empty section left behind: {t:?}"
        );
    }
    assert!(!agent.contains("Documents you may cite"), "{agent}");
    // Without documents the schema alone says so (`citations` at most 0 items): said once.
    assert!(!agent.contains("citations"), "{agent}");
    // The summary's topic and counts lines are not repeated under the header.
    b.summary = format!(
        "Topic: {}\narch: Five months.\nKey points: 0, open questions: 0, candidate decisions: 0",
        b.topic
    );
    let text = pm::render_pm_user(&b).unwrap();
    assert_eq!(text.matches(&b.topic).count(), 1, "{text}");
    assert!(text.contains("\nLatest: arch: Five months.\n"), "{text}");
    assert!(!text.contains("open questions: 0"), "{text}");
}

#[test]
fn an_agent_sees_the_first_items_of_each_list_and_no_latest_answer() {
    let mut call = board_with_call("arch");
    crate::fixtures::set_findings(
        &mut call,
        agent_meeting::model::FindingKind::KeyPoint,
        (1..=15).map(|i| format!("point {i}")).collect(),
    );
    crate::fixtures::set_findings(
        &mut call,
        agent_meeting::model::FindingKind::Risk,
        vec!["risk 1".into()],
    );
    call.summary = "arch: Five months.".into();
    let pm = pm::render_pm_user(&call).unwrap();
    let agent = turn::render_agent_user(&call, &call.pending_calls[0]).unwrap();
    assert!(pm.contains("- point 15\n") && pm.contains("Latest: arch: Five months."));
    assert!(agent.contains("- point 10\n"), "{agent}");
    assert!(!agent.contains("- point 11\n"), "{agent}");
    assert!(
        agent.contains("Risks:\n- risk 1\n"),
        "every list, cut: {agent}"
    );
    assert!(!agent.contains("Five months"), "{agent}");
}
