//! The quality benchmark (bench/quality/README.md): its cases hide their answer keys, its
//! grader scores what a board holds, and its offline path replays the shipped cassettes into the
//! four-mode table. The benchmark itself runs outside `make test` (`make bench-quality`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::{bin_dir, clean_env, cli, root, skip_without, Tool};

fn bench() -> PathBuf {
    root().join("bench/quality")
}

fn keys() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(bench().join("keys.json")).unwrap();
    let keys: Value = serde_json::from_str(&text).unwrap();
    keys["cases"].as_object().unwrap().clone()
}

/// Every file of a case folder, with its text.
fn case_files(case: &Path) -> Vec<(PathBuf, String)> {
    walkdir::WalkDir::new(case)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            (e.path().to_path_buf(), text)
        })
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// At least 20 cases, each a meeting file and its documents only; each key's reference is one
/// of the meeting's options, its required questions are the meeting's, its quotes are planted
/// verbatim in the documents — and no key's reasoning, nor the key file, appears in any case
/// file or in what collect-context sends a model.
#[test]
fn cases_plant_their_facts_and_hide_their_keys() {
    let keys = keys();
    assert!(keys.len() >= 20, "{} cases", keys.len());
    let cases = std::fs::read_dir(bench().join("cases")).unwrap().count();
    assert_eq!(
        cases,
        keys.len(),
        "every case folder has a key and every key a folder"
    );
    for (id, key) in &keys {
        let dir = bench().join("cases").join(id);
        let files = case_files(&dir);
        let meeting_file = dir.join("meeting.yaml");
        for (path, _) in &files {
            let rel = path.strip_prefix(&dir).unwrap();
            assert!(
                rel == Path::new("meeting.yaml") || rel.starts_with("docs"),
                "{id}: {} is neither the meeting file nor a document",
                rel.display()
            );
        }
        let docs: String = files
            .iter()
            .filter(|(p, _)| p != &meeting_file)
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        for quote in strings(&key["quotes"]) {
            assert!(docs.contains(&quote), "{id}: quote not planted: {quote}");
        }
        let input = cli("collect-context")
            .args(["--meeting-file", meeting_file.to_str().unwrap()])
            .run();
        let input = input.success().stdout();
        let packet: Value = serde_json::from_str(&input).unwrap();
        let dp = &packet["meeting_input"]["decision_packet"];
        let reference = key["reference"].as_str().unwrap();
        assert!(
            strings(&dp["options"]).iter().any(|o| o == reference),
            "{id}: the reference is not an option"
        );
        assert_eq!(
            strings(&dp["required_questions"]),
            strings(&key["required_questions"]),
            "{id}"
        );
        assert!(
            packet["context_bundle"]["documents"]
                .as_array()
                .unwrap()
                .len()
                >= 2,
            "{id}: its documents were not collected"
        );
        let why = key["why"].as_str().unwrap();
        for (what, text) in files
            .iter()
            .map(|(p, t)| (p.display().to_string(), t.as_str()))
            .chain([("collect-context output".to_string(), input.as_str())])
        {
            assert!(
                !text.contains(why),
                "{id}: the key's reasoning is in {what}"
            );
            assert!(
                !text.contains("keys.json"),
                "{id}: {what} names the key file"
            );
        }
    }
}

fn python() -> Command {
    let mut cmd = Command::new("python3");
    clean_env(&mut cmd).current_dir(root());
    cmd
}

