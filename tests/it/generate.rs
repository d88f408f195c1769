//! `--generate KIND` on every program (src/cli/mod.rs): a man page or a completion script on
//! stdout, exit 0; a bad kind is a usage error. Also `--version` and `--help` naming it.

use std::process::Command;

use crate::harness::{bin, cli, every_case, every_case_par, skip_without, Tool, Workdir, PROGRAMS};

const KINDS: [&str; 5] = [
    "man",
    "complete-bash",
    "complete-zsh",
    "complete-fish",
    "complete-powershell",
];

/// What a generated document of `kind` for `program` must contain.
fn marker(program: &str, kind: &str) -> String {
    match kind {
        "man" => format!(".TH {program} 1"),
        "complete-bash" => format!(" {program}\n"),
        "complete-zsh" => format!("#compdef {program}"),
        "complete-fish" => format!("complete -c {program} "),
        "complete-powershell" => format!("-CommandName '{program}'"),
        other => panic!("no kind {other}"),
    }
}

#[test]
fn every_program_generates_every_kind() {
    let cases: Vec<(&str, &str)> = PROGRAMS
        .iter()
        .flat_map(|p| KINDS.iter().map(move |k| (*p, *k)))
        .collect();
    let name = |(program, kind): &(&str, &str)| format!("{program} --generate {kind}");
    every_case_par(&cases, 4, name, |(program, kind)| {
        let run = cli(program).args(["--generate", kind]).run();
        run.success()
            .stderr_is("")
            .stdout_has(&marker(program, kind))
            // the flag documents itself wherever the program's flags are listed
            .stdout_has("generate");
    });
}

#[test]
fn generate_wins_over_other_flags_and_the_environment() {
    // meeting needs --meeting-file or --topic to run; --generate does not.
    cli("meeting")
        .args(["--generate=man"])
        .run()
        .success()
        .stdout_has(".TH meeting 1");
    cli("pm-step")
        .args([
            "--pretty",
            "--generate",
            "complete-fish",
            "--max-attempts",
            "0",
        ])
        .env("AGENT_MEETING_PROVIDER", "no-such-provider")
        .run()
        .success()
        .stdout_has("complete -c pm-step ");
    // after `--` it is not a flag any more: the usual usage error
    cli("next-stage")
        .args(["--", "--generate", "man"])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_starts_with("next-stage: ");
}

#[test]
fn a_bad_kind_is_a_usage_error() {
    every_case(
        ["meeting", "collect-context"],
        |p| p.to_string(),
        |program| {
            cli(program)
                .args(["--generate", "complete-tcsh"])
                .run()
                .exit(2)
                .stdout_is("")
                .one_stderr_line()
                .stderr_starts_with(&format!(
                    "{program}: invalid value 'complete-tcsh' for '--generate <KIND>'"
                ))
                .stderr_has("complete-powershell");
            cli(program)
                .arg("--generate")
                .run()
                .exit(2)
                .one_stderr_line()
                .stderr_starts_with(&format!("{program}: a value is required for '--generate"));
        },
    );
}

#[test]
fn version_and_help_name_the_program() {
    let re = regex::Regex::new(r"^(\S+) \d+\.\d+\.\d+( \([0-9a-f]{4,}\))?\n$").unwrap();
    every_case_par(
        &PROGRAMS,
        4,
        |p| p.to_string(),
        |program| {
            let run = cli(program).arg("--version").run();
            run.success();
            let out = run.stdout();
            let caps = re
                .captures(&out)
                .unwrap_or_else(|| panic!("{program} --version: {out:?}"));
            assert_eq!(&caps[1], *program, "{program} --version: {out:?}");
            cli(program)
                .arg("--help")
                .run()
                .success()
                .stdout_has("--generate <KIND>")
                .stdout_has("complete-bash");
        },
    );
}

