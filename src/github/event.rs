//! What a GitHub event asks of `agent-meeting github` (docs/design/github.md#events): the event
//! as the Actions runner leaves it (`GITHUB_EVENT_NAME`, the JSON at `GITHUB_EVENT_PATH`) read
//! into the pull request and what to do on it — a meeting on a topic (`/decide <topic>` in a
//! comment, or the pull request itself when labelled or asked to), a waiting person's answer
//! (`/answer …`), or nothing, with why; for a dry run, what the event says of the pull request
//! itself. Pure: no I/O, no clock.

use serde_json::Value;

/// The commands a comment may start with.
pub const DECIDE: &str = "/decide";
pub const ANSWER: &str = "/answer";

/// Who may spend the repository's budget from a comment: its owner, members and collaborators
/// (GitHub's `author_association`).
const TRUSTED: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];

/// How a pull request event starts a meeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// A `pull_request` event labelled so starts one on the pull request (its title the topic).
    pub label: String,
    /// An `opened` or `reopened` pull request starts one too — when its author is trusted and
    /// it is no fork's (docs/design/github.md#events).
    pub from_body: bool,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// Hold a meeting on `topic` about pull request `number`.
    Decide { number: u64, topic: String },
    /// Give `text` to the meeting of pull request `number` that waits for a person.
    Answer { number: u64, text: String },
    /// A `pull_request` event from a fork: GitHub gives its workflow no secrets (no provider
    /// key, a read-only token), so no meeting can run.
    ForkWithoutSecrets { number: u64 },
    /// Nothing: why.
    Nothing(String),
}

/// Which version of the changed files a workflow of event `name` checks out (actions/checkout's
/// default ref): `pull_request` the pull request's merge commit, the others the base branch.
pub fn checkout(name: &str) -> super::Checkout {
    match name {
        "pull_request" => super::Checkout::Head,
        _ => super::Checkout::Base,
    }
}

/// What `event` (named `name`) asks.
pub fn read(name: &str, event: &Value, opts: &Options) -> Ask {
    match name {
        "issue_comment" => comment(event),
        "pull_request" | "pull_request_target" => pull_request(name, event, opts),
        other => Ask::Nothing(format!(
            "a {other} event starts no meeting (issue_comment with {DECIDE} or {ANSWER}, or pull_request)"
        )),
    }
}

fn comment(event: &Value) -> Ask {
    if event["action"] != "created" {
        return Ask::Nothing("a comment that was not just created".into());
    }
    let Some(number) = event["issue"]["number"].as_u64() else {
        return Ask::Nothing("the event names no issue".into());
    };
    if event["issue"]["pull_request"].is_null() {
        return Ask::Nothing(format!("#{number} is an issue, not a pull request"));
    }
    let body = event["comment"]["body"].as_str().unwrap_or("").trim_start();
    let (command, rest) = match body.split_once(char::is_whitespace) {
        Some((c, rest)) => (c, rest.trim()),
        None => (body, ""),
    };
    if command != DECIDE && command != ANSWER {
        return Ask::Nothing(format!(
            "the comment starts with neither {DECIDE} nor {ANSWER}"
        ));
    }
    let who = event["comment"]["user"]["login"]
        .as_str()
        .unwrap_or("someone");
    let association = event["comment"]["author_association"]
        .as_str()
        .unwrap_or("NONE");
    if !TRUSTED.contains(&association) {
        return Ask::Nothing(format!(
            "{who} is not a member or collaborator of the repository ({association}): only they may start a meeting, which spends its budget"
        ));
    }
    if command == DECIDE {
        // The topic is the rest of the first line; what follows is for people.
        let topic = rest.lines().next().unwrap_or("").trim();
        if topic.is_empty() {
            return Ask::Nothing(format!(
                "{DECIDE} needs a topic: {DECIDE} <the decision to make>"
            ));
        }
        return Ask::Decide {
            number,
            topic: topic.to_string(),
        };
    }
    if rest.is_empty() {
        return Ask::Nothing(format!("{ANSWER} needs the answer after it"));
    }
    Ask::Answer {
        number,
        text: rest.to_string(),
    }
}

