//! The few GitHub REST calls `agent-meeting github` makes (docs/design/github.md#api): the pull
//! request, its files and diff, its comments, and one comment created or updated. The token
//! goes only to the API base URL it was given: every URL is built from it, and a redirect is
//! never followed (ureq would send the token on to wherever it points). GitLab's API is not
//! here: the GitLab template posts its note with curl from the report (share/ci/).

use serde_json::{json, Value};

use crate::error::{Error, Result};

/// How a person answers a waiting meeting on GitHub.
pub const ANSWER_HINT: &str =
    "Reply with a comment starting `/answer` and the answer; the meeting goes on from there.";

/// Who the Actions token (`GITHUB_TOKEN`) posts as.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// How much of a diff is read at most (GitHub serves up to 20,000 lines of one), and of any
/// other answer.
pub const MAX_DIFF_BYTES: u64 = 8 << 20;

/// A REST API at one base URL, with one credential header: every URL is built from the base,
/// a redirect is never followed, and the token is scrubbed from every message. Both forges'
/// clients are one of these.
pub(super) struct Rest {
    base: String,
    /// The credential header: its name and value (`authorization: Bearer …`,
    /// `private-token: …`).
    auth: (&'static str, String),
    token: String,
    /// Where the base URL came from, for the redirect's error (`GITHUB_API_URL`).
    base_from: &'static str,
    agent: ureq::Agent,
}

impl Rest {
    pub(super) fn new(
        base: &str,
        auth: (&'static str, String),
        token: &str,
        base_from: &'static str,
    ) -> Rest {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(std::time::Duration::from_secs(60)))
            .user_agent(concat!("agent-meeting/", env!("CARGO_PKG_VERSION")))
            .build();
        Rest {
            base: base.trim_end_matches('/').to_string(),
            auth,
            token: token.to_string(),
            base_from,
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// `method` `path` (below the base) with `accept` and a JSON `body`: the response's text,
    /// or the error a person can act on.
    pub(super) fn send(
        &self,
        method: &str,
        path: &str,
        accept: &str,
        body: Option<&Value>,
    ) -> Result<String> {
        self.exchange(method, path, accept, body, None)
            .map(|(text, _)| text)
    }

    /// [`Rest::send`] of a GET whose answer may be long: its first `cap` bytes (cut at a
    /// character), and whether there was more.
    pub(super) fn get_capped(&self, path: &str, accept: &str, cap: u64) -> Result<(String, bool)> {
        self.exchange("GET", path, accept, None, Some(cap))
    }

    fn exchange(
        &self,
        method: &str,
        path: &str,
        accept: &str,
        body: Option<&Value>,
        cap: Option<u64>,
    ) -> Result<(String, bool)> {
        let url = format!("{}{path}", self.base);
        let builder = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header(self.auth.0, &self.auth.1)
            .header("accept", accept)
            .header("x-github-api-version", "2022-11-28");
        let sent = match body {
            Some(b) => {
                let bytes = serde_json::to_vec(b).expect("JSON serialises");
                let req = builder
                    .header("content-type", "application/json")
                    .body(bytes)
                    .map_err(|e| Error::Runtime(format!("{url}: {e}")))?;
                self.agent.run(req)
            }
            None => {
                let req = builder
                    .body(())
                    .map_err(|e| Error::Runtime(format!("{url}: {e}")))?;
                self.agent.run(req)
            }
        };
        let scrub = |s: String| s.replace(&self.token, "[token]");
        let mut resp = sent.map_err(|e| Error::Runtime(scrub(format!("{method} {url}: {e}"))))?;
        let status = resp.status().as_u16();
        if (300..400).contains(&status) {
            let to = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("nowhere said");
            return Err(Error::Runtime(scrub(format!(
                "{method} {url}: HTTP {status} redirect to {to} not followed: the token goes only to the API it was given ({})",
                self.base_from
            ))));
        }
        let (text, cut) = match cap.filter(|_| (200..300).contains(&status)) {
            Some(cap) => {
                use std::io::Read;
                let mut bytes = Vec::new();
                let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
                (&mut reader)
                    .take(cap + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| Error::Runtime(scrub(format!("{method} {url}: {e}"))))?;
                let cut = bytes.len() as u64 > cap;
                bytes.truncate(cap as usize);
                (String::from_utf8_lossy(&bytes).into_owned(), cut)
            }
            None => (
                resp.body_mut()
                    .with_config()
                    .limit(MAX_DIFF_BYTES)
                    .read_to_string()
                    .map_err(|e| Error::Runtime(scrub(format!("{method} {url}: {e}"))))?,
                false,
            ),
        };
        if !(200..300).contains(&status) {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_string))
                .unwrap_or_else(|| crate::text::one_line(&text, 200));
            return Err(Error::Runtime(scrub(format!(
                "{method} {url}: HTTP {status}: {message}"
            ))));
        }
        Ok((text, cut))
    }

