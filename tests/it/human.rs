//! A human participant (`kind: human`, docs/design/agent-turn.md#a-human-at-the-table): answers from
//! `--human-answers`, the editor and the terminal; no one there → the meeting waits (exit 4)
//! and `--resume --answer` goes on; an unusable answer gets one fix; a logged answer is never
//! asked again; the report names the provider `human`.

use std::path::Path;

use agent_meeting::model::{Board, ParticipantKind, TurnStatus};
use serde_json::{json, Value};

use crate::fixtures::pm::{self, With};
use crate::fixtures::{agent, board_with_call, final_board, without_timings, Cassette, NOW};
use crate::harness::{cli, Workdir};
use crate::harness::{skip_without, Tool};

const ANA: &str =
    "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows how nights on call really go.\n";

fn ask_ana() -> Value {
    pm::call("ana", "Who gets paged when the nightly run overruns?")
}

fn finish() -> Value {
    pm::done().with("option_assessments", json!([]))
}

/// The PM's FINISH while arch was never asked and no required question was: sent back once
/// (docs/design/pm-round.md#pm-round), then taken.
fn finishes(c: Cassette) -> Cassette {
    c.pm(finish()).pm(finish())
}

/// The cassette most tests here use, written in `work`: the PM asks ana, then (call 3, after
/// her turn) finishes, and again when sent back.
fn asks_ana_once(work: &Workdir) -> std::path::PathBuf {
    finishes(Cassette::new().pm(ask_ana()).at(3)).write(work.join("c.jsonl"))
}

/// The demo meeting with `ana` (human) beside arch, from the repository root.
fn meeting(work: &Workdir, cassette: &Path, extra: &[&str]) -> crate::harness::Run {
    work.write("agents/ana.yaml", ANA);
    let mut cmd = cli("meeting");
    cmd.env("AGENT_MEETING_NOW", NOW)
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,ana",
        ])
        .args(["--provider", "replay", "--trace-id", "demo-test"])
        .arg("--cassette")
        .arg(cassette)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .arg("--agents-dir")
        .arg(work.join("agents"))
        .args(extra)
        .env(
            agent_meeting::stage::agent_turn::human::TTY_ENV,
            "/nonexistent/tty",
        )
        .env("EDITOR", "")
        .env("VISUAL", "");
    cmd.run()
}

fn log_lines(work: &Workdir) -> Vec<Value> {
    work.read("runs/demo-test/llm.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_human_answers_from_the_answers_file_and_is_named_in_the_report() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let answers = work.write(
        "answers.jsonl",
        "{\"response\": \"The on-call DBA, Priya, by phone.\", \"key_points\": [\"Paging goes to one person\"], \"citations\": [{\"document_id\": \"meetings/demo/overview.md\", \"quote\": \"Priya is paged by phone every night\", \"supports\": \"Paging goes to one person\"}]}\n",
    );
    let out = meeting(&work, &c, &["--human-answers", answers.to_str().unwrap()]);
    out.check(out.code() == Some(0), "the meeting");
    // The start line: ana calls no model.
    out.stderr_has(&format!(
        "models: replay of {} (pm, arch); human (ana)",
        c.display()
    ));
    let board = final_board(&work.join("runs/demo-test"));
    let said = &board["latest_agent_outputs"]["ana"];
    assert!(said.to_string().contains("Priya"), "{said}");
    // The citation's path was filled in from its document.
    let ev = board["evidence"].to_string();
    assert!(ev.contains("meetings/demo/overview.md"), "{ev}");
    let md = work.read("report.md");
    assert!(md.contains("ana (Ops lead): human"), "{md}");
    // Her quote is in no document: marked so where it is used, not only under Evidence.
    let finding = md
        .lines()
        .find(|l| l.contains("Paging goes to one person"))
        .unwrap_or_default();
    assert!(finding.contains(": unverified quote]"), "{finding}\n{md}");
    assert!(
        md.contains(
            "- Answers: replayed from a cassette, not live model calls; ana answered in person\n"
        ),
        "{md}"
    );
    let log = log_lines(&work);
    let human: Vec<&Value> = log.iter().filter(|l| l["caller"] == "ana").collect();
    assert_eq!(human.len(), 1);
    assert_eq!(
        (human[0]["seq"].as_u64(), human[0]["provider"].as_str()),
        (Some(2), Some("human"))
    );
    let shown = human[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        shown.contains("Who gets paged when the nightly run overruns?"),
        "{shown}"
    );
    assert!(shown.contains("meetings/demo/overview.md"), "{shown}");
    // The settings keep the file for a resume.
    let settings = work.read("runs/demo-test/meeting.json");
    assert!(settings.contains("answers.jsonl"), "{settings}");
}

