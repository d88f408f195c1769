//! `agent-meeting gitlab` (docs/design/github.md#gitlab): the same meeting on a GitLab merge
//! request, from a merge-request pipeline. What to do comes from the pipeline's variables
//! (GitLab runs no pipeline for a comment): `AGENT_MEETING_ANSWER` answers the merge request's
//! waiting meeting, `AGENT_MEETING_TOPIC` starts one on that topic, and a merge request
//! labelled `decide` starts one on its title. The note is posted and updated through
//! `CI_API_V4_URL` with a project access token (`GITLAB_TOKEN`, scope `api`; the job token
//! cannot write notes), sent as `PRIVATE-TOKEN` to that host only, never on a redirect.

use serde_json::{json, Value};

use super::event::Ask;
use crate::error::Result;

/// How a person answers a waiting meeting on GitLab.
pub const ANSWER_HINT: &str = "Run the merge request's pipeline with the variable `AGENT_MEETING_ANSWER` set to the answer (CI/CD → Pipelines → Run pipeline); the meeting goes on from there.";

/// What the pipeline says, from its predefined variables and the user's.
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    /// `CI_MERGE_REQUEST_IID`.
    pub iid: Option<u64>,
    /// `CI_PROJECT_ID` (or the URL-encoded path).
    pub project: String,
    /// `CI_MERGE_REQUEST_TITLE`.
    pub title: String,
    /// `CI_MERGE_REQUEST_LABELS`, comma-separated.
    pub labels: String,
    /// `CI_MERGE_REQUEST_SOURCE_PROJECT_ID` and `CI_MERGE_REQUEST_PROJECT_ID`: a merge request
    /// from a fork when they differ.
    pub source_project: String,
    pub target_project: String,
    /// `AGENT_MEETING_TOPIC`.
    pub topic: Option<String>,
    /// `AGENT_MEETING_ANSWER`.
    pub answer: Option<String>,
    /// The label that starts a meeting on the title (`--label`, default `decide`).
    pub label: String,
}

