//! `agent-meeting github` (docs/design/github.md) against a fake GitHub API: a `/decide`
//! comment runs a meeting on the pull request and posts one comment, a second run updates it
//! (and pays nothing again), a meeting waiting for a person says how to answer and `/answer`
//! resumes it, a fork's `pull_request` event runs nothing and says why, and the token goes to
//! the API it was given and nowhere else (no redirect followed, none to the meeting).

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::fake_http::{self, Action, FakeServer};
use crate::fixtures::{pm, Cassette};
use crate::harness::{Cli, Run, Workdir};

const TOKEN: &str = "ghs_faketoken1234567890";

/// A fake GitHub holding one pull request (#7 of o/r) and its comments.
struct FakeGithub {
    server: FakeServer,
    comments: Arc<Mutex<Vec<Value>>>,
}

impl FakeGithub {
    /// As the Actions token sees it: `GET /user` refused, comments posted by
    /// `github-actions[bot]`.
    fn start(head_repo: &str) -> FakeGithub {
        FakeGithub::start_as(head_repo, None)
    }

    /// With `pat`, as a personal token of that user sees it: `GET /user` is them, and their
    /// comments are a `User`'s.
    fn start_as(head_repo: &str, pat: Option<&str>) -> FakeGithub {
        FakeGithub::start_with(head_repo, pat, 200)
    }