/// A person's long answer is no model's reply cut at `max_tokens`: it is taken in one go, each
/// text kept up to its own bound and the cut said in it — not refused and asked again.
#[test]
fn a_persons_long_answer_is_kept_with_its_cut_said() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let long = format!(
        "The on-call DBA, Priya. {}",
        "Details of the rota. ".repeat(1_000)
    );
    let line = json!({"response": long, "key_points": ["Paging goes to one person"]});
    let answers = work.write("answers.jsonl", format!("{line}\n"));
    let out = meeting(
        &work,
        &c,
        &[
            "--human-answers",
            answers.to_str().unwrap(),
            "--max-tokens",
            "400",
        ],
    );
    out.check(out.code() == Some(0), "the meeting");
    let board = final_board(&work.join("runs/demo-test"));
    let said = board["latest_agent_outputs"]["ana"].to_string();
    assert!(said.contains("Priya"), "{said}");
    let cut = format!(
        "more characters not kept: a person's answer keeps {} characters of each text",
        agent_meeting::stage::agent_turn::human::PERSON_CHARS
    );
    assert!(said.contains(&cut), "{said}");
    let log = log_lines(&work);
    assert_eq!(
        log.iter().filter(|l| l["caller"] == "ana").count(),
        1,
        "asked once"
    );
}

/// A question the person answered directly counts as answered in the report, though the PM
/// never marked it (docs/design/whiteboard.md#questions); the PM may then name ana in `by`,
/// but not arch, who was never asked.
#[test]
fn a_question_the_person_answered_directly_counts_as_answered() {
    let work = Workdir::new();
    let mut ask = ask_ana();
    ask["prompt_for_agent"] =
        json!("Q2: What would a managed warehouse cost per month at our data volume?");
    let mut by_arch = finish();
    by_arch["answered_questions"] =
        json!([{"question": "Q3", "answer": "The tax summary.", "by": ["arch"]}]);
    let c = Cassette::new()
        .pm(ask)
        .at(3)
        .pm(by_arch)
        .pm(finish())
        .write(work.join("c.jsonl"));
    let answers = work.write(
        "answers.jsonl",
        "{\"response\": \"About 1,200 USD a month with loading included.\", \"key_points\": [\"The warehouse fits the budget\"]}\n",
    );
    let out = meeting(&work, &c, &["--human-answers", answers.to_str().unwrap()]);
    out.check(out.code() == Some(0), "the meeting");
    let md = work.read("report.md");
    assert!(
        md.contains("What would a managed warehouse cost per month at our data volume, including loading? — answered by ana (loop 1): About 1,200 USD a month with loading included."),
        "{md}"
    );
    // Dated in the loop her turn was merged in, as her finding is (it said loop 0, hidden).
    assert!(
        md.contains("The warehouse fits the budget (no document cited) — ana, loop 1"),
        "{md}"
    );
    let log = log_lines(&work);
    let retry = log
        .iter()
        .filter(|l| l["caller"] == "pm")
        .nth(2)
        .expect("asked again");
    let told = retry["messages"].to_string();
    assert!(
        told.contains("answered_questions[0].by[0]: \\\"arch\\\" has not answered in this meeting (answered so far: ana)"),
        "{told}"
    );
}

/// `meeting --resume DIR` with `extra`, as [`meeting`] sets the environment (no one there).
fn resume(work: &Workdir, extra: &[&str]) -> crate::harness::Run {
    let mut cmd = cli("meeting");
    cmd.env("AGENT_MEETING_NOW", "2026-11-30T15:30:00Z")
        .arg("--resume")
        .arg(work.join("runs/demo-test"))
        .args(extra)
        .env(
            agent_meeting::stage::agent_turn::human::TTY_ENV,
            "/nonexistent/tty",
        )
        .env("EDITOR", "")
        .env("VISUAL", "");
    cmd.run()
}

