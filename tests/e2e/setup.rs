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