#[test]
fn the_bash_completion_loads() {
    if skip_without(Tool::Bash) {
        return;
    }
    every_case_par(
        &PROGRAMS,
        4,
        |p| p.to_string(),
        |program| {
            let script = format!(
                "source <('{}' --generate complete-bash) && complete -p {program}",
                bin(program).display()
            );
            let out = Command::new("bash")
                .args(["--norc", "--noprofile", "-c", &script])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.trim_end().ends_with(&format!(" {program}")),
                "{program}: bash could not load the completion: {}\n{stdout}",
                String::from_utf8_lossy(&out.stderr)
            );
        },
    );
}

#[test]
fn man_reads_the_generated_page() {
    if skip_without(Tool::Man) {
        return;
    }
    let dir = Workdir::new();
    every_case(
        ["meeting", "next-stage"],
        |p| p.to_string(),
        |program| {
            let page = cli(program).args(["--generate", "man"]).run().stdout();
            let path = dir.write(format!("{program}.1"), page);
            let out = Command::new("man")
                .arg("-l")
                .arg(&path)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .env("MANWIDTH", "80")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("NAME") && text.contains("--generate"),
                "man -l {program}.1: {}\n{text}",
                String::from_utf8_lossy(&out.stderr)
            );
        },
    );
}

#[test]
fn make_install_knows_every_program() {
    let makefile = std::fs::read_to_string(crate::harness::root().join("Makefile")).unwrap();
    let joined = makefile.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.starts_with("PROGRAMS ="))
        .expect("Makefile: PROGRAMS =");
    let listed: Vec<&str> = line["PROGRAMS =".len()..].split_whitespace().collect();
    assert_eq!(listed, PROGRAMS, "Makefile PROGRAMS");
}

/// The examples read in `man meeting` as in `meeting --help`, at 80 columns too: one command
/// line per line, the continuation indented under it, neither wrapped nor justified.
#[test]
fn man_keeps_the_examples_verbatim() {
    if skip_without(Tool::Man) {
        return;
    }
    let dir = Workdir::new();
    let page = cli("meeting").args(["--generate", "man"]).run().stdout();
    let path = dir.write("meeting.1", page);
    let out = Command::new("man")
        .arg("-l")
        .arg(&path)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let help = cli("meeting").arg("--help").run().stdout();
    let examples = help
        .split("Examples:\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    let indent = |l: &str| l.len() - l.trim_start().len();
    // How much deeper man indents the section: the same for every line, so the
    // continuation lines stay indented under their command.
    let shifts: Vec<usize> = examples
        .lines()
        .map(|want| {
            let got = lines
                .iter()
                .find(|l| l.trim() == want.trim())
                .unwrap_or_else(|| panic!("man meeting lacks the example line {want:?}:\n{text}"));
            indent(got) - indent(want)
        })
        .collect();
    assert!(
        shifts.windows(2).all(|w| w[0] == w[1]),
        "{shifts:?}\n{text}"
    );
}

/// The completions offer the providers after --provider, the built-in agents after --agents
/// and files after --meeting-file.
#[test]
fn completions_offer_providers_and_meeting_files() {
    let zsh = cli("meeting")
        .args(["--generate", "complete-zsh"])
        .run()
        .stdout();
    assert!(
        zsh.contains(":NAME:(openai anthropic azure ollama gemini replay sample)"),
        "{zsh}"
    );
    let file_arg = zsh
        .lines()
        .find(|l| l.contains("--meeting-file=["))
        .expect("zsh: --meeting-file");
    assert!(file_arg.contains(":_files"), "{file_arg}");
    assert!(
        zsh.contains(":NAMES:(arch biz data devils-advocate finance product security sre)"),
        "{zsh}"
    );
    let fish = cli("meeting")
        .args(["--generate", "complete-fish"])
        .run()
        .stdout();
    let provider = fish
        .lines()
        .find(|l| l.contains("-l provider"))
        .expect("fish: --provider");
    assert!(
        provider.contains("openai") && provider.contains("anthropic"),
        "{provider}"
    );
    let file = fish
        .lines()
        .find(|l| l.contains("-l meeting-file"))
        .expect("fish: --meeting-file");
    assert!(file.contains(" -F"), "{file}");
}

/// `make install` puts the shell loop beside the programs (`make -n`: the commands, none run).
#[test]
fn make_install_installs_the_shell_loop() {
    if skip_without(Tool::Make) {
        return;
    }
    let out = Command::new("make")
        .args(["-n", "install", "PREFIX=/opt/am", "DESTDIR=/tmp/stage"])
        .current_dir(crate::harness::root())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(
            "install -m 755 share/meeting.sh /tmp/stage/opt/am/share/agent-meeting/meeting.sh"
        ),
        "{text}"
    );
}