/// A person's turn with no one there stops the meeting `waiting` (exit 4), the run folder
/// holding the question, the documents and the answer to fill in; `--resume --answer` with the
/// template filled in finishes it, the answer in the report with who answered and when.
#[test]
fn with_no_one_there_the_meeting_waits_and_the_answer_resumes_it() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let out = meeting(&work, &c, &[]);
    out.exit(agent_meeting::error::WAITING_EXIT as i32);
    let result: Value = out.json();
    assert_eq!(result["status"], "waiting", "{result}");
    assert!(result["report_file"].is_null(), "{result}");
    let run = work.join("runs/demo-test");
    assert_eq!(
        result["waiting_file"].as_str(),
        Some(run.join("waiting.json").to_str().unwrap())
    );
    out.stderr_has("waiting for ana: no human available: no terminal")
        .stderr_has(&format!(
            "answer with: meeting resume {} --answer FILE",
            run.display()
        ));
    assert!(!work.join("report.md").exists(), "no report yet");
    let waiting: Value = serde_json::from_str(&work.read("runs/demo-test/waiting.json")).unwrap();
    assert_eq!(waiting["agent"], "ana");
    assert_eq!(waiting["call"], 2);
    assert_eq!(
        waiting["question"],
        "Who gets paged when the nightly run overruns?"
    );
    assert_eq!(waiting["asked_at"], NOW);
    let docs = waiting["documents"].to_string();
    assert!(docs.contains("meetings/demo/overview.md"), "{docs}");
    assert_eq!(waiting["answer_template"]["response"], "");
    let text = work.read("runs/demo-test/answer.txt");
    assert_eq!(waiting["answer_text"].as_str(), Some(text.as_str()));
    assert!(
        text.contains("# Who gets paged when the nightly run overruns?"),
        "{text}"
    );
    // Nothing was asked of the person yet: no exchange logged for ana.
    assert!(!log_lines(&work).iter().any(|l| l["caller"] == "ana"));
    let next = || {
        cli("next-stage")
            .arg("--run-folder")
            .arg(work.join("runs/demo-test"))
            .run()
    };
    next().success().stdout_is("waiting\n");

    // The template filled in, as the person would in an editor.
    let filled = text
        .replacen(
            "[response]\n",
            "[response]\nThe on-call DBA, Priya, by phone.\n",
            1,
        )
        .replacen(
            "[citations]\n",
            "[citations]\nmeetings/demo/overview.md | nightly | who is paged\n",
            1,
        );
    let answer = work.write("answer.txt", filled);
    // An answer for another call (a question answered already, the meeting moved on) is
    // refused, naming both; for this call it is taken.
    resume(
        &work,
        &["--answer", answer.to_str().unwrap(), "--answer-for", "1"],
    )
    .exit(2)
    .stderr_has("the answer is for call 1, but the meeting in")
    .stderr_has("now waits for call 2");
    let done = resume(
        &work,
        &["--answer", answer.to_str().unwrap(), "--answer-for", "2"],
    );
    done.check(done.code() == Some(0), "the resumed meeting");
    let result: Value = done.json();
    assert_eq!(result["status"], "finished", "{result}");
    assert!(!run.join("waiting.json").exists() && !run.join("answer.txt").exists());
    next().success().stdout_is("none\n");
    let board = final_board(&run);
    assert!(board["latest_agent_outputs"]["ana"]
        .to_string()
        .contains("Priya"));
    let md = work.read("report.md");
    assert!(md.contains("ana answered in person"), "{md}");
    assert!(
        md.contains(&format!("The meeting waited for ana: asked at {NOW} with no one there to answer, ana answered at 2026-11-30T15:30:00Z (meeting --resume --answer).")),
        "{md}"
    );
    let human: Vec<Value> = log_lines(&work)
        .into_iter()
        .filter(|l| l["caller"] == "ana")
        .collect();
    assert_eq!(human.len(), 1);
    assert_eq!(human[0]["seq"], 2);
}