/// What the pipeline asks.
pub fn read(p: &Pipeline) -> Ask {
    let Some(iid) = p.iid else {
        return Ask::Nothing(
            "not a merge request pipeline (no CI_MERGE_REQUEST_IID): a meeting runs in `rules: - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"`".into(),
        );
    };
    let text = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    if !p.source_project.is_empty() && p.source_project != p.target_project {
        return Ask::ForkWithoutSecrets { number: iid };
    }
    if let Some(answer) = text(&p.answer) {
        return Ask::Answer {
            number: iid,
            text: answer,
        };
    }
    if let Some(topic) = text(&p.topic) {
        return Ask::Decide { number: iid, topic };
    }
    let labelled = p.labels.split(',').any(|l| l.trim() == p.label);
    match (labelled, p.title.trim()) {
        (true, title) if !title.is_empty() => Ask::Decide {
            number: iid,
            topic: title.to_string(),
        },
        _ => Ask::Nothing(format!(
            "merge request !{iid}: set AGENT_MEETING_TOPIC, or label it {:?}, to start a meeting",
            p.label
        )),
    }
}

/// A client for one project of one GitLab API.
pub struct Api {
    rest: super::api::Rest,
    project: String,
}

impl Api {
    pub fn new(base: &str, project: &str, token: &str) -> Api {
        let auth = ("private-token", token.to_string());
        Api {
            rest: super::api::Rest::new(base, auth, token, "CI_API_V4_URL"),
            project: project.replace('/', "%2F"),
        }
    }

    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        self.rest.json(method, path, body)
    }

    fn mr(&self, iid: u64) -> String {
        format!("/projects/{}/merge_requests/{iid}", self.project)
    }

    fn diffs(&self, iid: u64) -> Result<Vec<Value>> {
        let got = self.json("GET", &format!("{}/diffs?per_page=100", self.mr(iid)), None)?;
        Ok(got.as_array().cloned().unwrap_or_default())
    }
}

impl super::Forge for Api {
    fn pull(&self, iid: u64) -> Result<super::Pull> {
        let mr = self.json("GET", &self.mr(iid), None)?;
        Ok(super::Pull {
            number: iid,
            title: mr["title"].as_str().unwrap_or("").to_string(),
            body: mr["description"].as_str().unwrap_or("").to_string(),
        })
    }

    /// The merge request's diffs, as `git diff` prints them.
    fn diff(&self, iid: u64) -> Result<super::Diff> {
        let text = self
            .diffs(iid)?
            .iter()
            .map(|d| {
                format!(
                    "diff --git a/{} b/{}\n{}",
                    d["old_path"].as_str().unwrap_or(""),
                    d["new_path"].as_str().unwrap_or(""),
                    d["diff"].as_str().unwrap_or("")
                )
            })
            .collect();
        Ok(super::Diff { text, cut: false })
    }

    fn files(&self, iid: u64) -> Result<Vec<String>> {
        Ok(self
            .diffs(iid)?
            .iter()
            .filter(|d| d["deleted_file"] != true)
            .filter_map(|d| d["new_path"].as_str().map(str::to_string))
            .collect())
    }

    /// The note an earlier run posted: its marker, by this token's own user (a person's note
    /// quoting the marker is never edited).
    fn upsert(&self, iid: u64, body: &str) -> Result<String> {
        let me = self.json("GET", "/user", None)?;
        let me = me["username"].as_str().unwrap_or("");
        let marker = super::comment::marker(iid);
        let notes = format!("{}/notes", self.mr(iid));
        let mut ours = None;
        for page in 1..=10 {
            let got = self.json("GET", &format!("{notes}?per_page=100&page={page}"), None)?;
            let items = got.as_array().cloned().unwrap_or_default();
            ours = items.iter().find_map(|n| {
                let mine = n["author"]["username"] == me && !me.is_empty();
                let marked = n["body"].as_str().is_some_and(|b| b.starts_with(&marker));
                (mine && marked).then(|| n["id"].as_u64()).flatten()
            });
            if ours.is_some() || items.len() < 100 {
                break;
            }
        }
        let body = json!({ "body": body });
        let posted = match ours {
            Some(id) => self.json("PUT", &format!("{notes}/{id}"), Some(&body))?,
            None => self.json("POST", &notes, Some(&body))?,
        };
        Ok(format!("note {}", posted["id"]))
    }

    fn answer_hint(&self) -> &'static str {
        ANSWER_HINT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline() -> Pipeline {
        Pipeline {
            iid: Some(5),
            project: "42".into(),
            title: "Move CI to arm64".into(),
            labels: "infra,decide".into(),
            source_project: "42".into(),
            target_project: "42".into(),
            label: "decide".into(),
            ..Pipeline::default()
        }
    }

    #[test]
    fn a_pipeline_decides_answers_or_asks_nothing() {
        assert_eq!(
            read(&pipeline()),
            Ask::Decide {
                number: 5,
                topic: "Move CI to arm64".into()
            }
        );
        let topic = Pipeline {
            topic: Some("Which runner?".into()),
            labels: String::new(),
            ..pipeline()
        };
        assert!(matches!(read(&topic), Ask::Decide { topic, .. } if topic == "Which runner?"));
        let answer = Pipeline {
            answer: Some(" Priya ".into()),
            ..pipeline()
        };
        assert_eq!(
            read(&answer),
            Ask::Answer {
                number: 5,
                text: "Priya".into()
            }
        );
        let unlabelled = Pipeline {
            labels: "infra".into(),
            ..pipeline()
        };
        assert!(matches!(read(&unlabelled), Ask::Nothing(_)));
        let fork = Pipeline {
            source_project: "77".into(),
            ..pipeline()
        };
        assert_eq!(read(&fork), Ask::ForkWithoutSecrets { number: 5 });
        assert!(matches!(
            read(&Pipeline {
                iid: None,
                ..pipeline()
            }),
            Ask::Nothing(_)
        ));
    }
}
