//! The README's set-up section: what its commands do in a fresh clone.

use crate::util::*;
use std::process::Command;

/// The README's first command, run in a fresh clone, leaves nothing for `git status` to
/// show: what it writes (and what a killed or compressed recording leaves under the same
/// names) is ignored at the clone's root only, not in a subdirectory's fixtures.
#[test]
fn the_readmes_first_command_leaves_the_clone_clean() {
    let setup = readme_example("## Set-up on a fresh machine", "sh");
    let first = setup.lines().next().unwrap();
    let command = first.split(" #").next().unwrap().trim();
    let args = command
        .strip_prefix("cargo run --release -- ")
        .unwrap_or_else(|| panic!("the first command runs tc-profile with cargo: {command}"));
    let clone = Sandbox::new();
    std::fs::write(clone.path(".gitignore"), include_str!("../../.gitignore")).unwrap();
    git(&clone, &["init", "--quiet"]);

    // The arguments as the README's shell would split them, given to the binary cargo runs.
    let output = Command::new("sh")
        .args(["-c", &format!("exec \"$0\" {args}"), BIN])
        .current_dir(clone.dir())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&[command], &output));
    assert!(clone.path("profile_resource-usage.json").is_file());
    let left_by_others = [
        "profile_resource-usage.json.gz",
        "profile_resource-usage.json.zst",
        "profile_resource-usage.jsonl",
        "profile_resource-usage.jsonl.gz",
        "profile_resource-usage.markers/1.jsonl",
        ".profile_resource-usage.json.tmp",
        "fixtures/profile_resource-usage.json",
    ];
    for name in left_by_others {
        let path = clone.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
    assert_eq!(
        git(&clone, &["ls-files", "--others", "--exclude-standard"]),
        ".gitignore\nfixtures/profile_resource-usage.json\n"
    );
}

/// `git ARGS` in the sandbox, with the repository's ignore rules only (no user's or
/// system's): its stdout.
fn git(sandbox: &Sandbox, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "core.excludesFile=/dev/null"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(sandbox.dir())
        .output()
        .expect("git is needed to check what a clone ignores");
    assert!(output.status.success(), "{}", describe(args, &output));
    String::from_utf8(output.stdout).unwrap()
}

/// The set-up section says what CI runs: every script `.ci/run` runs (with its first
/// option, as `--check`) and every cargo command, so that a new user knows what the
/// test command needs and what else is checked.
#[test]
fn the_readme_names_every_step_of_ci() {
    let readme = include_str!("../../README.md");
    let setup = &readme[readme.find("## Set-up on a fresh machine").unwrap()..];
    let setup = &setup[..setup[1..].find("\n## ").map_or(setup.len(), |end| end + 1)];
    let missing: Vec<String> = ci_steps()
        .into_iter()
        .filter(|step| !setup.contains(step.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the README's set-up does not name {missing:?}"
    );
}

/// What `.ci/run` runs: `scripts/NAME` (and its option when one follows, as `--short`),
/// `cargo COMMAND`, and python3, which it installs.
fn ci_steps() -> Vec<String> {
    let ci = include_str!("../../.ci/run");
    let mut steps = vec!["python3".to_owned()];
    let code = ci
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'));
    for line in code {
        let words: Vec<&str> = line.split_whitespace().collect();
        for (word, next) in words.iter().zip(words.iter().skip(1).chain([&""])) {
            if *word == "cargo" {
                steps.push(format!("cargo {next}"));
            } else if let Some(at) = word.find("scripts/") {
                let name = word[at..]
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '/' || c == '-'))
                    .next()
                    .unwrap();
                if next.starts_with("--") {
                    steps.push(format!("{name} {next}"));
                } else {
                    steps.push(name.to_owned());
                }
            }
        }
    }
    steps
}

/// `cargo install --path .` (and `cargo build --release`) gives a binary without debug
/// information, to be small on a worker (build.rs).
#[cfg(target_os = "linux")]
#[test]
fn a_release_binary_has_no_debug_information() {
    if cfg!(debug_assertions) {
        eprintln!("skipped: a debug build keeps its debug information");
        return;
    }
    let output = Command::new("readelf")
        .args(["--section-headers", "--wide", BIN])
        .output()
        .expect("readelf (binutils) lists the binary's sections");
    let sections = String::from_utf8(output.stdout).unwrap();
    let debug: Vec<&str> = sections
        .split_whitespace()
        .filter(|word| word.starts_with(".debug_"))
        // Loaded with the program, not debug information: where gdb finds Rust's printers.
        .filter(|word| *word != ".debug_gdb_scripts")
        .collect();
    assert!(debug.is_empty(), "{BIN} keeps {debug:?}");
}