/// The given answer is checked like any: a citation of a document not collected is sent back
/// once, the meeting waits again with the problem in `waiting.json` (the bad answer kept in
/// the template), and the fixed answer finishes it; an answer is never asked twice.
#[test]
fn a_bad_citation_in_the_given_answer_gets_its_one_chance() {
    let work = Workdir::new();
    let c = finishes(Cassette::new().pm(ask_ana()).at(4)).write(work.join("c.jsonl"));
    meeting(&work, &c, &[])
        .exit(4)
        .stderr_has("tokens → ")
        .stderr_has("runs/demo-test/waiting.json\n");
    let bad = work.write(
        "bad.json",
        "{\"response\": \"See the runbook.\", \"citations\": [{\"document_id\": \"docs/runbook.md\", \"quote\": \"page\"}]}",
    );
    let again = resume(&work, &["--answer", bad.to_str().unwrap()]);
    again
        .exit(4)
        .stderr_has("waiting for ana to fix an unusable answer");
    let waiting: Value = serde_json::from_str(&work.read("runs/demo-test/waiting.json")).unwrap();
    assert_eq!(waiting["call"], 3);
    assert_eq!(waiting["asked_at"], NOW, "asked when first asked");
    let problem = waiting["problem"].as_str().unwrap();
    assert!(problem.contains("could not be used"), "{problem}");
    assert_eq!(waiting["answer_template"]["response"], "See the runbook.");
    let text = work.read("runs/demo-test/answer.txt");
    assert!(text.contains("docs/runbook.md | page"), "{text}");
    let good = work.write(
        "good.json",
        "{\"response\": \"The on-call DBA, by phone.\", \"citations\": []}",
    );
    let done = resume(&work, &["--answer", good.to_str().unwrap()]);
    done.check(done.code() == Some(0), "the fixed answer");
    let human: Vec<Value> = log_lines(&work)
        .into_iter()
        .filter(|l| l["caller"] == "ana")
        .collect();
    assert_eq!(
        human
            .iter()
            .map(|l| l["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [2, 3],
        "each answer asked once"
    );
    let md = work.read("report.md");
    assert!(md.contains("ana's answer was unusable"), "{md}");
    assert!(md.contains("The meeting waited for ana"), "{md}");
}

/// `--answer` is for a meeting that waits: refused (exit 2) for one that does not, and an
/// answer file that is neither JSON nor the template's text form is bad input.
#[test]
fn an_answer_only_for_a_waiting_meeting_and_in_a_known_form() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let answers = work.write(
        "answers.jsonl",
        "{\"response\": \"Priya.\", \"key_points\": [\"Priya is paged\"], \"citations\": []}\n",
    );
    meeting(&work, &c, &["--human-answers", answers.to_str().unwrap()]).success();
    let out = resume(&work, &["--answer", answers.to_str().unwrap()]);
    out.exit(2).stderr_has("--answer: the meeting in");
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    meeting(&work, &c, &[]).exit(4);
    let prose = work.write("prose.txt", "Priya gets paged.\n");
    let out = resume(&work, &["--answer", prose.to_str().unwrap()]);
    out.exit(2)
        .stderr_has("prose.txt: expected one JSON object (an AgentTurnResult) or the answer template's text form");
    assert!(
        work.join("runs/demo-test/waiting.json").exists(),
        "still waiting"
    );
}

/// agent-turn with no one there: what the person is asked on stdout, exit 4; the same when the
/// answers file has no line left.
#[test]
fn agent_turn_with_no_one_there_prints_what_the_person_is_asked() {
    let work = Workdir::new();
    let empty = work.write("a.jsonl", "\n");
    for answers in [None, Some(&empty)] {
        let mut cmd = cli("agent-turn");
        cmd.env(
            agent_meeting::stage::agent_turn::human::TTY_ENV,
            "/nonexistent/tty",
        )
        .stdin(human_board());
        if let Some(a) = answers {
            cmd.arg("--human-answers").arg(a);
        }
        let out = cmd.run();
        out.exit(4)
            .stderr_has("agent-turn: waiting for ana: no human available");
        let waiting: Value = out.json();
        assert_eq!(waiting["waiting_version"], 1);
        assert_eq!(waiting["agent"], "ana");
    }
}

#[test]
fn an_unusable_human_answer_gets_one_fix_from_the_next_line() {
    let work = Workdir::new();
    let c = finishes(Cassette::new().pm(ask_ana()).at(4)).write(work.join("c.jsonl"));
    let answers = work.write(
        "answers.jsonl",
        "{\"response\": \"See the runbook.\", \"citations\": [{\"document_id\": \"docs/runbook.md\", \"quote\": \"page\"}]}\n\
         \n\
         {\"response\": \"The on-call DBA, by phone.\", \"citations\": []}\n",
    );
    let out = meeting(&work, &c, &["--human-answers", answers.to_str().unwrap()]);
    out.check(out.code() == Some(0), "the meeting");
    let log = log_lines(&work);
    let human: Vec<&Value> = log.iter().filter(|l| l["caller"] == "ana").collect();
    assert_eq!(human.len(), 2);
    let fix = human[1]["messages"].as_array().unwrap();
    assert!(
        fix.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("\"docs/runbook.md\" is not one of the collected documents"),
        "{fix:?}"
    );
    let board = final_board(&work.join("runs/demo-test"));
    assert!(board["latest_agent_outputs"]["ana"]
        .to_string()
        .contains("on-call DBA"));
    let md = work.read("report.md");
    assert!(md.contains("ana's answer was unusable"), "{md}");
}

/// A board waiting for ana (human) to answer, as JSON for agent-turn's stdin.
fn human_board() -> String {
    let mut b: Board = board_with_call("ana");
    let mut ana = agent("ana", "ops lead");
    ana.kind = ParticipantKind::Human;
    ana.system_prompt.clear();
    ana.input_schema.clear();
    ana.output_schema.clear();
    b.agents.insert("ana".into(), ana);
    b.participants.push("ana".into());
    serde_json::to_string(&b).unwrap()
}

fn turn_of(out: &crate::harness::Run) -> Value {
    let b: Value = out.json();
    b["last_turns"][0].clone()
}

#[test]
fn a_logged_human_answer_is_not_asked_again() {
    let work = Workdir::new();
    let log = work.join("llm.jsonl");
    let first = work.write("a.jsonl", "{\"response\": \"First answer.\"}\n");
    let out = cli("agent-turn")
        .arg("--human-answers")
        .arg(&first)
        .arg("--llm-log")
        .arg(&log)
        .stdin(human_board())
        .run();
    out.check(out.code() == Some(0), "agent-turn");
    assert_eq!(turn_of(&out)["result"]["response"], "First answer.");
    // Resumed (the log reused): neither another answers file nor no one at all is asked.
    let other = work.write("b.jsonl", "{\"response\": \"Second answer.\"}\n");
    for answers in [Some(&other), None] {
        let mut cmd = cli("agent-turn");
        cmd.arg("--llm-log")
            .arg(&log)
            .arg("--reuse-log")
            .env(
                agent_meeting::stage::agent_turn::human::TTY_ENV,
                "/nonexistent/tty",
            )
            .stdin(human_board());
        if let Some(a) = answers {
            cmd.arg("--human-answers").arg(a);
        }
        let again = cmd.run();
        again.check(again.code() == Some(0), "agent-turn resumed");
        assert_eq!(turn_of(&again)["result"]["response"], "First answer.");
    }
    assert_eq!(work.read("llm.jsonl").lines().count(), 1, "asked once");
}

#[test]
fn the_editor_fills_the_template() {
    let work = Workdir::new();
    let script = work.write(
        "editor.sh",
        "cp \"$1\" \"$(dirname \"$0\")/seen.txt\"\n\
         printf '[response]\\nThe on-call DBA.\\n\\n[key_points]\\n- one pager\\n[proposals]\\nadd a second\\n[citations]\\ndocs/costs.md | The cluster costs $4,000 per month. | one pager\\n# a comment\\n' > \"$1\"\n",
    );
    let out = cli("agent-turn")
        .env("EDITOR", format!("sh {}", script.display()))
        .env(
            agent_meeting::stage::agent_turn::human::TTY_ENV,
            "/nonexistent/tty",
        )
        .stdin(human_board())
        .run();
    out.check(out.code() == Some(0), "agent-turn");
    let t = turn_of(&out);
    assert_eq!(t["status"], "ok", "{t}");
    let r = &t["result"];
    assert_eq!(r["response"], "The on-call DBA.");
    assert_eq!(r["key_points"], json!(["one pager"]));
    assert_eq!(r["recommendations"], json!(["add a second"]));
    assert_eq!(r["citations"][0]["source_path"], "docs/costs.md");
    assert_eq!(r["citations"][0]["verified"], true);
    let seen = work.read("seen.txt");
    assert!(seen.starts_with("[response]\n"), "{seen}");
    assert!(
        seen.contains("# What does the cluster cost per month?"),
        "{seen}"
    );
    assert!(seen.contains("docs/team.md"), "{seen}");
}

#[test]
fn line_by_line_on_the_terminal() {
    let work = Workdir::new();
    let tty = work.write("tty", "We pay $4,000.\n\nIt is the cluster\n\n\n\n\n");
    let out = cli("agent-turn")
        .env("EDITOR", "")
        .env(agent_meeting::stage::agent_turn::human::TTY_ENV, &tty)
        .stdin(human_board())
        .run();
    out.check(out.code() == Some(0), "agent-turn");
    let t = turn_of(&out);
    assert_eq!(t["status"], TurnStatus::Ok.as_str());
    assert_eq!(t["result"]["response"], "We pay $4,000.");
    assert_eq!(t["result"]["key_points"], json!(["It is the cluster"]));
    out.stderr_has("ana, the PM asks you");
}

#[test]
fn an_unreadable_answers_file_is_bad_input() {
    let out = cli("agent-turn")
        .args(["--human-answers", "/nonexistent/answers.jsonl"])
        .stdin(human_board())
        .run();
    out.exit(2)
        .one_stderr_line()
        .stderr_starts_with("agent-turn: /nonexistent/answers.jsonl");
}

/// `meeting` reads `--human-answers` before the first call: a wrong path stops it there (exit
/// 2, naming the file), not at the person's turn after the model calls before it.
#[test]
fn meeting_reads_the_answers_file_before_any_call() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let out = meeting(
        &work,
        &c,
        &["--human-answers", "/nonexistent/answers.jsonl"],
    );
    out.exit(2).stderr_has("/nonexistent/answers.jsonl");
    assert!(!work.join("runs").exists(), "no run folder, so no call");
}