    /// With the diff answered with `diff_status` (GitHub's 406 for a diff too large).
    fn start_with(head_repo: &str, pat: Option<&str>, diff_status: u16) -> FakeGithub {
        let comments: Arc<Mutex<Vec<Value>>> = Arc::new(Mutex::new(vec![
            // A person quoting the marker: never edited.
            json!({"id": 1, "body": "<!-- agent-meeting:pr-7 --> quoted by a person",
                   "user": {"login": "ana", "type": "User"}}),
            // Another bot's comment starting with the marker: never edited either.
            json!({"id": 2, "body": "<!-- agent-meeting:pr-7 --> renovate's",
                   "user": {"login": "renovate[bot]", "type": "Bot"}}),
        ]));
        let store = comments.clone();
        let head = head_repo.to_string();
        let poster = match pat {
            Some(login) => json!({"login": login, "type": "User"}),
            None => json!({"login": "github-actions[bot]", "type": "Bot"}),
        };
        let me = pat.map(str::to_string);
        let server = FakeServer::answering(move |req| {
            let mut all = store.lock().unwrap();
            let path = req.path.as_str();
            match (req.method.as_str(), path) {
                ("GET", "/user") => match &me {
                    Some(login) => fake_http::json(200, &json!({"login": login}).to_string()),
                    None => fake_http::json(
                        403,
                        r#"{"message": "Resource not accessible by integration"}"#,
                    ),
                },
                ("GET", "/repos/o/r/pulls/7")
                    if req.header("accept") == Some("application/vnd.github.diff")
                        && diff_status == 406 =>
                {
                    fake_http::json(
                        406,
                        r#"{"message": "Sorry, the diff exceeded the maximum number of lines (20000)"}"#,
                    )
                }
                ("GET", "/repos/o/r/pulls/7")
                    if req.header("accept") == Some("application/vnd.github.diff") =>
                {
                    fake_http::json(
                        200,
                        "diff --git a/ci.yml b/ci.yml\n+runs-on: ubuntu-24.04-arm\n+# token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
                    )
                }
                ("GET", "/repos/o/r/pulls/7") => fake_http::json(
                    200,
                    &json!({"number": 7, "title": "Move CI to arm64",
                            "body": "Runners on arm64 cost less. Builds must stay under 10 minutes. Test key: AKIAIOSFODNN7EXAMPLE",
                            "head": {"repo": {"full_name": head}},
                            "base": {"repo": {"full_name": "o/r"}}})
                    .to_string(),
                ),
                ("GET", p) if p.starts_with("/repos/o/r/pulls/7/files") => fake_http::json(
                    200,
                    r#"[{"filename": "ci.yml", "status": "modified"}]"#,
                ),
                ("GET", p) if p.starts_with("/repos/o/r/issues/7/comments") => {
                    fake_http::json(200, &Value::Array(all.clone()).to_string())
                }
                ("POST", "/repos/o/r/issues/7/comments") => {
                    let id = 100 + all.len() as u64;
                    let c = json!({"id": id, "body": req.json()["body"],
                                   "user": poster,
                                   "html_url": format!("https://github.test/o/r/pull/7#issuecomment-{id}")});
                    all.push(c.clone());
                    fake_http::json(201, &c.to_string())
                }
                ("PATCH", p) if p.starts_with("/repos/o/r/issues/comments/") => {
                    let id: u64 = p.rsplit('/').next().unwrap().parse().unwrap();
                    let Some(c) = all.iter_mut().find(|c| c["id"] == id) else {
                        return fake_http::json(404, r#"{"message": "Not Found"}"#);
                    };
                    c["body"] = req.json()["body"].clone();
                    fake_http::json(200, &c.to_string())
                }
                _ => fake_http::json(404, r#"{"message": "Not Found"}"#),
            }
        });
        FakeGithub { server, comments }
    }

    /// The comments this program posted (ids from 100: the others were there before).
    fn ours(&self) -> Vec<Value> {
        self.comments
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c["id"].as_u64() >= Some(100))
            .cloned()
            .collect()
    }

    fn requests(&self, method: &str) -> usize {
        (0..self.server.count())
            .filter(|&i| self.server.request(i).method == method)
            .count()
    }
}

fn comment_event(work: &Workdir, body: &str) -> std::path::PathBuf {
    work.write(
        "event.json",
        json!({"action": "created",
               "issue": {"number": 7, "pull_request": {"url": "x"}},
               "comment": {"body": body, "author_association": "MEMBER",
                           "user": {"login": "ana"}},
               "repository": {"full_name": "o/r"}})
        .to_string(),
    )
}

/// `agent-meeting github` run in `work` against `gh`, on the event in `event.json`.
fn github(work: &Workdir, gh: &FakeGithub, name: &str, env: &[(&str, &str)]) -> Run {
    let mut c = Cli::new(std::process::Command::new(env!(
        "CARGO_BIN_EXE_agent-meeting"
    )));
    c.current_dir(work.path())
        .arg("github")
        .env("GITHUB_EVENT_NAME", name)
        .env("GITHUB_EVENT_PATH", work.join("event.json"))
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_API_URL", &gh.server.url)
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_STEP_SUMMARY", work.join("summary.md"));
    for (k, v) in env {
        c.env(k, v);
    }
    c.run()
}

/// The done-when of the feature: a `/decide` comment, the sample provider, one comment with
/// the recommendation posted to the API given; a second run updates that comment, asks no
/// model again, and posts no second one. The token went to that API on every request, the
/// diff's secret was redacted before the meeting read it.
#[test]
fn a_decide_comment_posts_one_comment_and_a_rerun_updates_it() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    work.write("ci.yml", "runs-on: ubuntu-24.04\n");
    let gh = FakeGithub::start("o/r");
    comment_event(&work, "/decide Move CI to arm64 runners?\nThanks!");
    let env = [("AGENT_MEETING_PROVIDER", "sample")];
    let first = github(&work, &gh, "issue_comment", &env);
    first.success();
    let ours = gh.ours();
    assert_eq!(ours.len(), 1, "{ours:?}");
    let body = ours[0]["body"].as_str().unwrap().to_string();
    assert!(body.starts_with("<!-- agent-meeting:pr-7 -->\n"), "{body}");
    assert!(body.contains("**Move CI to arm64 runners?**"), "{body}");
    assert!(body.contains("#### Recommendation"), "{body}");
    assert!(body.contains("**Cost:**"), "{body}");
    // Under issue_comment the checkout is the base branch: the comment says which version of
    // the changed files the meeting read.
    assert!(
        body.contains("The changed files were read as the base branch has them"),
        "{body}"
    );
    for i in 0..gh.server.count() {
        let req = gh.server.request(i);
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str()),
            "{} {}",
            req.method,
            req.path
        );
    }
    let run = work.join("runs/.github/pr-7/pr.diff");
    let diff = std::fs::read_to_string(run).unwrap();
    assert!(!diff.contains("ghp_abcdefghij"), "{diff}");
    // The meeting read the diff, kept under the default run folder `runs/` (only run
    // folders themselves are agent-meeting output), redacted.
    let packet = std::fs::read_dir(work.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("0001-collect-context.out.json"))
        .find(|p| p.is_file())
        .expect("a run folder");
    let packet = std::fs::read_to_string(packet).unwrap();
    assert!(packet.contains("ubuntu-24.04-arm"), "{packet}");
    assert!(!packet.contains("ghp_abcdefghij"));
    // The description's secret is redacted in what is kept too (the meeting file).
    for e in std::fs::read_dir(work.join("runs/.github/pr-7"))
        .unwrap()
        .flatten()
    {
        let kept = std::fs::read_to_string(e.path()).unwrap();
        assert!(
            !kept.contains("AKIAIOSFODNN7EXAMPLE"),
            "{}",
            e.path().display()
        );
    }
    assert!(
        work.read("summary.md").contains("agent-meeting: decided")
            || body.contains("agent-meeting:")
    );
    let calls = |work: &Workdir| -> usize {
        let dir = std::fs::read_dir(work.join("runs"))
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("pr-7-"))
            .unwrap()
            .path();
        std::fs::read_to_string(dir.join("llm.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    let before = calls(&work);
    let posts = gh.requests("POST");
    github(&work, &gh, "issue_comment", &env).success();
    assert_eq!(gh.ours().len(), 1, "never a second comment");
    assert_eq!(gh.requests("POST"), posts);
    assert_eq!(gh.requests("PATCH"), 1);
    assert_eq!(calls(&work), before, "nothing asked twice");
    // The person's comment quoting the marker, and another bot's, are as they were.
    let all = gh.comments.lock().unwrap().clone();
    assert_eq!(
        all[0]["body"],
        "<!-- agent-meeting:pr-7 --> quoted by a person"
    );
    assert_eq!(all[1]["body"], "<!-- agent-meeting:pr-7 --> renovate's");
}

/// A personal token's comment is found again by the token's own identity (`GET /user`): a
/// second run updates it instead of posting another; no other author's comment is edited.
#[test]
fn a_personal_tokens_comment_is_updated_not_posted_again() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    let gh = FakeGithub::start_as("o/r", Some("priya"));
    comment_event(&work, "/decide Move CI to arm64 runners?");
    let env = [("AGENT_MEETING_PROVIDER", "sample")];
    github(&work, &gh, "issue_comment", &env).success();
    github(&work, &gh, "issue_comment", &env).success();
    let ours = gh.ours();
    assert_eq!(ours.len(), 1, "{ours:?}");
    assert_eq!(ours[0]["user"]["login"], "priya");
    assert_eq!(gh.requests("PATCH"), 1);
    let all = gh.comments.lock().unwrap().clone();
    assert_eq!(all[1]["body"], "<!-- agent-meeting:pr-7 --> renovate's");
}