fn pull_request(name: &str, event: &Value, opts: &Options) -> Ask {
    let pr = &event["pull_request"];
    let Some(number) = pr["number"].as_u64().or(event["number"].as_u64()) else {
        return Ask::Nothing("the event names no pull request".into());
    };
    let action = event["action"].as_str().unwrap_or("");
    // Only someone who may triage the repository can label: the label is a maintainer's yes.
    let labelled = action == "labeled" && event["label"]["name"] == opts.label.as_str();
    let opened = matches!(action, "opened" | "reopened");
    if opts.from_body && !labelled && matches!(action, "edited" | "synchronize") {
        // Its topic's meeting already ran: resumed, it would repost what it said of the diff
        // before this push or edit.
        return Ask::Nothing(format!(
            "a pull_request {action} event starts no meeting: the pull request's meeting was held when it was opened; for one on its new state, comment {DECIDE} <topic>"
        ));
    }
    if !(labelled || (opts.from_body && opened)) {
        return Ask::Nothing(format!(
            "a pull_request {action} event: a meeting starts when the pull request is labelled {:?}{}",
            opts.label,
            if opts.from_body { "" } else { " (or opened, with --from-body)" }
        ));
    }
    if !labelled {
        // Unlabelled, no maintainer said yes: the author must be one who may spend the budget,
        // and a fork's pull request waits for a maintainer's label (or /decide).
        let association = pr["author_association"].as_str().unwrap_or("NONE");
        let who = pr["user"]["login"].as_str().unwrap_or("its author");
        if is_fork(pr) {
            return Ask::Nothing(format!(
                "pull request #{number} comes from a fork: a meeting starts on it only when a maintainer labels it {:?} or comments {DECIDE}",
                opts.label
            ));
        }
        if !TRUSTED.contains(&association) {
            return Ask::Nothing(format!(
                "{who} is not a member or collaborator of the repository ({association}): a meeting on their pull request starts when a maintainer labels it {:?} or comments {DECIDE}",
                opts.label
            ));
        }
    }
    if name == "pull_request" && is_fork(pr) {
        return Ask::ForkWithoutSecrets { number };
    }
    let topic = pr["title"].as_str().unwrap_or("").trim();
    if topic.is_empty() {
        return Ask::Nothing(format!(
            "pull request #{number} has no title to take as the topic"
        ));
    }
    Ask::Decide {
        number,
        topic: topic.to_string(),
    }
}

/// The event's name, from its shape, for a dry run given none: a comment's
/// (`issue_comment`) or a pull request's (`pull_request`).
pub fn guess_name(event: &Value) -> Option<&'static str> {
    if event["comment"].is_object() && event["issue"].is_object() {
        Some("issue_comment")
    } else if event["pull_request"].is_object() {
        Some("pull_request")
    } else {
        None
    }
}

/// The pull request's title and description as the event carries them (a comment's event
/// holds the pull request as its issue), for a dry run, which asks no API.
pub fn pull(event: &Value) -> super::Pull {
    let pr = match event["pull_request"].is_object() {
        true => &event["pull_request"],
        false => &event["issue"],
    };
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    super::Pull {
        number: pr["number"].as_u64().unwrap_or(0),
        title: text(&pr["title"]),
        body: text(&pr["body"]),
    }
}

/// Where a dry run's diff may start, best first, as the event says: the pull request's base
/// commit, its base branch as the remote has it, the repository's default branch (a comment's
/// event names no base).
pub fn base_candidates(event: &Value) -> Vec<String> {
    let base = &event["pull_request"]["base"];
    [
        base["sha"].as_str().map(str::to_string),
        base["ref"].as_str().map(|r| format!("origin/{r}")),
        event["repository"]["default_branch"]
            .as_str()
            .map(|b| format!("origin/{b}")),
    ]
    .into_iter()
    .flatten()
    .filter(|c| !c.is_empty())
    .collect()
}