/// A `--human-answers` file that is not JSONL is parsed before the first call too: exit 2
/// naming the file, the line and what was expected, and no model call made.
#[test]
fn meeting_parses_the_answers_file_before_any_call() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let answers = work.write("answers.jsonl", "{\"response\": \"Fine.\"}\nnot json\n");
    let out = meeting(&work, &c, &["--human-answers", answers.to_str().unwrap()]);
    out.exit(2).one_stderr_line().stderr_has(&format!(
        "{}: line 2: expected one JSON object per line",
        answers.display()
    ));
    assert!(!work.join("runs").exists(), "no run folder, so no call");
}

/// `share/meeting.sh` with MEETING_HUMAN_ANSWERS holds the same meeting as the driver with
/// `--human-answers` (the variable is the flag's): the same final board and report.
#[test]
fn the_shell_loop_takes_the_answers_too() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    // Both find ana in the user's agents folder.
    work.write("cfg/agent-meeting/agents/ana.yaml", ANA);
    let c = asks_ana_once(&work);
    let answers = work.write(
        "answers.jsonl",
        "{\"response\": \"The on-call DBA, by phone.\", \"key_points\": [\"One person is paged\"]}\n",
    );
    let common = |cmd: &mut crate::harness::Cli| {
        cmd.env("AGENT_MEETING_NOW", NOW)
            .env("XDG_CONFIG_HOME", work.join("cfg"))
            .env("MEETING_HUMAN_ANSWERS", &answers)
            .env(
                agent_meeting::stage::agent_turn::human::TTY_ENV,
                "/nonexistent/tty",
            )
            .env("EDITOR", "")
            .env("VISUAL", "");
    };
    let mut cmd = cli("meeting");
    common(&mut cmd);
    let out = cmd
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,ana",
            "--quiet",
        ])
        .args(["--provider", "replay", "--trace-id", "demo-test"])
        .arg("--cassette")
        .arg(&c)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .run();
    out.check(out.code() == Some(0), "the meeting");
    let want = final_board(&work.join("runs/demo-test"));
    assert!(want["latest_agent_outputs"]["ana"]
        .to_string()
        .contains("on-call DBA"));

    let sh_board = work.join("sh-board.json");
    let path = crate::harness::programs_path();
    let mut sh = crate::harness::Cli::new(std::process::Command::new("sh"));
    common(&mut sh);
    let out = sh
        .arg("share/meeting.sh")
        .arg("meetings/demo.yaml")
        .arg("arch,ana")
        .arg(work.join("sh-report.md"))
        .env("PATH", path)
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env("MEETING_CASSETTE", &c)
        .env("TRACE_ID", "demo-test")
        .env("BOARD_OUT", &sh_board)
        .run();
    out.check(
        out.code() == Some(0),
        "the shell loop (jq must be installed)",
    );
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&sh_board).unwrap()).unwrap();
    let (mut got, mut want) = (without_timings(got), without_timings(want));
    for b in [&mut got, &mut want] {
        b.as_object_mut().unwrap().remove("report_file");
    }
    assert_eq!(got, want, "shell loop and meeting disagree");
    assert_eq!(work.read("sh-report.md"), work.read("report.md"));
}