/// A meeting that waits for a person says whom and how to answer; an `/answer` comment
/// resumes it, and the same comment then says what it decided.
#[test]
fn a_waiting_meeting_is_answered_by_an_answer_comment() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    work.write(
        "cfg/agent-meeting/agents/ana.yaml",
        "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows the nights on call.\n",
    );
    work.write(".github/agent-meeting.yaml", "agents: [arch, ana]\n");
    let c = Cassette::new()
        .pm(pm::call("ana", "Who gets paged at night?"))
        .at(3)
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let gh = FakeGithub::start("o/r");
    let cfg = work.join("cfg");
    let env = [
        ("AGENT_MEETING_PROVIDER", "replay"),
        ("MEETING_CASSETTE", c.to_str().unwrap()),
        ("XDG_CONFIG_HOME", cfg.to_str().unwrap()),
        ("MEETING_HUMAN_TTY", "/nonexistent/tty"),
    ];
    comment_event(&work, "/decide Who is on call for the new runners?");
    github(&work, &gh, "issue_comment", &env).success();
    let body = gh.ours()[0]["body"].as_str().unwrap().to_string();
    assert!(body.contains("agent-meeting: waiting for ana"), "{body}");
    assert!(body.contains("Who gets paged at night?"), "{body}");
    assert!(body.contains("`/answer`"), "{body}");
    comment_event(&work, "/answer Priya, by phone.");
    github(&work, &gh, "issue_comment", &env).success();
    let ours = gh.ours();
    assert_eq!(ours.len(), 1);
    let body = ours[0]["body"].as_str().unwrap();
    assert!(body.contains("agent-meeting: decided"), "{body}");
}

/// The repository file's options are the meeting's (one type with the MCP tools' and the
/// command line's: a budget, a council's models, a loop limit), a flag wins over the file,
/// and a key no option has is refused naming the file and the key.
#[test]
fn the_repository_files_options_reach_the_meeting() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    work.write(
        ".github/agent-meeting.yaml",
        "agents: arch, biz\nmax_loops: 2\nmax_total_tokens: 300000\nmax_parallel: 1\n",
    );
    let gh = FakeGithub::start("o/r");
    comment_event(&work, "/decide Move CI to arm64 runners?");
    let env = [("AGENT_MEETING_PROVIDER", "sample")];
    github(&work, &gh, "issue_comment", &env).success();
    let saved = std::fs::read_dir(work.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("meeting.json"))
        .find(|p| p.is_file())
        .expect("a run folder");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    let board = &saved["board"];
    assert_eq!(board["agents"], json!(["arch", "biz"]), "{saved}");
    assert_eq!(board["max_loops"], 2, "{saved}");
    assert_eq!(board["max_total_tokens"], 300000, "{saved}");
    assert_eq!(board["max_parallel"], 1, "{saved}");
    work.write(".github/agent-meeting.yaml", "max_cots: 1\n");
    comment_event(&work, "/decide Another question?");
    let out = github(&work, &gh, "issue_comment", &env);
    out.exit(2)
        .stderr_has("agent-meeting.yaml: max_cots: unknown field `max_cots`");
}

/// A fork's `pull_request` workflow has no secrets: nothing runs, nothing is asked of the
/// API, and the log and the job's summary say why and what a maintainer can do.
#[test]
fn a_forks_pull_request_runs_nothing_and_says_why() {
    let work = Workdir::new();
    let gh = FakeGithub::start("fork/r");
    work.write(
        "event.json",
        json!({"action": "labeled", "label": {"name": "decide"},
               "pull_request": {"number": 7, "title": "Move CI to arm64",
                   "head": {"repo": {"full_name": "fork/r"}},
                   "base": {"repo": {"full_name": "o/r"}}}})
        .to_string(),
    );
    let out = github(&work, &gh, "pull_request", &[]);
    out.success().stderr_has("comes from a fork");
    assert_eq!(gh.server.count(), 0);
    assert!(work.read("summary.md").contains("/decide <topic>"));
}