/// The grader on hand-made boards: the reference chosen (with a reason after it) is correct,
/// another option or a choice naming none is not; a citation holding a planted quote is precise
/// and recalls it, an unrelated one is not; a required question with an answer counts.
#[test]
fn the_grader_scores_decision_questions_and_citations() {
    if skip_without(Tool::Python3) {
        return;
    }
    let key = keys()["c01-queue-vs-cron"].clone();
    let quotes = strings(&key["quotes"]);
    let questions = strings(&key["required_questions"]);
    let tmp = tempfile::tempdir().unwrap();
    let reference = key["reference"].as_str().unwrap();
    let grade_with = |choice: &str, arch: &str| -> Value {
        let board = json!({
            "record": {
                "decision": {"choice": choice, "confidence": "high"},
                "questions": [
                    {"id": "Q1", "text": questions[0], "origin": "required",
                     "answer": {"text": "Within five minutes.", "by": ["arch"]}},
                    {"id": "Q2", "text": questions[1], "origin": "required"}
                ]
            },
            "evidence": [
                {"quote": format!("Sales agreed with the two largest customers that {}.", quotes[0]), "verified": true},
                {"quote": "The cron host is shared with five other jobs", "verified": true}
            ],
            "final_report": "",
            "usage": {"calls": 2, "prompt_tokens": 100, "completion_tokens": 20},
            // For the oracle gap: arch named the reference; biz named two options, so nothing.
            "latest_agent_outputs": {
                "arch": {"response": arch, "recommendations": []},
                "biz": {"response": "",
                        "recommendations": [format!("Either keep the nightly cron job that sends the day's invoices or {reference}")]}
            }
        });
        let path = tmp.path().join("board.json");
        std::fs::write(&path, board.to_string()).unwrap();
        let out = python()
            .args([
                "bench/quality/grade.py",
                path.to_str().unwrap(),
                "c01-queue-vs-cron",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let said = format!("{reference} is the only way to keep the promise.");
    let grade = |choice: &str| grade_with(choice, &said);
    let g = grade(&format!("{reference}: it meets the 5-minute promise"));
    assert_eq!(g["correct"], true, "{g}");
    assert_eq!(g["required_answered"], 1);
    assert_eq!(g["required_total"], 2);
    assert_eq!(g["citation_precision"], 0.5);
    assert_eq!(g["citation_recall"], 0.5);
    assert_eq!(g["tokens"], 120);
    let g = grade("Keep the nightly cron job that sends the day's invoices");
    assert_eq!(g["correct"], false);
    // The reference was on the table (arch named it) and the decision did not take it.
    assert_eq!(g["proposed"], serde_json::json!([reference]), "{g}");
    assert_eq!(g["reference_proposed"], true, "{g}");
    assert_eq!(
        g["chosen_option"],
        "Keep the nightly cron job that sends the day's invoices"
    );
    // Named to turn it down is no proposal of it (issue #56): the oracle gap counts only
    // who put the reference forward.
    let g = grade_with(
        "Keep the nightly cron job that sends the day's invoices",
        &format!("{reference} is ruled out: the team cannot run workers."),
    );
    assert_eq!(g["proposed"], json!([]), "{g}");
    assert_eq!(g["reference_proposed"], false, "{g}");
    let g = grade(&format!(
        "[sample] none yet (first option listed: {reference})"
    ));
    assert_eq!(g["chosen_option"], Value::Null, "a choice naming no option");
    assert_eq!(g["correct"], false);
    // A choice without the option's verb of choosing names it (a Qwen reply's shape: "Apache
    // PDFBox" for "Use Apache PDFBox"); a verb that changes the meaning is never dropped.
    let g = grade("A managed queue (Amazon SQS) with workers, as the promise needs");
    assert_eq!(g["chosen_option"], reference, "{g}");
    assert_eq!(g["correct"], true);
    let g = grade("the nightly cron job that sends the day's invoices");
    assert_eq!(g["chosen_option"], Value::Null, "keep or replace it? {g}");
}

/// The table counts "none of these" apart from real choices (issue #56): five of nine probe
/// runs ended "none of these", which the Decided column counted as decisions.
#[test]
fn the_table_counts_none_of_these_apart_from_decisions() {
    if skip_without(Tool::Python3) {
        return;
    }
    let script = r#"
import json, sys
sys.path.insert(0, "bench/quality")
import run
def g(choice, kind="normal"):
    return {"choice": choice, "report_kind": kind, "correct": False, "required_answered": 0,
            "required_total": 2, "calls": 1, "tokens": 10, "citation_precision": None,
            "citation_recall": None, "reference_proposed": False}
cases = [{"modes": {"single": g(c, k)}} for c, k in [
    ("Use a managed queue", "normal"), ("none of these", "normal"), ("None of these.", "normal"),
    ("[sample] none yet", "normal"), ("Use a managed queue", "fallback")]]
row = run.summarize(cases, ["single"])[0]
print(json.dumps({"decided": row["decided"], "none": row["none_of_these"],
                  "table": run.table([row])}))
"#;
    let out = python().args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["decided"].clone(), v["none"].clone()),
        (json!(1), json!(2)),
        "{v}"
    );
    let table = v["table"].as_str().unwrap();
    assert!(table.contains("| Decided | None of these |"), "{table}");
    assert!(table.contains("| single | 0/5 | 1/5 | 2/5 |"), "{table}");
}

/// One sample per mode is noise (issue #58): with `--runs` every cell shows the mean and the
/// range over the runs, and a value the runs agree on is shown once. The distributed
/// condition counts the holders a meeting asked and those who said their own fact.
#[test]
fn repeated_runs_show_each_cell_with_its_spread_and_holders_are_counted() {
    if skip_without(Tool::Python3) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("llm.jsonl");
    let reply = |text: &str| {
        json!({"response": text, "key_points": [], "risks": [], "recommendations": [], "citations": []})
            .to_string()
    };
    let lines = [
        json!({"seq": 1, "caller": "pm", "response": "{}"}),
        json!({"seq": 2, "caller": "member-1", "response": reply("The platform team is dropping its self-run Kafka cluster next quarter.")}),
        json!({"seq": 3, "caller": "member-2", "response": reply("Kafka handles the most throughput, so Kafka.")}),
    ];
    std::fs::write(
        &log,
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let script = r#"
import json, sys
sys.path.insert(0, "bench/quality")
import run
facts = {"member-1": ["The platform team is dropping its self-run Kafka cluster next quarter and will not take new topics."],
         "member-2": ["Checkout will publish at most 200 events a second."],
         "member-3": ["RabbitMQ is already run by the platform team."]}
heard = run.holders_heard(sys.argv[1], facts)
def g(correct, tokens):
    return {"choice": "x", "report_kind": "normal", "correct": correct, "required_answered": 0,
            "required_total": 0, "calls": 2, "tokens": tokens, "citation_precision": None,
            "citation_recall": None, "reference_proposed": False, "holders": heard}
cases = [{"run": r, "modes": {"meeting": g(c, t)}} for r, c, t in
         [(1, True, 100), (1, True, 100), (2, False, 300), (2, True, 300)]]
print(json.dumps({"heard": heard, "table": run.table(run.summarize(cases, ["meeting"]))}))
"#;
    let out = python().args(["-c", script]).arg(&log).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["heard"],
        json!({"holders": 3, "asked": 2, "stated": 1}),
        "{v}"
    );
    let table = v["table"].as_str().unwrap();
    assert!(
        table.contains("| meeting | 1.5/2 (1–2) | 2/2 | 0/2 | 0 |"),
        "{table}"
    );
    assert!(table.contains("| 4 | 400 (200–600) |"), "{table}");
    assert!(
        table.contains("| Holders asked | Said their fact |") && table.contains("| 8/12 | 4/8 |"),
        "{table}"
    );
}

/// `run.py --offline` on two cases replays the shipped cassettes through the programs: the
/// table has the four modes (the council "not available" where the programs or the cassettes
/// lack it), the JSON grades every mode of every case, and a second run is byte-identical.
#[test]
fn the_offline_benchmark_prints_the_four_modes_byte_stable() {
    if skip_without(Tool::Python3) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = |n: u32| {
        let out_file = tmp.path().join(format!("results-{n}.json"));
        let out = python()
            .args([
                "bench/quality/run.py",
                "--offline",
                "--cases",
                "c01,c04",
                "--bin",
            ])
            .arg(bin_dir())
            .arg("--out")
            .arg(&out_file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        let results = std::fs::read_to_string(&out_file).unwrap();
        (String::from_utf8(out.stdout).unwrap(), results, stderr)
    };
    let (table, results, stderr) = run(1);
    for mode in ["single", "sc", "meeting", "council"] {
        assert!(table.contains(&format!("| {mode} |")), "{mode}:\n{table}");
    }
    assert!(stderr.contains("[1/2] c01-queue-vs-cron:"), "{stderr}");
    assert!(stderr.contains("[2/2] c04-cache-layer:"), "{stderr}");
    let doc: Value = serde_json::from_str(&results).unwrap();
    // The sample decides nothing: its placeholder choice is no decision.
    for row in doc["summary"].as_array().unwrap() {
        assert_eq!(row["decided"], 0, "{row}");
    }
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    for case in cases {
        for mode in ["single", "sc", "meeting"] {
            let g = &case["modes"][mode];
            assert!(g.get("error").is_none(), "{mode}: {g}");
            assert!(g["calls"].as_u64().unwrap() >= 1, "{mode}: {g}");
            let budget = case["budget_tokens"].as_u64().unwrap();
            assert!(
                g["tokens"].as_u64().unwrap() <= budget,
                "{mode} over budget: {g}"
            );
        }
        assert!(case["modes"]["meeting"]["calls"].as_u64().unwrap() >= 3);
        assert_eq!(case["modes"]["sc"]["samples"], 5);
    }
    let (table2, results2, _) = run(2);
    assert_eq!(table, table2);
    assert_eq!(results, results2);
}

/// Tasks in HiddenBench's shape (bench/quality/hiddenbench.py): each becomes a case whose
/// shared facts everyone reads and whose members' facts only each member reads, a ceiling file
/// with every fact shared, and a key; run.py runs them (`--cases-dir`) in the distributed
/// condition's modes; a task that is not of the shape is refused, naming its field.
#[test]
fn hiddenbench_tasks_become_cases_with_readers_and_run() {
    if skip_without(Tool::Python3) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks.json");
    std::fs::write(
        &tasks,
        json!([
            {"name": "Hiring a site lead",
             "description": "Which candidate should the group hire as the new site lead?",
             "shared_information": ["Ana has ten years of experience.", "Cleo is new to the field."],
             "hidden_information": [["Ana is leaving the country next month."],
                                    "Ben was rated excellent by all his reports.",
                                    ["Cleo's references could not be checked."]],
             "possible_answers": ["Ana", "Ben", "Cleo"], "correct_answer": "Ben"},
            {"name": "Choosing a vendor",
             "description": "Which vendor should run the new data centre?",
             "shared_information": "North Corp is the cheapest bidder.",
             "hidden_information": {"a": "North Corp failed its last two audits.",
                                    "b": ["South Ltd met every deadline in five years."]},
             "possible_answers": ["North Corp", "South Ltd"], "correct_answer": 1}
        ])
        .to_string(),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let converted = python()
        .arg("bench/quality/hiddenbench.py")
        .arg(&tasks)
        .arg(&out)
        .output()
        .unwrap();
    assert!(converted.status.success(), "{converted:?}");
    let case = out.join("cases/hb01-hiring-a-site-lead");
    let meeting = std::fs::read_to_string(case.join("meeting.yaml")).unwrap();
    assert!(
        meeting.starts_with("# HiddenBench task \"Hiring a site lead\""),
        "{meeting}"
    );
    assert!(
        meeting.contains("agents: member-1,member-2,member-3\n"),
        "{meeting}"
    );
    assert!(meeting.contains("    path: docs/member-2.md\n    purpose: What member-2 knows\n    readers: [member-2]\n"), "{meeting}");
    let ceiling = std::fs::read_to_string(case.join("ceiling.yaml")).unwrap();
    assert!(
        !ceiling.contains("readers:") && ceiling.contains("docs/member-2.md"),
        "{ceiling}"
    );
    assert_eq!(
        std::fs::read_to_string(case.join("docs/member-2.md")).unwrap(),
        "- Ben was rated excellent by all his reports.\n"
    );
    let keys: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("keys.json")).unwrap()).unwrap();
    assert_eq!(keys["cases"]["hb01-hiring-a-site-lead"]["reference"], "Ben");
    assert_eq!(
        keys["cases"]["hb02-choosing-a-vendor"]["reference"],
        "South Ltd"
    );

    let results = tmp.path().join("results.json");
    let ran = python()
        .args(["bench/quality/run.py", "--provider", "sample", "--k", "2"])
        .args(["--modes", "ceiling,single,sc,meeting", "--cases-dir"])
        .arg(&out)
        .arg("--bin")
        .arg(bin_dir())
        .arg("--out")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    let table = String::from_utf8_lossy(&ran.stdout);
    assert!(table.contains("| ceiling |"), "{table}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    for case in doc["cases"].as_array().unwrap() {
        for mode in ["ceiling", "single", "sc", "meeting"] {
            let g = &case["modes"][mode];
            assert!(g.get("error").is_none(), "{mode}: {g}");
        }
        // Every fact in one call costs more prompt than the shared facts alone.
        assert!(
            case["modes"]["ceiling"]["tokens"].as_u64()
                > case["modes"]["single"]["tokens"].as_u64(),
            "{case}"
        );
    }

    std::fs::write(&tasks, r#"[{"name": "x", "description": "y", "possible_answers": ["a", "b"], "correct_answer": "c", "hidden_information": ["p", "q"]}]"#).unwrap();
    let bad = python()
        .arg("bench/quality/hiddenbench.py")
        .arg(&tasks)
        .arg(tmp.path().join("bad"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "hiddenbench.py: tasks[0].correct_answer: expected one of possible_answers (or its index), got 'c'\n"
    );
}

/// Our own distributed-information cases (bench/quality/hidden/tasks.json): at least twelve,
/// each converts, each member holds a fact of their own, the key is one of the options, and the
/// shared facts speak for a wrong option (the plausible wrong answer the condition needs).
#[test]
fn our_hidden_profile_tasks_are_twelve_with_a_wrong_answer_in_plain_sight() {
    if skip_without(Tool::Python3) {
        return;
    }
    let text = std::fs::read_to_string(bench().join("hidden/tasks.json")).unwrap();
    let tasks: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(tasks.len() >= 12, "{}", tasks.len());
    for t in &tasks {
        let answers = strings(&t["possible_answers"]);
        let right = t["correct_answer"].as_str().unwrap();
        assert!(answers.iter().any(|a| a == right), "{t}");
        let hidden = t["hidden_information"].as_array().unwrap();
        assert!(hidden.len() >= 3, "{t}");
        let shared = strings(&t["shared_information"]).join(" ").to_lowercase();
        let speaks_for = |a: &str| {
            a.to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w.len() >= 4 && shared.contains(w))
        };
        assert!(
            answers
                .iter()
                .filter(|a| *a != right)
                .any(|a| speaks_for(a)),
            "{}: the shared facts name no wrong option",
            t["name"]
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = python()
        .arg("bench/quality/hiddenbench.py")
        .arg(bench().join("hidden/tasks.json"))
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let keys: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("keys.json")).unwrap())
            .unwrap();
    assert_eq!(keys["cases"].as_object().unwrap().len(), tasks.len());
}

/// The distributed condition's case whose documents exceed the window (issue #56): the file
/// the repository holds is what its generator writes, and run through the benchmark the one
/// call given every fact is cut to the budget — no member's decisive line reaches it — while in
/// the meeting each member's own prompt carries its whole document, decisive line included.
#[test]
fn the_window_case_cuts_the_one_call_and_not_the_readers() {
    if skip_without(Tool::Python3) {
        return;
    }
    let generated = python()
        .arg("bench/quality/hidden/window.py")
        .output()
        .unwrap();
    assert!(generated.status.success(), "{generated:?}");
    let held = std::fs::read_to_string(bench().join("hidden/window.json")).unwrap();
    assert_eq!(String::from_utf8_lossy(&generated.stdout), held);
    let tmp = tempfile::tempdir().unwrap();
    let keep = tmp.path().join("runs");
    let ran = python()
        .args(["bench/quality/run.py", "--provider", "sample"])
        .args(["--modes", "ceiling,meeting", "--tasks"])
        .arg(bench().join("hidden/window.json"))
        .arg("--bin")
        .arg(bin_dir())
        .arg("--keep")
        .arg(&keep)
        .arg("--out")
        .arg(tmp.path().join("results.json"))
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    let decisive = [
        ("member-1", "the landlord will not renew"),
        ("member-2", "every rack price doubles"),
        ("member-3", "a free, pre-approved cage"),
    ];
    let prompts = |mode: &str| -> Vec<(String, String)> {
        let log = keep
            .join("hb01-site-for-the-new-data-replica")
            .join(mode)
            .join("llm.jsonl");
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| {
                let c: Value = serde_json::from_str(l).unwrap();
                let text = c["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["content"].as_str().unwrap_or(""))
                    .collect::<String>();
                (c["caller"].as_str().unwrap().to_string(), text)
            })
            .collect()
    };
    let ceiling = prompts("ceiling");
    assert!(!ceiling.is_empty());
    for (_, fact) in decisive {
        assert!(
            ceiling.iter().all(|(_, p)| !p.contains(fact)),
            "the one call read {fact:?}: the documents fit the window"
        );
    }
    // Each member's own block (what each of its calls carries after the shared one) holds its
    // decisive line, and no one else's does; the members the sample's PM asked carried it.
    let case = keep.join("hb01-site-for-the-new-data-replica/meeting/runs/hb01-site-for-the-new-data-replica-meeting");
    let report = std::fs::read_dir(&case)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("render-report.out.json"))
        .max()
        .unwrap();
    let out: Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let blocks = &out["board"]["context_bundle"]["reader_documents"];
    let meeting = prompts("meeting");
    let mut asked = 0;
    for (member, fact) in decisive {
        for (other, _) in decisive {
            let block = blocks[other].as_str().unwrap();
            assert_eq!(block.contains(fact), other == member, "{other}'s block");
        }
        for (caller, prompt) in &meeting {
            assert_eq!(prompt.contains(fact), caller == member, "{caller}: {fact}");
            asked += usize::from(caller == member);
        }
    }
    assert!(asked >= 1, "no member was asked");
}