    /// [`Rest::send`] for a JSON answer.
    pub(super) fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let text = self.send(method, path, "application/vnd.github+json", body)?;
        serde_json::from_str(&text).map_err(|e| {
            Error::Runtime(format!(
                "{method} {}{path}: the response is not JSON: {e}",
                self.base
            ))
        })
    }
}

/// A client for one repository of GitHub's API.
pub struct Api {
    rest: Rest,
    repo: String,
}

impl Api {
    pub fn new(base: &str, repo: &str, token: &str) -> Api {
        let auth = ("authorization", format!("Bearer {token}"));
        Api {
            rest: Rest::new(base, auth, token, "GITHUB_API_URL"),
            repo: repo.to_string(),
        }
    }

    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        self.rest
            .json(method, &format!("/repos/{}{path}", self.repo), body)
    }

    /// The pull request.
    pub fn pull(&self, number: u64) -> Result<Value> {
        self.json("GET", &format!("/pulls/{number}"), None)
    }

    /// The pull request's diff, as `git diff` prints it: its first [`MAX_DIFF_BYTES`].
    pub fn diff(&self, number: u64) -> Result<super::Diff> {
        let path = format!("/repos/{}/pulls/{number}", self.repo);
        let (text, cut) =
            self.rest
                .get_capped(&path, "application/vnd.github.diff", MAX_DIFF_BYTES)?;
        Ok(super::Diff { text, cut })
    }

    /// The paths the pull request changes (its first 100).
    pub fn files(&self, number: u64) -> Result<Vec<String>> {
        let files = self.json("GET", &format!("/pulls/{number}/files?per_page=100"), None)?;
        Ok(files
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["status"] != "removed")
            .filter_map(|f| f["filename"].as_str().map(str::to_string))
            .collect())
    }

    /// The pull request's comments (its first 1,000).
    pub fn comments(&self, number: u64) -> Result<Vec<Value>> {
        let mut all = Vec::new();
        for page in 1..=10 {
            let got = self.json(
                "GET",
                &format!("/issues/{number}/comments?per_page=100&page={page}"),
                None,
            )?;
            let items = got.as_array().cloned().unwrap_or_default();
            let last = items.len() < 100;
            all.extend(items);
            if last {
                break;
            }
        }
        Ok(all)
    }

    /// Who this token posts as: a personal token's user (`GET /user`); the Actions token
    /// (an installation token, which `GET /user` refuses) posts as `github-actions[bot]`.
    pub fn me(&self) -> String {
        self.rest
            .json("GET", "/user", None)
            .ok()
            .and_then(|u| u["login"].as_str().map(str::to_string))
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| ACTIONS_BOT.to_string())
    }

    pub fn create_comment(&self, number: u64, body: &str) -> Result<Value> {
        self.json(
            "POST",
            &format!("/issues/{number}/comments"),
            Some(&json!({ "body": body })),
        )
    }

    pub fn update_comment(&self, id: u64, body: &str) -> Result<Value> {
        self.json(
            "PATCH",
            &format!("/issues/comments/{id}"),
            Some(&json!({ "body": body })),
        )
    }
}

impl super::Forge for Api {
    fn pull(&self, number: u64) -> Result<super::Pull> {
        let pr = Api::pull(self, number)?;
        Ok(super::Pull {
            number,
            title: pr["title"].as_str().unwrap_or("").to_string(),
            body: pr["body"].as_str().unwrap_or("").to_string(),
        })
    }

    fn diff(&self, number: u64) -> Result<super::Diff> {
        Api::diff(self, number)
    }

    fn files(&self, number: u64) -> Result<Vec<String>> {
        Api::files(self, number)
    }

    /// The comment an earlier run posted is found by its marker **and** this token's own
    /// identity ([`Api::me`]): a person's comment quoting the marker, or another bot's, is
    /// never edited, and a personal token finds the comment it posted before.
    fn upsert(&self, number: u64, body: &str) -> Result<String> {
        let marker = super::comment::marker(number);
        let me = self.me();
        let ours = self.comments(number)?.into_iter().find(|c| {
            c["body"].as_str().is_some_and(|b| b.starts_with(&marker))
                && c["user"]["login"].as_str() == Some(me.as_str())
        });
        let posted = match ours.as_ref().and_then(|c| c["id"].as_u64()) {
            Some(id) => self.update_comment(id, body)?,
            None => self.create_comment(number, body)?,
        };
        Ok(posted["html_url"].as_str().unwrap_or("").to_string())
    }

    fn answer_hint(&self) -> &'static str {
        ANSWER_HINT
    }
}
