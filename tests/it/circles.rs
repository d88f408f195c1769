//! A meeting that notices it is going in circles (docs/design/pm-round.md#circles), driven by
//! cassettes on the demo meeting: a repeated question is refused once with the earlier question,
//! its loop and its answer; repeated again, it goes to a participant not yet asked it, and once
//! everyone was, the meeting closes ("the meeting is going in circles"); two answers in a row that add nothing new put a stall note in the PM's prompt.

use serde_json::{json, Value};

use crate::fixtures::pm::{self, answer};
use crate::fixtures::{meeting_cmd, section, Cassette};
use crate::harness::Workdir;

const Q: &str = "How long does the nightly run take on the primary today?";

/// The lines of the run's exchange log and events file.
fn logs(work: &Workdir) -> (Vec<Value>, Vec<Value>) {
    let read = |name: &str| -> Vec<Value> {
        work.read(format!("runs/demo-test/{name}"))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    (read("llm.jsonl"), read("events.jsonl"))
}

fn last_user_text(call: &Value) -> String {
    let messages = call["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_repeated_question_is_refused_once_with_the_earlier_answer() {
    let work = Workdir::new();
    let c = Cassette::new()
        .pm(pm::call("arch", Q))
        .agent(
            "arch",
            answer("About 3h40m on average.", &["Run takes 3h40m."]),
        )
        // Nearly the same question to the same participant: refused, asked again.
        .pm(pm::call(
            "arch",
            "How long does the nightly run take on the primary, today?",
        ))
        .pm(pm::call("biz", "What does a replica cost per month?"))
        .agent(
            "biz",
            answer("About 1,240 USD.", &["A replica costs 1,240 USD."]),
        )
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let out = meeting_cmd(work.path(), &c, &["--quiet"]).run();
    out.check(out.code() == Some(0), "the meeting");
    let (calls, events) = logs(&work);
    let retry = last_user_text(&calls[3]);
    for part in [
        "you asked arch nearly the same in loop 1",
        Q,
        "the answer was: \"About 3h40m on average.\"",
    ] {
        assert!(retry.contains(part), "{part}: {retry}");
    }
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "pm_repeated_question")
            .count(),
        1
    );
    let md = work.read("report.md");
    let note = section(&md, "Process Note");
    assert!(
        note.contains("The PM asked arch nearly what it had asked in loop 1; it was shown the earlier question and answer and asked again."),
        "{note}"
    );
    assert!(!md.contains("going in circles"), "{md}");
}

/// The PM asks arch `Q`, and arch answers it.
fn arch_answered() -> Cassette {
    Cassette::new().pm(pm::call("arch", Q)).agent(
        "arch",
        answer("About 3h40m on average.", &["Run takes 3h40m."]),
    )
}

/// biz's answer, to whatever it was asked.
fn biz_answer() -> Value {
    answer("Finance sees it at 07:00.", &["Finance reads at 07:00."])
}

/// Repeated again after seeing the answer, the question goes to a participant not yet asked it
/// (a second view), and the meeting goes on: a small model's habit must not close a meeting
/// with its budget unspent.
#[test]
fn a_question_repeated_after_seeing_the_answer_goes_to_someone_not_yet_asked() {
    let work = Workdir::new();
    let c = arch_answered()
        .pm(pm::call("arch", Q))
        .pm(pm::call("arch", &Q.to_lowercase()))
        .agent("biz", biz_answer())
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let out = meeting_cmd(work.path(), &c, &["--quiet"]).run();
    out.check(out.code() == Some(0), "the meeting");
    let (calls, events) = logs(&work);
    assert_eq!(calls.len(), 6, "biz answered, then the PM finished");
    assert!(
        last_user_text(&calls[4]).contains(&Q.to_lowercase()),
        "{}",
        calls[4]
    );
    assert!(!events.iter().any(|e| e["type"] == "forced_finish"));
    let md = work.read("report.md");
    let note = section(&md, "Process Note");
    assert!(
        note.contains("The PM asked arch again what it had asked in loop 1, after seeing the answer; the question went to biz, who had not been asked it."),
        "{note}"
    );
    assert!(!md.contains("going in circles"), "{md}");
}

/// Once every participant was asked the question, repeating it again closes the meeting.
#[test]
fn a_question_repeated_twice_closes_the_meeting_as_going_in_circles() {
    let work = Workdir::new();
    let c = arch_answered()
        .pm(pm::call("biz", Q))
        .agent("biz", biz_answer())
        .pm(pm::call("arch", Q))
        .pm(pm::call("arch", &Q.to_lowercase()))
        // The closing round.
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let out = meeting_cmd(work.path(), &c, &["--quiet"]).run();
    out.check(out.code() == Some(0), "the meeting ends with a report");
    let (calls, events) = logs(&work);
    assert_eq!(calls.len(), 7, "no agent was asked the repeated question");
    let forced: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "forced_finish")
        .collect();
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0]["message"], "the meeting is going in circles");
    let md = work.read("report.md");
    let note = section(&md, "Process Note");
    assert!(note.contains("going in circles"), "{note}");
    assert!(
        note.contains("it did so again after seeing the earlier answer"),
        "{note}"
    );
}

#[test]
fn a_failed_turn_may_be_asked_again() {
    let work = Workdir::new();
    let broken = json!("not an answer");
    let c = Cassette::new()
        .pm(pm::call("arch", Q))
        .agent("arch", broken.clone())
        .agent("arch", broken)
        .pm(pm::call("arch", Q))
        .agent(
            "arch",
            answer("About 3h40m on average.", &["Run takes 3h40m."]),
        )
        // biz never asked, no required question asked: the FINISH goes back once.
        .pm(pm::done())
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let out = meeting_cmd(work.path(), &c, &["--quiet"]).run();
    out.check(out.code() == Some(0), "the meeting");
    let (calls, events) = logs(&work);
    assert_eq!(calls.len(), 7, "arch was asked again");
    assert!(
        !events.iter().any(|e| e["type"] == "pm_repeated_question"),
        "a retry after a failed turn is not a circle"
    );
    assert!(events.iter().any(|e| e["type"] == "agent_error"));
}

#[test]
fn two_answers_that_add_nothing_new_put_a_stall_note_in_the_pm_prompt() {
    let work = Workdir::new();
    let c = Cassette::new()
        .pm(pm::call("arch", Q))
        .agent("arch", answer("About 3h40m.", &["Run takes 3h40m."]))
        .pm(pm::call("biz", "What does a replica cost per month?"))
        // Nothing new: a key point already on the whiteboard.
        .agent(
            "biz",
            answer("As said, the run takes 3h40m.", &["Run takes 3h40m."]),
        )
        .pm(pm::call(
            "arch",
            "Is there anything else the decision depends on?",
        ))
        .agent("arch", answer("Nothing more.", &[]))
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let out = meeting_cmd(work.path(), &c, &["--quiet"]).run();
    out.check(out.code() == Some(0), "the meeting");
    let (calls, events) = logs(&work);
    let pm_prompts: Vec<String> = calls
        .iter()
        .filter(|c| c["caller"] == "pm")
        .map(last_user_text)
        .collect();
    let stall = "Stalled: the last two answers added nothing new to the whiteboard.";
    assert!(
        !pm_prompts[2].contains(stall),
        "one quiet answer is not a stall"
    );
    assert!(pm_prompts[3].contains(stall), "{}", pm_prompts[3]);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "meeting_stalled")
            .count(),
        1
    );
    let md = work.read("report.md");
    assert!(section(&md, "Process Note")
        .contains("The last 2 answers added nothing new to the whiteboard"));
}