const MULTICALL: &str = env!("CARGO_BIN_EXE_agent-meeting");

/// `agent-meeting ARGS`.
fn multicall(args: &[&str]) -> crate::harness::Run {
    crate::harness::Cli::new(Command::new(MULTICALL))
        .args(args)
        .run()
}

/// The man pages of `agent-meeting` and its modes: `(args, the page's name, what it must name)`
/// (roff escapes each `-`).
const PAGES: [(&[&str], &str, &[&str]); 4] = [
    (
        &["--generate", "man"],
        "agent-meeting",
        &[
            "\\-\\-install\\-links",
            // each program's own page, each mode's agent-meeting-MODE, a line each
            "\n.TP\npm\\-step(1)\n",
            "\n.TP\nmeeting(1)\n",
            "\n.TP\nagent\\-meeting\\-mcp(1)\n",
            "\n.TP\nagent\\-meeting\\-github(1)\n",
            "\n.TP\nagent\\-meeting\\-gitlab(1)\n",
        ],
    ),
    (
        &["mcp", "--generate", "man"],
        "agent-meeting-mcp",
        &["\\-\\-directory", "\\-\\-run\\-dir", "\\-\\-context\\-root"],
    ),
    (
        &["github", "--generate", "man"],
        "agent-meeting-github",
        &[
            "\\-\\-event",
            "\\-\\-dry\\-run",
            "\\-\\-base",
            "GITHUB_EVENT_PATH",
        ],
    ),
    (
        &["gitlab", "--generate", "man"],
        "agent-meeting-gitlab",
        &["\\-\\-merge\\-request", "\\-\\-dry\\-run", "CI_API_V4_URL"],
    ),
];

