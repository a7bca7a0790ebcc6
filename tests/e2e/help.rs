use crate::synthetic::{complete_task, known_task};
use crate::util::*;
use std::process::Command;

/// The commands `tc-profile --help` lists, but `help`.
fn commands() -> Vec<String> {
    let sandbox = Sandbox::new();
    let help = String::from_utf8(sandbox.run_ok(&["--help"]).stdout).unwrap();
    let listed: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != "help")
        .collect();
    assert!(listed.len() >= 6, "commands in --help: {listed:?}");
    listed
}

/// The lines under "Example:" or "Examples:".
fn examples(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|l| !matches!(l.trim_end(), "Example:" | "Examples:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect()
}

#[test]
fn every_command_help_shows_an_example_of_itself() {
    let sandbox = Sandbox::new();
    let main = String::from_utf8(sandbox.run_ok(&["--help"]).stdout).unwrap();
    assert!(!examples(&main).is_empty(), "tc-profile --help:\n{main}");
    for command in commands() {
        let help = String::from_utf8(sandbox.run_ok(&[&command, "--help"]).stdout).unwrap();
        let prefix = format!("tc-profile {command}");
        assert!(
            examples(&help).iter().any(|e| e.starts_with(&prefix)),
            "tc-profile {command} --help has no example of {prefix}:\n{help}"
        );
    }
}

#[test]
fn a_wrong_argument_is_one_line_naming_it_and_where_to_read_more() {
    let sandbox = Sandbox::new();
    let cases: [(&[&str], &str, &str); 6] = [
        (
            &["run", "--intervall", "1", "--", "true"],
            "'--intervall'",
            "tc-profile run --help",
        ),
        (
            &["run", "--interval", "abc", "--", "true"],
            "'abc' is not a number of seconds",
            "tc-profile run --help",
        ),
        (&["summary"], "<PROFILE|LOG>", "tc-profile summary --help"),
        (
            &["summary", "--format", "yaml", "x.json"],
            "possible values: text, json",
            "tc-profile summary --help",
        ),
        (&["bogus"], "'bogus'", "tc-profile --help"),
        (
            &["completions", "tcsh"],
            "'tcsh'",
            "tc-profile completions --help",
        ),
    ];
    for (args, names, pointer) in cases {
        let output = sandbox.run(args);
        assert_eq!(output.status.code(), Some(2), "{}", describe(args, &output));
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.starts_with("tc-profile: error: "), "{stderr}");
        assert!(stderr.contains(names), "names {names}: {stderr}");
        assert!(
            stderr.trim_end().ends_with(&format!("see '{pointer}'")),
            "{stderr}"
        );
    }
}

#[test]
fn version_is_the_package_version() {
    let output = Sandbox::new().run_ok(&["--version"]);
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("tc-profile {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn completions_know_every_command() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = String::from_utf8(sandbox.run_ok(&["completions", shell]).stdout).unwrap();
        for command in commands() {
            assert!(
                script.contains(&command),
                "{shell} completions lack {command}"
            );
        }
    }
}

#[test]
fn styles_show_on_a_terminal_unless_no_color() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task()).unwrap();
    let summary = |no_color: bool| {
        let mut command = sandbox.command(&["summary", "task.jsonl"]);
        command.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        if no_color {
            command.env("NO_COLOR", "1");
        }
        let (status, terminal) = run_on_terminal(command);
        assert!(status.success(), "{terminal}");
        terminal
    };
    let styled = summary(false);
    assert!(
        styled.contains("\x1b[1mDuration"),
        "bold labels: {styled:?}"
    );
    let plain = summary(true);
    assert!(plain.contains("Duration   1m 12s"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "NO_COLOR: no escapes: {plain:?}");
}

#[test]
fn progress_shows_for_a_large_log_on_a_terminal_only() {
    let sandbox = Sandbox::new();
    // About 40 MiB: past the size from which a bar is drawn.
    let log = known_task(48_000).bytes();
    assert!(log.len() > 32 << 20, "{} bytes", log.len());
    std::fs::write(sandbox.path("a.jsonl"), &log).unwrap();
    std::fs::write(sandbox.path("b.jsonl"), &log).unwrap();

    let mut command = Command::new(BIN);
    command
        .args(["finalize", "a.jsonl"])
        .current_dir(sandbox.dir());
    let (status, terminal) = run_on_terminal(command);
    assert!(status.success(), "{terminal}");
    assert!(terminal.contains("reading a.jsonl"), "a bar: {terminal:?}");

    let output = sandbox.run_ok(&["finalize", "b.jsonl"]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.lines().count(),
        1,
        "nothing but the result when stderr is not a terminal: {stderr:?}"
    );
}