/// Whether a pull request (as the API or an event gives it) comes from another repository.
pub fn is_fork(pr: &Value) -> bool {
    let head = pr["head"]["repo"]["full_name"].as_str();
    let base = pr["base"]["repo"]["full_name"].as_str();
    head.is_none() || head != base
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts() -> Options {
        Options {
            label: "decide".into(),
            from_body: false,
        }
    }

    fn comment_event(body: &str, association: &str) -> Value {
        json!({"action": "created",
               "issue": {"number": 7, "pull_request": {"url": "x"}},
               "comment": {"body": body, "author_association": association,
                           "user": {"login": "ana"}}})
    }

    #[test]
    fn a_comment_decides_answers_or_asks_nothing() {
        let read = |body: &str| read("issue_comment", &comment_event(body, "MEMBER"), &opts());
        assert_eq!(
            read("/decide Move CI to arm64?\nMore words."),
            Ask::Decide {
                number: 7,
                topic: "Move CI to arm64?".into()
            }
        );
        assert_eq!(
            read("/answer Priya,\nby phone."),
            Ask::Answer {
                number: 7,
                text: "Priya,\nby phone.".into()
            }
        );
        for body in ["/decide", "/decidex y", "looks good", "/answer   ", " "] {
            assert!(matches!(read(body), Ask::Nothing(_)), "{body}");
        }
    }

    #[test]
    fn only_members_spend_the_budget_and_only_on_pull_requests() {
        let stranger = read(
            "issue_comment",
            &comment_event("/decide x", "CONTRIBUTOR"),
            &opts(),
        );
        let Ask::Nothing(why) = stranger else {
            panic!("{stranger:?}")
        };
        assert!(why.contains("ana is not a member"), "{why}");
        let mut issue = comment_event("/decide x", "OWNER");
        issue["issue"]["pull_request"] = Value::Null;
        assert!(matches!(
            read("issue_comment", &issue, &opts()),
            Ask::Nothing(_)
        ));
        let mut edited = comment_event("/decide x", "OWNER");
        edited["action"] = json!("edited");
        assert!(matches!(
            read("issue_comment", &edited, &opts()),
            Ask::Nothing(_)
        ));
    }

    #[test]
    fn a_labelled_pull_request_decides_on_its_title_unless_from_a_fork() {
        let pr = |head: &str| {
            json!({"action": "labeled", "label": {"name": "decide"},
                   "pull_request": {"number": 9, "title": "Adopt Rust for ingest",
                       "head": {"repo": {"full_name": head}},
                       "base": {"repo": {"full_name": "o/r"}}}})
        };
        assert_eq!(
            read("pull_request", &pr("o/r"), &opts()),
            Ask::Decide {
                number: 9,
                topic: "Adopt Rust for ingest".into()
            }
        );
        assert_eq!(
            read("pull_request", &pr("fork/r"), &opts()),
            Ask::ForkWithoutSecrets { number: 9 }
        );
        // pull_request_target runs in the base repository, with its secrets.
        assert!(matches!(
            read("pull_request_target", &pr("fork/r"), &opts()),
            Ask::Decide { .. }
        ));
        let mut opened = pr("o/r");
        opened["action"] = json!("opened");
        opened["pull_request"]["author_association"] = json!("MEMBER");
        assert!(matches!(
            read("pull_request", &opened, &opts()),
            Ask::Nothing(_)
        ));
        let from_body = Options {
            from_body: true,
            ..opts()
        };
        assert!(matches!(
            read("pull_request", &opened, &from_body),
            Ask::Decide { .. }
        ));
        assert!(matches!(read("push", &json!({}), &opts()), Ask::Nothing(_)));
    }

    /// With --from-body, an unlabelled pull request starts a meeting only when a trusted
    /// author opens it in this repository: a stranger's, or a fork's under
    /// pull_request_target, waits for a maintainer's label; a push or an edit starts none (it
    /// would resume the meeting held on the old diff).
    #[test]
    fn from_body_needs_a_trusted_author_and_no_push_repeats_a_meeting() {
        let from_body = Options {
            from_body: true,
            ..opts()
        };
        let pr = |action: &str, head: &str, association: &str| {
            json!({"action": action,
                   "pull_request": {"number": 9, "title": "Adopt Rust for ingest",
                       "author_association": association, "user": {"login": "mallory"},
                       "head": {"repo": {"full_name": head}},
                       "base": {"repo": {"full_name": "o/r"}}}})
        };
        let ask = |e: &Value| read("pull_request_target", e, &from_body);
        assert!(matches!(
            ask(&pr("opened", "o/r", "MEMBER")),
            Ask::Decide { .. }
        ));
        for (e, says) in [
            (pr("opened", "fork/r", "NONE"), "comes from a fork"),
            (pr("opened", "fork/r", "MEMBER"), "comes from a fork"),
            (pr("opened", "o/r", "NONE"), "mallory is not a member"),
            (pr("edited", "o/r", "MEMBER"), "starts no meeting"),
            (pr("synchronize", "o/r", "MEMBER"), "starts no meeting"),
        ] {
            let Ask::Nothing(why) = ask(&e) else {
                panic!("{e}: {:?}", ask(&e))
            };
            assert!(why.contains(says), "{why}");
        }
        // A maintainer's label is the yes: a stranger's fork then gets its meeting.
        let mut labelled = pr("labeled", "fork/r", "NONE");
        labelled["label"] = json!({"name": "decide"});
        assert!(matches!(ask(&labelled), Ask::Decide { .. }));
    }

    /// The example event in share/examples/ is one a dry run reads: a member's `/decide` on a
    /// pull request, with the pull request's title and description.
    #[test]
    fn the_shared_example_event_is_a_decide_comment() {
        let event: Value =
            serde_json::from_str(include_str!("../../share/examples/github-event.json")).unwrap();
        let name = guess_name(&event).unwrap();
        assert_eq!(name, "issue_comment");
        let Ask::Decide { number, topic } = read(name, &event, &opts()) else {
            panic!("{:?}", read(name, &event, &opts()))
        };
        let pr = pull(&event);
        assert_eq!(number, pr.number);
        assert!(!topic.is_empty() && !pr.title.is_empty() && !pr.body.is_empty());
        assert_eq!(base_candidates(&event), ["origin/main"]);
    }
}