/// The token goes to the API it was given, and nowhere a response points: a redirect is
/// refused (exit 1, the token never in the message) and the other host sees nothing.
#[test]
fn a_redirect_from_the_api_is_not_followed_with_the_token() {
    let work = Workdir::new();
    let elsewhere = FakeServer::start(vec![]);
    let gh = FakeServer::start(vec![Action::Respond {
        status: 302,
        headers: vec![(
            "location".into(),
            format!("{}/repos/o/r/pulls/7", elsewhere.url),
        )],
        body: String::new(),
    }]);
    comment_event(&work, "/decide Move CI?");
    let mut c = Cli::new(std::process::Command::new(env!(
        "CARGO_BIN_EXE_agent-meeting"
    )));
    let out = c
        .current_dir(work.path())
        .args(["github", "--event-name", "issue_comment", "--repo", "o/r"])
        .arg("--event")
        .arg(work.join("event.json"))
        .args(["--api-url", &gh.url])
        .env("GITHUB_TOKEN", TOKEN)
        .run();
    out.exit(1).stderr_has("not followed");
    assert!(!out.stderr().contains(TOKEN));
    assert_eq!(elsewhere.count(), 0);
    assert_eq!(gh.count(), 1);
}

/// The action is valid for GitHub's schema of actions, and the GitLab template for GitLab's
/// CI schema (`check-jsonschema`'s vendored copies; a test that needs the tool says so, and CI
/// installs it).
#[test]
fn the_action_and_the_gitlab_template_are_valid_for_their_schemas() {
    if crate::harness::skip_without(crate::harness::Tool::CheckJsonschema) {
        return;
    }
    let root = crate::harness::root();
    for (file, schema) in [
        ("action.yml", "vendor.github-actions"),
        ("share/ci/gitlab-ci.yml", "vendor.gitlab-ci"),
    ] {
        let out = std::process::Command::new("check-jsonschema")
            .args(["--builtin-schema", schema])
            .arg(root.join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// zizmor (GitHub Actions' static analysis) finds nothing in the Action nor in the workflow
/// the guide tells users to copy: every action pinned by commit, no persisted credentials, and
/// each deliberate choice (the issue_comment trigger) marked in place with its reason.
#[test]
fn the_action_and_the_guides_workflow_pass_zizmor() {
    if crate::harness::skip_without(crate::harness::Tool::Zizmor) {
        return;
    }
    let root = crate::harness::root();
    let guide = std::fs::read_to_string(root.join("docs/GUIDE.md")).unwrap();
    let start = guide
        .find("name: agent-meeting\non:")
        .expect("the guide's workflow");
    let end = guide[start..].find("```").unwrap() + start;
    let work = Workdir::new();
    let workflow = work.write(".github/workflows/meeting.yml", &guide[start..end]);
    for file in [root.join("action.yml"), workflow] {
        let out = std::process::Command::new("zizmor")
            .args(["--offline", "--no-progress"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A fake GitLab holding merge request !5 of project 42 and its notes.
fn fake_gitlab() -> (FakeServer, Arc<Mutex<Vec<Value>>>) {
    let notes: Arc<Mutex<Vec<Value>>> = Arc::new(Mutex::new(vec![json!({
        "id": 1, "body": "<!-- agent-meeting:pr-5 --> quoted", "author": {"username": "ana"}})]));
    let store = notes.clone();
    let server = FakeServer::answering(move |req| {
        let mut all = store.lock().unwrap();
        let base = "/api/v4/projects/42/merge_requests/5";
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/api/v4/user") => fake_http::json(200, r#"{"username": "project_42_bot"}"#),
            ("GET", p) if p == base => fake_http::json(
                200,
                r#"{"iid": 5, "title": "Move CI to arm64", "description": "Runners on arm64 cost less."}"#,
            ),
            ("GET", p) if p.starts_with(&format!("{base}/diffs")) => fake_http::json(
                200,
                r#"[{"old_path": "ci.yml", "new_path": "ci.yml", "diff": "+runs-on: arm64\n", "deleted_file": false}]"#,
            ),
            ("GET", p) if p.starts_with(&format!("{base}/notes")) => {
                fake_http::json(200, &Value::Array(all.clone()).to_string())
            }
            ("POST", p) if p == format!("{base}/notes") => {
                let n = json!({"id": 100 + all.len(), "body": req.json()["body"],
                               "author": {"username": "project_42_bot"}});
                all.push(n.clone());
                fake_http::json(201, &n.to_string())
            }
            ("PUT", p) if p.starts_with(&format!("{base}/notes/")) => {
                let id: u64 = p.rsplit('/').next().unwrap().parse().unwrap();
                let Some(n) = all.iter_mut().find(|n| n["id"] == id) else {
                    return fake_http::json(404, r#"{"message": "404 Not found"}"#);
                };
                n["body"] = req.json()["body"].clone();
                fake_http::json(200, &n.to_string())
            }
            _ => fake_http::json(404, r#"{"message": "404 Not found"}"#),
        }
    });
    (server, notes)
}

/// `agent-meeting gitlab` run in `work` against `server`, on a labelled merge request.
fn gitlab(work: &Workdir, server: &FakeServer, env: &[(&str, &str)]) -> Run {
    let mut c = Cli::new(std::process::Command::new(env!(
        "CARGO_BIN_EXE_agent-meeting"
    )));
    c.current_dir(work.path())
        .arg("gitlab")
        .env("CI_API_V4_URL", format!("{}/api/v4", server.url))
        .env("CI_PROJECT_ID", "42")
        .env("CI_MERGE_REQUEST_IID", "5")
        .env("CI_MERGE_REQUEST_TITLE", "Move CI to arm64")
        .env("CI_MERGE_REQUEST_LABELS", "infra,decide")
        .env("CI_MERGE_REQUEST_SOURCE_PROJECT_ID", "42")
        .env("CI_MERGE_REQUEST_PROJECT_ID", "42")
        .env("GITLAB_TOKEN", "glpat-faketoken");
    for (k, v) in env {
        c.env(k, v);
    }
    c.run()
}

/// `agent-meeting gitlab` against a fake GitLab API: a merge request labelled `decide` gets
/// one note (PRIVATE-TOKEN to that API only), a re-run updates it, and a person's note quoting
/// the marker is left alone.
#[test]
fn a_labelled_merge_request_gets_one_note_updated_on_a_rerun() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    let (server, notes) = fake_gitlab();
    let run = || gitlab(&work, &server, &[("AGENT_MEETING_PROVIDER", "sample")]);
    run().success();
    run().success();
    let all = notes.lock().unwrap().clone();
    let ours: Vec<&Value> = all
        .iter()
        .filter(|n| n["author"]["username"] == "project_42_bot")
        .collect();
    assert_eq!(ours.len(), 1, "{all:?}");
    let body = ours[0]["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- agent-meeting:pr-5 -->\n"), "{body}");
    assert!(body.contains("**Move CI to arm64**"), "{body}");
    assert_eq!(all[0]["body"], "<!-- agent-meeting:pr-5 --> quoted");
    let puts = (0..server.count())
        .filter(|&i| server.request(i).method == "PUT")
        .count();
    assert_eq!(puts, 1);
    for i in 0..server.count() {
        let req = server.request(i);
        assert_eq!(
            req.header("private-token"),
            Some("glpat-faketoken"),
            "{}",
            req.path
        );
    }
}

/// No forge credential reaches the meeting: a `--header` reading the token from the
/// environment (`AGENT_MEETING_HEADERS`) finds it unset in the meeting, so no model request
/// ever carries it — for each of GitHub's and GitLab's token variables.
#[test]
fn no_forge_token_reaches_the_meetings_model_requests() {
    let model = || {
        let reply = crate::fake_http::json(
            200,
            &crate::fake_http::openai_ok(&pm::done().to_string(), Some((10, 10))),
        );
        FakeServer::start((0..8).map(|_| reply.clone()).collect())
    };
    let env = |model: &FakeServer, var: &str| -> Vec<(String, String)> {
        vec![
            ("AGENT_MEETING_PROVIDER".into(), "openai".into()),
            ("OPENAI_API_KEY".into(), "sk-test".into()),
            ("OPENAI_BASE_URL".into(), format!("{}/v1", model.url)),
            (
                "AGENT_MEETING_HEADERS".into(),
                format!("X-Leak: ${{{var}}}"),
            ),
            ("CI_JOB_TOKEN".into(), "ci-job-faketoken".into()),
        ]
    };
    let leaked = |model: &FakeServer, token: &str| {
        (0..model.count()).any(|i| {
            let req = model.request(i);
            req.headers.iter().any(|(_, v)| v.contains(token))
        })
    };
    for (var, token) in [("GITHUB_TOKEN", TOKEN), ("GH_TOKEN", TOKEN)] {
        let work = Workdir::new();
        work.write(".git/HEAD", "ref: refs/heads/main\n");
        let gh = FakeGithub::start("o/r");
        let m = model();
        comment_event(&work, "/decide Move CI to arm64 runners?");
        let mut env = env(&m, var);
        env.push(("GH_TOKEN".into(), TOKEN.into()));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        github(&work, &gh, "issue_comment", &env);
        assert!(!leaked(&m, token), "{var} reached a model request");
    }
    for (var, token) in [
        ("GITLAB_TOKEN", "glpat-faketoken"),
        ("CI_JOB_TOKEN", "ci-job-faketoken"),
    ] {
        let work = Workdir::new();
        work.write(".git/HEAD", "ref: refs/heads/main\n");
        let (server, _) = fake_gitlab();
        let m = model();
        let env = env(&m, var);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        gitlab(&work, &server, &env);
        assert!(!leaked(&m, token), "{var} reached a model request");
    }
}

/// A meeting that cannot run (no provider key) is no green check: the program exits non-zero,
/// and the comment says the meeting did not start — with the topic asked, the error, and no
/// run folder to resume.
#[test]
fn a_meeting_that_cannot_run_fails_the_job_and_says_not_started() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    let gh = FakeGithub::start("o/r");
    comment_event(&work, "/decide Move CI to arm64 runners?");
    let out = github(
        &work,
        &gh,
        "issue_comment",
        &[("AGENT_MEETING_PROVIDER", "openai")],
    );
    assert!(matches!(out.code(), Some(1 | 2)), "{}", out.stderr());
    out.stderr_has("the meeting could not run");
    let body = gh.ours()[0]["body"].as_str().unwrap().to_string();
    assert!(body.contains("agent-meeting: not started"), "{body}");
    assert!(body.contains("**Move CI to arm64 runners?**"), "{body}");
    assert!(body.contains("OPENAI_API_KEY"), "{body}");
    assert!(!body.contains("resumable"), "{body}");
}

/// A pull request whose diff GitHub will not serve (406: too large) still gets its meeting, on
/// the files it changes, and the comment says what was left out — on the re-run too.
#[test]
fn a_diff_too_large_to_serve_still_gets_a_meeting_and_says_so() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    work.write("ci.yml", "runs-on: ubuntu-24.04\n");
    let gh = FakeGithub::start_with("o/r", None, 406);
    comment_event(&work, "/decide Move CI to arm64 runners?");
    let env = [("AGENT_MEETING_PROVIDER", "sample")];
    for _ in 0..2 {
        github(&work, &gh, "issue_comment", &env).success();
        let body = gh.ours()[0]["body"].as_str().unwrap().to_string();
        assert!(body.contains("agent-meeting: decided"), "{body}");
        assert!(
            body.contains("Read in part: the meeting did not read the diff"),
            "{body}"
        );
        assert!(body.contains("maximum number of lines"), "{body}");
    }
}

/// A labelled `pull_request` event checks out the pull request's merge commit: the meeting
/// reads the changed files as the pull request has them, and the comment says so.
#[test]
fn a_labelled_pull_request_reads_the_pull_requests_files_and_says_so() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    work.write("ci.yml", "runs-on: ubuntu-24.04-arm\n");
    let gh = FakeGithub::start("o/r");
    work.write(
        "event.json",
        json!({"action": "labeled", "label": {"name": "decide"},
               "pull_request": {"number": 7, "title": "Move CI to arm64",
                   "head": {"repo": {"full_name": "o/r"}},
                   "base": {"repo": {"full_name": "o/r"}}}})
        .to_string(),
    );
    let env = [("AGENT_MEETING_PROVIDER", "sample")];
    github(&work, &gh, "pull_request", &env).success();
    let body = gh.ours()[0]["body"].as_str().unwrap().to_string();
    assert!(
        body.contains("The changed files were read as the pull request has them."),
        "{body}"
    );
    let kept = std::fs::read_dir(work.join("runs/.github/pr-7"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let kept = std::fs::read_to_string(kept).unwrap();
    assert!(
        kept.contains("A file the pull request changes, as the pull request has them"),
        "{kept}"
    );
}

/// The Action's commit-adr step, run as its shell: in a checkout with no record folder it
/// commits nothing and says why; with a record written it commits only the record folder that
/// exists, and a refused push shows git's own error and fails the step (nothing hidden).
#[test]
fn the_actions_commit_adr_step_commits_the_record_or_says_why() {
    if crate::harness::skip_without(crate::harness::Tool::Bash) {
        return;
    }
    let action: Value = serde_yaml::from_str(
        &std::fs::read_to_string(crate::harness::root().join("action.yml")).unwrap(),
    )
    .unwrap();
    let step = action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Commit the decision record")
        .expect("the commit-adr step");
    let script = step["run"].as_str().unwrap().to_string();
    let work = Workdir::new();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(work.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    work.write("README.md", "x\n");
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "add", "-A"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "first",
    ]);
    let run = || {
        let mut c = Cli::new(std::process::Command::new("bash"));
        c.args(["-c", &script])
            .current_dir(work.path())
            .env("HEAD_REF", "feature")
            .env("GIT_CONFIG_GLOBAL", "/dev/null");
        c.run()
    };
    run()
        .success()
        .stdout_has("no decision record committed: none of docs/decisions");
    work.write("docs/adr/0001-use-arm64.md", "# Use arm64\n");
    let out = run();
    assert_ne!(out.code(), Some(0), "a refused push fails the step");
    out.stderr_has("origin");
    let log = std::process::Command::new("git")
        .args(["log", "--name-only", "-1", "--format=%s"])
        .current_dir(work.path())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("Decision record from agent-meeting"), "{log}");
    assert!(log.contains("docs/adr/0001-use-arm64.md"), "{log}");
}

/// A git checkout in a new folder: `ci.yml` committed, then changed in a second commit (the
/// pull request's), both by `t`; `commits` 1 leaves only the first.
fn checkout(commits: usize) -> Workdir {
    let work = Workdir::new();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(work.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    work.write("ci.yml", "runs-on: ubuntu-24.04\n");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "first"]);
    if commits > 1 {
        work.write("ci.yml", "runs-on: ubuntu-24.04-arm\n");
        git(&["commit", "-qam", "Move CI to arm64 runners"]);
    }
    work
}

/// A fake API that answers nothing but 404: a dry run must not ask it anything.
fn no_api() -> FakeServer {
    FakeServer::answering(|_| fake_http::json(404, r#"{"message": "Not Found"}"#))
}

/// `agent-meeting MODE --dry-run ARGS` in `work`, with the API (of either forge) at `api` and
/// no token (the harness keeps GITHUB_* out; none is set).
fn dry_run(work: &Workdir, mode: &str, api: &FakeServer, args: &[&str]) -> Run {
    let mut c = Cli::new(std::process::Command::new(env!(
        "CARGO_BIN_EXE_agent-meeting"
    )));
    c.current_dir(work.path())
        .args([mode, "--dry-run"])
        .args(args)
        .env("GITHUB_API_URL", &api.url)
        .env("GITHUB_REPOSITORY", "o/r")
        .env("CI_API_V4_URL", format!("{}/api/v4", api.url));
    c.run()
}

/// `--dry-run` on the example event of share/: the meeting is held on the pull request as the
/// event and the checkout give it (its title and description, the diff of its commit from
/// git) and the comment it would post is printed on stdout — with no token, and no request to
/// the API.
#[test]
fn a_dry_run_prints_the_comment_and_asks_no_api() {
    let work = checkout(2);
    let api = no_api();
    let event = crate::harness::root().join("share/examples/github-event.json");
    let event = event.to_str().unwrap();
    let out = dry_run(
        &work,
        "github",
        &api,
        &["--event", event, "--provider", "sample"],
    );
    out.success()
        .stdout_has("<!-- agent-meeting:pr-7 -->\n### agent-meeting: decided")
        .stdout_has("**Move CI to arm64 runners?**")
        .stdout_has("#### Recommendation")
        .stdout_has("The changed files were read as the pull request has them.")
        .stderr_has("agent-meeting github: decided (dry run: printed on stdout, not posted)");
    assert_eq!(api.count(), 0, "a dry run asked the API");
    // The meeting read the pull request's commit (HEAD~1..HEAD) and its description.
    let diff = work.read("runs/.github/pr-7/pr.diff");
    assert!(
        diff.contains("-runs-on: ubuntu-24.04\n+runs-on: ubuntu-24.04-arm"),
        "{diff}"
    );
    let meeting = std::fs::read_dir(work.join("runs/.github/pr-7"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let meeting = std::fs::read_to_string(meeting).unwrap();
    assert!(
        meeting.contains("Pull request #7: Move CI to arm64 runners")
            && meeting.contains("Builds must stay under 10 minutes."),
        "{meeting}"
    );
    assert!(meeting.contains("ci.yml"), "{meeting}");
    // The same without --dry-run is the real run: it needs the event's name and a token.
    Cli::new(std::process::Command::new(env!(
        "CARGO_BIN_EXE_agent-meeting"
    )))
    .current_dir(work.path())
    .args(["github", "--event", event, "--event-name", "issue_comment"])
    .args([
        "--repo",
        "o/r",
        "--api-url",
        &api.url,
        "--provider",
        "sample",
    ])
    .run()
    .exit(2)
    .stderr_has("GITHUB_TOKEN is not set");
    assert_eq!(api.count(), 0);
}

/// A dry run refuses, in one line naming the program and what is missing, where it lacks what
/// it needs: a git checkout, the event, a --base that names a commit. On a first commit the
/// diff is the whole tree.
#[test]
fn a_dry_run_says_what_it_lacks_and_reads_a_first_commit_whole() {
    let api = no_api();
    let event = crate::harness::root().join("share/examples/github-event.json");
    let event = event.to_str().unwrap();
    let plain = Workdir::new();
    dry_run(&plain, "github", &api, &["--event", event])
        .exit(2)
        .one_stderr_line()
        .stderr_starts_with(
            "agent-meeting github: --dry-run reads the request's diff from the git checkout it runs in: ",
        )
        .stderr_has("not a git repository");
    let work = checkout(1);
    dry_run(&work, "github", &api, &[])
        .exit(2)
        .one_stderr_line()
        .stderr_starts_with("agent-meeting github: ")
        .stderr_has("--event <FILE>");
    dry_run(
        &work,
        "github",
        &api,
        &["--event", event, "--base", "no-such"],
    )
    .exit(2)
    .one_stderr_line()
    .stderr_starts_with("agent-meeting github: --base no-such: not a commit");
    dry_run(&work, "gitlab", &api, &["--title", "t"])
        .exit(2)
        .one_stderr_line()
        .stderr_starts_with("agent-meeting gitlab: --dry-run needs the merge request's iid");
    dry_run(
        &work,
        "github",
        &api,
        &["--event", event, "--provider", "sample"],
    )
    .success()
    .stdout_has("**Move CI to arm64 runners?**");
    let diff = work.read("runs/.github/pr-7/pr.diff");
    assert!(diff.contains("+runs-on: ubuntu-24.04\n"), "{diff}");
    assert_eq!(api.count(), 0);
}

/// The example pipeline variables of share/ are the ones `agent-meeting gitlab` reads (each
/// names a flag's variable in its --help), and a dry run on them prints the note, asking the
/// API nothing, with no token.
#[test]
fn a_gitlab_dry_run_on_the_shared_pipeline_variables_prints_the_note() {
    let text =
        std::fs::read_to_string(crate::harness::root().join("share/examples/gitlab-pipeline.env"))
            .unwrap();
    let vars: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("{l}"));
            (k, v.trim_matches('\''))
        })
        .collect();
    let help = Cli::new(std::process::Command::new(env!(
        "CARGO_BIN_EXE_agent-meeting"
    )))
    .args(["gitlab", "--help"])
    .run()
    .stdout()
    .split_whitespace()
    .collect::<Vec<_>>()
    .join(" ");
    for (k, _) in &vars {
        assert!(
            help.contains(&format!("[env: {k}=")),
            "{k} is read by no flag:\n{help}"
        );
    }
    let work = checkout(2);
    let api = no_api();
    let mut c = Cli::new(std::process::Command::new(env!(
        "CARGO_BIN_EXE_agent-meeting"
    )));
    c.current_dir(work.path())
        .args(["gitlab", "--dry-run", "--provider", "sample"]);
    for (k, v) in &vars {
        c.env(k, v);
    }
    c.env("CI_API_V4_URL", format!("{}/api/v4", api.url));
    c.run()
        .success()
        .stdout_has("<!-- agent-meeting:pr-5 -->\n### agent-meeting: decided")
        .stdout_has("**Move CI to arm64 runners?**")
        .stderr_has("agent-meeting gitlab: decided (dry run");
    assert_eq!(api.count(), 0, "a dry run asked the API");
    let meeting = std::fs::read_dir(work.join("runs/.github/pr-5"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let meeting = std::fs::read_to_string(meeting).unwrap();
    assert!(
        meeting.contains("Builds must stay under 10 minutes."),
        "{meeting}"
    );
}

/// The repository file's `max_cost_per_day`: once the meetings started today hold the day's
/// cap (here one that waits for a person, which keeps its whole share), a `/decide` starts no
/// meeting, and the comment says the day's budget is spent — not a failure of the workflow.
#[test]
fn a_spent_daily_cap_is_said_in_the_comment() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    crate::fixtures::seat_ana(&work);
    let now = crate::fixtures::NOW;
    work.cli("meeting")
        .env("AGENT_MEETING_NOW", now)
        .args([
            "--provider",
            "sample",
            "-a",
            "ana",
            "--max-cost-per-day",
            "1",
            "-q",
        ])
        .arg("Earlier today?")
        .stdin("")
        .run()
        .exit(4);
    work.write(".github/agent-meeting.yaml", "max_cost_per_day: 1\n");
    let gh = FakeGithub::start("o/r");
    comment_event(&work, "/decide Move CI to arm64 runners?");
    let env = [
        ("AGENT_MEETING_PROVIDER", "sample"),
        ("AGENT_MEETING_NOW", now),
    ];
    github(&work, &gh, "issue_comment", &env).success();
    let ours = gh.ours();
    assert_eq!(ours.len(), 1, "{ours:?}");
    let body = ours[0]["body"].as_str().unwrap();
    assert!(
        body.contains("### agent-meeting: not started: the day's budget is spent"),
        "{body}"
    );
    assert!(body.contains("spending cap is spent"), "{body}");
}

/// The repository file's `on_waiting` runs when the meeting waits for a person, where the
/// checkout is the base branch's (an `issue_comment`), with waiting.json on its stdin.
#[test]
fn the_repository_files_on_waiting_runs_when_the_meeting_waits() {
    let work = Workdir::new();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    crate::fixtures::seat_ana(&work);
    work.write(
        ".github/agent-meeting.yaml",
        "agents: [ana]\non_waiting: cat > pinged.json\n",
    );
    let gh = FakeGithub::start("o/r");
    comment_event(&work, "/decide Page at night?");
    let env = [("AGENT_MEETING_PROVIDER", "sample")];
    github(&work, &gh, "issue_comment", &env).success();
    let pinged: Value = serde_json::from_str(&work.read("pinged.json")).unwrap();
    assert_eq!(pinged["agent"], "ana");
}