/// An unusable answer in the editor is reopened with the problem and the answer as given, once.
#[test]
fn the_editor_reopens_an_unusable_answer_once() {
    let work = Workdir::new();
    let script = work.write(
        "editor.sh",
        "n=$(ls \"$(dirname \"$0\")\" | grep -c '^seen')\n\
         cp \"$1\" \"$(dirname \"$0\")/seen$n.txt\"\n\
         if [ \"$n\" = 0 ]; then\n\
           printf '[response]\\nSee the runbook.\\n[citations]\\ndocs/runbook.md | page the DBA\\n' > \"$1\"\n\
         else\n\
           sed -i 's/^docs.runbook.md.*$//' \"$1\"\n\
         fi\n",
    );
    let out = cli("agent-turn")
        .env("EDITOR", format!("sh {}", script.display()))
        .env(
            agent_meeting::stage::agent_turn::human::TTY_ENV,
            "/nonexistent/tty",
        )
        .stdin(human_board())
        .run();
    out.check(out.code() == Some(0), "agent-turn");
    let t = turn_of(&out);
    assert_eq!(t["status"], "ok", "{t}");
    assert_eq!(t["result"]["response"], "See the runbook.");
    assert_eq!(t["result"]["citations"], json!([]));
    let again = work.read("seen1.txt");
    assert!(
        again.starts_with("# Your previous reply could not be used: citations[0].document_id: \"docs/runbook.md\" is not one of the collected documents"),
        "{again}"
    );
    assert!(again.contains("[response]\nSee the runbook.\n"), "{again}");
    assert!(again.contains("docs/runbook.md | page the DBA"), "{again}");
}

