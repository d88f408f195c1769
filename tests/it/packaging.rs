//! The release packages (packaging/, dist-workspace.toml, server.json, the workflows; issue #54):
//! what can be checked without building them. `make test-dist` builds and installs them all.
//!
//! - every package names the same server and version: Cargo.toml's;
//! - the release archives, the wheel and the npm packages carry one executable, agent-meeting:
//!   dist and maturin build without the `programs` feature that the per-program [[bin]]s
//!   require (plain `cargo build` and `cargo test` still build them: the tests run them);
//! - the release workflows are valid for GitHub's schema;
//! - the Action's download step (packaging/action/download.sh) installs a release archive whose
//!   checksum matches, refuses one whose checksum does not, and leaves the build to action.yml
//!   where the ref has no release.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::harness::{root, skip_without, Tool, Workdir};

fn json(rel: &str) -> Value {
    let text = std::fs::read_to_string(root().join(rel)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn text(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

#[test]
fn every_package_names_the_same_server_and_version() {
    let server = json("server.json");
    let name = server["name"].as_str().unwrap();
    assert_eq!(server["version"], VERSION, "server.json");
    for p in server["packages"].as_array().unwrap() {
        assert_eq!(p["version"], VERSION, "server.json: {p}");
        assert_eq!(p["identifier"], "agent-meeting", "server.json: {p}");
        assert_eq!(p["packageArguments"][0]["value"], "mcp", "server.json: {p}");
    }

    // npm: the launcher's version, its platform packages' and the registry's proof of ownership.
    let npm = json("packaging/npm/agent-meeting/package.json");
    assert_eq!(npm["version"], VERSION, "package.json");
    assert_eq!(npm["mcpName"], name, "package.json mcpName");
    let platforms = npm["optionalDependencies"].as_object().unwrap();
    assert_eq!(platforms.len(), 5, "one per release archive");
    for (package, v) in platforms {
        assert_eq!(v, VERSION, "package.json: {package}");
    }

    // PyPI: the version is Cargo.toml's (dynamic), the README carries the registry's proof.
    let pyproject = text("packaging/pypi/pyproject.toml");
    assert!(
        pyproject.contains("dynamic = [\"version\"]"),
        "pyproject.toml"
    );
    assert!(
        text("packaging/pypi/README.md").contains(&format!("mcp-name: {name}")),
        "packaging/pypi/README.md must say mcp-name: {name}"
    );

    // The bundle.
    let bundle = json("packaging/mcpb/manifest.json");
    assert_eq!(bundle["version"], VERSION, "manifest.json");
    assert_eq!(bundle["server"]["mcp_config"]["args"][0], "mcp");
}

#[test]
fn the_release_packages_carry_one_executable() {
    let package = &crate::harness::cargo_package();
    assert_eq!(
        package["features"]["default"],
        serde_json::json!(["programs"])
    );
    for t in package["targets"].as_array().unwrap() {
        if t["kind"][0] != "bin" {
            continue;
        }
        let needs = &t["required-features"];
        match t["name"].as_str().unwrap() {
            "agent-meeting" => assert!(needs.is_null(), "agent-meeting needs no feature"),
            name => assert_eq!(needs, &serde_json::json!(["programs"]), "{name}"),
        }
    }
    let dist = text("dist-workspace.toml");
    for line in [
        "default-features = false",
        "binaries = { \"*\" = [\"agent-meeting\"] }",
    ] {
        assert!(dist.contains(line), "dist-workspace.toml must say {line}");
    }
    assert!(text("packaging/pypi/pyproject.toml").contains("no-default-features = true"));
}

#[test]
fn the_release_workflows_are_valid_for_githubs_schema() {
    if skip_without(Tool::CheckJsonschema) {
        return;
    }
    for file in ["release.yml", "build-packages.yml", "publish-packages.yml"] {
        let out = Command::new("check-jsonschema")
            .args(["--builtin-schema", "vendor.github-workflows"])
            .arg(root().join(".github/workflows").join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let action = text("action.yml");
    assert!(action.contains("packaging/action/download.sh"));
    assert!(action.contains("steps.download.outputs.downloaded != 'true'"));
}

/// A release folder as GitHub serves one (<base>/<tag>/<file>), with a fake executable in
/// dist's archive layout; `file://` stands for https:// (make test-dist uses HTTP).
fn release(work: &Workdir, target: &str, checksum_of: &str) {
    let name = format!("agent-meeting-{target}");
    work.write(
        format!("pack/{name}/agent-meeting"),
        "#!/bin/sh\necho agent-meeting 9.9.9\n",
    );
    work.write(format!("pack/{name}/LICENSE"), "MIT\n");
    let archive = work.join(format!("releases/v9.9.9/{name}.tar.xz"));
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    let tar = Command::new("tar")
        .arg("-cJf")
        .arg(&archive)
        .arg("-C")
        .arg(work.join("pack"))
        .arg(&name)
        .status()
        .unwrap();
    assert!(tar.success());
    let sum = Command::new("sha256sum")
        .arg(work.join(checksum_of))
        .output()
        .unwrap();
    let hash = String::from_utf8(sum.stdout).unwrap();
    let hash = hash.split(' ').next().unwrap();
    work.write(
        format!("releases/v9.9.9/{name}.tar.xz.sha256"),
        format!("{hash} *{name}.tar.xz\n"),
    );
}

fn download(work: &Workdir, reference: &str, dest: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(root().join("packaging/action/download.sh"))
        .arg(reference)
        .arg(dest)
        .env(
            "AGENT_MEETING_RELEASES",
            format!("file://{}", work.join("releases").display()),
        )
        .env("AGENT_MEETING_TARGET", "x86_64-unknown-linux-musl")
        .env_remove("GITHUB_OUTPUT")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_action_downloads_a_verified_release_archive_else_builds() {
    if skip_without(Tool::Bash) {
        return;
    }
    let target = "x86_64-unknown-linux-musl";
    let work = Workdir::new();
    release(
        &work,
        target,
        &format!("releases/v9.9.9/agent-meeting-{target}.tar.xz"),
    );

    let dest = work.join("bin");
    let out = download(&work, "v9.9.9", &dest);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "downloaded=true\n");
    let installed = Command::new(dest.join("agent-meeting")).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&installed.stdout),
        "agent-meeting 9.9.9\n"
    );

    // A branch or commit has no release: the Action builds from source.
    let out = download(&work, "main", &work.join("none"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "downloaded=false\n");
    assert!(!work.join("none/agent-meeting").exists());

    // A checksum that does not match fails the step, without a fallback.
    let tampered = Workdir::new();
    tampered.write("other", "not the archive");
    release(&tampered, target, "other");
    let out = download(&tampered, "v9.9.9", &tampered.join("bin"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SHA-256"));
    assert!(!tampered.join("bin/agent-meeting").exists());
}