/// `agent-meeting` and each mode print a man page named as it is installed (agent-meeting.1,
/// agent-meeting-github.1: a mode's page named as git names its commands'), with its NAME
/// section and its flags; agent-meeting's lists each program's and mode's page. man reads
/// each.
#[test]
fn agent_meeting_and_its_modes_print_their_man_pages() {
    let dir = Workdir::new();
    for (args, name, names) in PAGES {
        let run = multicall(args);
        run.success().stderr_is("");
        let page = run.stdout();
        let roff_name = name.replace('-', "\\-");
        assert!(
            page.contains(&format!(".TH {name} 1 ")),
            "{args:?}:\n{page}"
        );
        assert!(
            page.contains(&format!(".SH NAME\n{roff_name} \\- ")),
            "{args:?}: NAME\n{page}"
        );
        for flag in names {
            assert!(page.contains(flag), "{args:?} lacks {flag}:\n{page}");
        }
        if !skip_without(Tool::Man) {
            let path = dir.write(format!("{name}.1"), &page);
            let out = Command::new("man")
                .arg("-l")
                .arg(&path)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .env("MANWIDTH", "80")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("NAME") && text.contains(name),
                "man -l {name}.1: {}\n{text}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// `agent-meeting`'s completions complete its first word (the programs and modes) and then the
/// flags of the one named, in every shell; a mode's completions are agent-meeting's (the shell
/// completes the word `agent-meeting`). bash, run: `gi` completes to the two forge modes,
/// `github --dr` to `--dry-run`, `meeting resume --ans` to the resume's flags.
#[test]
fn agent_meetings_completions_complete_programs_modes_and_their_flags() {
    let script = |kind: &str| {
        let run = multicall(&["--generate", kind]);
        run.success().stderr_is("");
        run.stdout()
    };
    for kind in KINDS.iter().filter(|k| k.starts_with("complete-")) {
        let text = script(kind);
        assert!(
            text.contains(&marker("agent-meeting", kind)),
            "{kind}:\n{text}"
        );
        for name in ["pm-step", "meeting", "mcp", "github", "gitlab", "--dry-run"] {
            assert!(text.contains(name), "{kind} lacks {name}");
        }
        for mode in ["mcp", "github", "gitlab"] {
            multicall(&[mode, "--generate", kind])
                .success()
                .stdout_is(&text);
        }
    }
    if skip_without(Tool::Bash) {
        return;
    }
    let complete = |words: &[&str]| {
        let words: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let script = format!(
            "source <('{MULTICALL}' --generate complete-bash) && complete -p agent-meeting >/dev/null \
             && COMP_WORDS=({words}) && COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)) \
             && _agent__meeting agent-meeting \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\" \
             && echo \"${{COMPREPLY[*]}}\"",
            words = words.join(" ")
        );
        let out = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "bash: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(complete(&["agent-meeting", "gi"]), "github gitlab");
    assert_eq!(complete(&["agent-meeting", "pm-s"]), "pm-step");
    assert_eq!(complete(&["agent-meeting", "github", "--dr"]), "--dry-run");
    assert_eq!(
        complete(&["agent-meeting", "meeting", "resume", "--ans"]),
        "--answer --answer-for"
    );
}

/// `make install` installs agent-meeting's man pages (its own, one per mode) and completions
/// beside the programs', and `make uninstall` removes them: run for real into a DESTDIR, on
/// the debug build (`-o build`: nothing is built).
#[test]
fn make_install_installs_agent_meetings_man_pages_and_completions() {
    if skip_without(Tool::Make) {
        return;
    }
    let work = Workdir::new();
    let release = work.join("release");
    std::fs::create_dir(&release).unwrap();
    std::os::unix::fs::symlink(MULTICALL, release.join("agent-meeting")).unwrap();
    for p in PROGRAMS {
        std::os::unix::fs::symlink("agent-meeting", release.join(p)).unwrap();
    }
    let make = |target: &str| {
        let out = Command::new("make")
            .args(["-s", "-o", "build", target, "PREFIX=/p"])
            .arg(format!("DESTDIR={}", work.join("stage").display()))
            .arg(format!("RELEASE_DIR={}", release.display()))
            .current_dir(crate::harness::root())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "make {target}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let share = work.join("stage/p/share");
    let installed = [
        ("man/man1/agent-meeting.1", ".TH agent-meeting 1 "),
        ("man/man1/agent-meeting-mcp.1", ".TH agent-meeting-mcp 1 "),
        (
            "man/man1/agent-meeting-github.1",
            ".TH agent-meeting-github 1 ",
        ),
        (
            "man/man1/agent-meeting-gitlab.1",
            ".TH agent-meeting-gitlab 1 ",
        ),
        ("man/man1/meeting.1", ".TH meeting 1 "),
        (
            "bash-completion/completions/agent-meeting",
            "_agent__meeting",
        ),
        (
            "zsh/site-functions/_agent-meeting",
            "#compdef agent-meeting",
        ),
        (
            "fish/vendor_completions.d/agent-meeting.fish",
            "complete -c agent-meeting ",
        ),
    ];
    make("install");
    for (file, has) in installed {
        let path = share.join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("make install: {}: {e}", path.display()));
        assert!(text.contains(has), "{file} lacks {has:?}");
    }
    make("uninstall");
    for (file, _) in installed {
        assert!(!share.join(file).exists(), "make uninstall left {file}");
    }
    assert!(!work.join("stage/p/bin/agent-meeting").exists());
}