/// A cassette that holds the person's answer (a recorded meeting) replays it: no one is asked.
#[test]
fn a_recorded_human_answer_replays_without_asking() {
    let work = Workdir::new();
    let said = json!({"response": "The on-call DBA, by phone.", "key_points": [], "risks": [],
        "recommendations": [], "citations": []});
    let c = finishes(Cassette::new().pm(ask_ana()).agent("ana", said)).write(work.join("c.jsonl"));
    let out = meeting(&work, &c, &[]);
    out.check(out.code() == Some(0), "the meeting");
    let board = final_board(&work.join("runs/demo-test"));
    assert!(
        board["latest_agent_outputs"]["ana"]
            .to_string()
            .contains("on-call DBA"),
        "{board}"
    );
    assert_eq!(board["recent_errors"], json!([]));
    let log = log_lines(&work);
    assert_eq!(log[1]["provider"], "human");
}

/// `--record` keeps the person's answer in the cassette like a model's, and replaying that
/// cassette answers the turn with no one asked.
#[test]
fn a_human_answer_is_recorded_and_replayed() {
    let work = Workdir::new();
    let answers = work.write("a.jsonl", "{\"response\": \"Recorded answer.\"}\n");
    let rec = work.join("rec.jsonl");
    let out = cli("agent-turn")
        .args(["--provider", "openai"])
        .arg("--record")
        .arg(&rec)
        .arg("--human-answers")
        .arg(&answers)
        .stdin(human_board())
        .run();
    out.check(out.code() == Some(0), "agent-turn recording");
    let recorded = work.read("rec.jsonl");
    assert!(recorded.contains("\"caller\":\"ana\""), "{recorded}");
    let again = cli("agent-turn")
        .args(["--provider", "replay"])
        .arg("--cassette")
        .arg(&rec)
        .env(
            agent_meeting::stage::agent_turn::human::TTY_ENV,
            "/nonexistent/tty",
        )
        .stdin(human_board())
        .run();
    again.check(again.code() == Some(0), "agent-turn replaying");
    assert_eq!(turn_of(&again), turn_of(&out));
}

/// share/meeting.sh with no one there to answer stops as `meeting` does: status `waiting`,
/// exit 4, what the person is asked in a file beside the report.
#[test]
fn the_shell_loop_waits_too() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    work.write("cfg/agent-meeting/agents/ana.yaml", ANA);
    let c = asks_ana_once(&work);
    let mut sh = crate::harness::Cli::new(std::process::Command::new("sh"));
    let out = sh
        .arg("share/meeting.sh")
        .arg("meetings/demo.yaml")
        .arg("arch,ana")
        .arg(work.join("sh-report.md"))
        .env("PATH", crate::harness::programs_path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .env(
            agent_meeting::stage::agent_turn::human::TTY_ENV,
            "/nonexistent/tty",
        )
        .env("EDITOR", "")
        .env("VISUAL", "")
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env("MEETING_CASSETTE", &c)
        .run();
    out.exit(4).stderr_has("meeting.sh: waiting for ana");
    let result: Value = out.json();
    assert_eq!(result["status"], "waiting");
    let waiting: Value = serde_json::from_str(&work.read("sh-report.waiting.json")).unwrap();
    assert_eq!(
        waiting["question"],
        "Who gets paged when the nightly run overruns?"
    );
}

/// The summary table lists a meeting waiting for a person, with whom it waits for.
#[test]
fn the_summary_lists_a_waiting_meeting() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    meeting(&work, &c, &[]).exit(4);
    let out = crate::harness::Cli::new(std::process::Command::new("sh"))
        .arg("share/flows/summary.sh")
        .arg(work.join("runs/demo-test"))
        .env("FORMAT", "tsv")
        .run();
    out.success()
        .stdout_has("demo-test\twaiting\t-\twaiting for ana\t-\t-\t1\t-\t-");
}

/// batch.sh names a meeting waiting for a person and where their answer goes; run again with
/// the answer there, it goes on (`meeting --resume --answer`) and ends well.
#[test]
fn a_batch_lists_a_waiting_meeting_and_takes_its_answer() {
    if skip_without(Tool::Jq) || skip_without(Tool::GnuParallel) {
        return;
    }
    let work = Workdir::new();
    work.write("agents/ana.yaml", ANA);
    let c = asks_ana_once(&work);
    let input = work.write(
        "jobs.jsonl",
        format!(
            "{}\n",
            json!({"meeting_file": "meetings/demo.yaml", "name": "m1", "cassette": c})
        ),
    );
    let out_dir = work.join("out");
    let batch = || {
        crate::harness::Cli::new(std::process::Command::new("sh"))
            .arg("share/flows/batch.sh")
            .arg(&input)
            .arg(&out_dir)
            .args(["--agents", "arch,ana", "--provider", "replay"])
            .arg("--agents-dir")
            .arg(work.join("agents"))
            .env("PATH", crate::harness::programs_path())
            .env("AGENT_MEETING_NOW", NOW)
            .env(
                agent_meeting::stage::agent_turn::human::TTY_ENV,
                "/nonexistent/tty",
            )
            .env("EDITOR", "")
            .env("VISUAL", "")
            .run()
    };
    let first = batch();
    first.exit(1).stderr_has(&format!(
        "batch.sh: m1 waits for ana: put their answer in {}/answers/m1.txt",
        out_dir.display()
    ));
    let result: Value = serde_json::from_str(&work.read("out/results/m1.json")).unwrap();
    assert_eq!(result["status"], "waiting");
    work.write(
        "out/answers/m1.json",
        "{\"response\": \"The on-call DBA, Priya.\", \"key_points\": [\"Priya is paged\"], \"citations\": []}",
    );
    let second = batch();
    second.exit(0).stderr_has("batch.sh: 1 meetings ended well");
    let result: Value = serde_json::from_str(&work.read("out/results/m1.json")).unwrap();
    assert_eq!(result["status"], "finished");
    assert!(work
        .read("out/reports/m1.md")
        .contains("The meeting waited for ana"));
}

/// A user's agent-turn (`--stage agent-turn=...`) that exits 4 with what the person is asked
/// makes the meeting wait as the built-in stage does; resumed with the built-in stage and the
/// answer, it finishes.
#[test]
fn a_users_agent_turn_that_waits_makes_the_meeting_wait() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let stage = format!("agent-turn={}", crate::harness::bin("agent-turn").display());
    let out = meeting(&work, &c, &["--stage", &stage]);
    out.exit(4).stderr_has("waiting for ana");
    let result: Value = out.json();
    assert_eq!(result["status"], "waiting", "{result}");
    let waiting: Value = serde_json::from_str(&work.read("runs/demo-test/waiting.json")).unwrap();
    assert_eq!(waiting["agent"], "ana");
    let answer = work.write(
        "a.json",
        "{\"response\": \"Priya.\", \"key_points\": [\"Priya is paged\"], \"citations\": []}",
    );
    let done = resume(
        &work,
        &[
            "--stage",
            "agent-turn=",
            "--answer",
            answer.to_str().unwrap(),
        ],
    );
    done.check(done.code() == Some(0), "resumed with the built-in stage");
}

/// A person's answer is bounded by its own rule, not a model's `max_tokens`: a 2 MB key point
/// is kept to `PERSON_CHARS` with the cut said, the answer used in one go, and the 2 MB never
/// reaches the report.
#[test]
fn a_persons_answer_is_bounded_by_its_own_rule() {
    let work = Workdir::new();
    let c = asks_ana_once(&work);
    let huge = "x".repeat(2_000_000);
    let answers = work.write(
        "answers.jsonl",
        format!("{{\"response\": \"Priya.\", \"key_points\": [\"Paging goes to one person\", \"{huge}\"]}}\n"),
    );
    let out = meeting(&work, &c, &["--human-answers", answers.to_str().unwrap()]);
    out.check(out.code() == Some(0), "the meeting");
    let log = log_lines(&work);
    let ana: Vec<&Value> = log.iter().filter(|l| l["caller"] == "ana").collect();
    assert_eq!(ana.len(), 1, "taken in one go");
    assert_eq!(ana[0]["truncated"], false);
    let md = work.read("report.md");
    assert!(md.contains("Paging goes to one person"), "{md}");
    assert!(md.len() < 200_000, "the report holds the 2 MB key point");
}
