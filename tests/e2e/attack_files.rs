//! A task's attacks on the files tc-profile (as root) writes and removes, each made as an
//! unprivileged user (a uid of the test's own, through setpriv): a symbolic link to a
//! root-only file planted at the temporary name of every writer's output, a parent of a
//! profile directory the daemon created swapped for a link, and the modes that keep a
//! task's data from other users. Skipped, with a note, when not run as root.

use crate::daemon::{ask, Daemon};
use crate::util::{assert_processed_group, assert_processed_profile, read_json, Sandbox};
use crate::util::{Recording, MOZILLA_STREAM};
use std::fs;
use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The task's user, and another one.
const TASK_UID: u32 = 64_301;
const OTHER_UID: u32 = 64_302;
/// What the root-only file holds, before and after every attack.
const SECRET: &[u8] = b"root only: never to be written by tc-profile\n";

/// A sandbox whose `artifacts/` is the task's, beside a root-only `secret`.
struct Scene {
    sandbox: Sandbox,
    secret: PathBuf,
}

impl Scene {
    /// None, with a note, when not root: only root can act as another user.
    fn new(test: &str) -> Option<Scene> {
        // SAFETY: geteuid only reads the process's credentials.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("{test}: skipped: acting as another user needs root (CI runs as root)");
            return None;
        }
        let sandbox = Sandbox::new();
        set_mode(sandbox.dir(), 0o755);
        let artifacts = sandbox.path("artifacts");
        fs::create_dir(&artifacts).unwrap();
        chown(&artifacts, Some(TASK_UID), Some(TASK_UID)).unwrap();
        let secret = sandbox.path("secret");
        fs::write(&secret, SECRET).unwrap();
        set_mode(&secret, 0o600);
        Some(Scene { sandbox, secret })
    }

    /// Runs `script` in the sandbox as `uid`.
    fn as_user(&self, uid: u32, script: &str) -> Output {
        let id = uid.to_string();
        Command::new("setpriv")
            .args(["--reuid", &id, "--regid", &id, "--clear-groups", "sh", "-c"])
            .arg(script)
            .current_dir(self.sandbox.dir())
            .output()
            .expect("setpriv (util-linux) runs a command as another user")
    }

    /// The task links `artifacts/NAME` to the root-only file.
    fn plant_link(&self, name: &str) {
        let planted = self.as_user(TASK_UID, &format!("ln -s ../secret artifacts/{name}"));
        assert!(planted.status.success(), "{planted:?}");
    }

    /// The root-only file is as it was, and the planted link gone (removed, not followed).
    fn assert_not_followed(&self, planted: &str) {
        assert_eq!(fs::read(&self.secret).unwrap(), SECRET);
        assert_eq!(mode(&self.secret), 0o600);
        let link = self.sandbox.path("artifacts").join(planted);
        assert!(fs::symlink_metadata(&link).is_err(), "{planted} left");
    }
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

#[test]
fn a_link_at_the_temporary_name_is_not_followed_by_run_record_finalize_or_merge() {
    let Some(scene) = Scene::new("attack_files::run_record_finalize_merge") else {
        return;
    };
    let sandbox = &scene.sandbox;
    scene.plant_link(".run.json.tmp");
    sandbox.run_ok(&["run", "-o", "artifacts/run.json", "--", "true"]);
    scene.assert_not_followed(".run.json.tmp");
    assert_processed_profile(&read_json(&sandbox.path("artifacts/run.json")));
    assert_eq!(mode(&sandbox.path("artifacts/run.json")), 0o644);

    scene.plant_link(".record.json.tmp");
    let recording = Recording::start(sandbox, &["-o", "artifacts/record.json"]);
    recording.stop();
    scene.assert_not_followed(".record.json.tmp");
    assert_processed_profile(&read_json(&sandbox.path("artifacts/record.json")));

    fs::copy(MOZILLA_STREAM, sandbox.path("moz.jsonl")).unwrap();
    scene.plant_link(".moz.json.tmp");
    sandbox.run_ok(&["finalize", "moz.jsonl", "-o", "artifacts/moz.json"]);
    scene.assert_not_followed(".moz.json.tmp");
    assert_processed_profile(&read_json(&sandbox.path("artifacts/moz.json")));

    scene.plant_link(".merged.json.tmp");
    let merge = [
        "merge",
        "artifacts/run.json",
        "artifacts/moz.json",
        "-o",
        "artifacts/merged.json",
    ];
    sandbox.run_ok(&merge);
    scene.assert_not_followed(".merged.json.tmp");
    assert_processed_group(&read_json(&sandbox.path("artifacts/merged.json")), 2);
}

#[test]
fn the_daemon_follows_no_link_planted_in_an_output_or_a_profile_directory_s_parent() {
    let Some(scene) = Scene::new("attack_files::daemon") else {
        return;
    };
    let sandbox = &scene.sandbox;
    let daemon = Daemon::start(sandbox, &[]);
    let user = TASK_UID.to_string();
    ask(sandbox, &["task", "start", "t1", "--user", &user]);
    scene.plant_link(".task.json.tmp");
    ask(sandbox, &["task", "end", "t1", "-o", "artifacts/task.json"]);
    scene.assert_not_followed(".task.json.tmp");
    assert_processed_profile(&read_json(&sandbox.path("artifacts/task.json")));

    scene.plant_link(".worker.json.tmp");
    ask(sandbox, &["worker-profile", "-o", "artifacts/worker.json"]);
    scene.assert_not_followed(".worker.json.tmp");
    assert_processed_profile(&read_json(&sandbox.path("artifacts/worker.json")));

    // The daemon creates artifacts/work/t2; before the end, the task swaps `work` for a
    // link to a tree of root's with a directory of the same name.
    let victim = sandbox.path("victim/t2");
    fs::create_dir_all(&victim).unwrap();
    fs::write(victim.join("precious"), "kept").unwrap();
    let dir = ask(
        sandbox,
        &[
            "task",
            "start",
            "t2",
            "--profile-dir",
            "artifacts/work/t2",
            "--user",
            &user,
        ],
    );
    assert_eq!(dir, sandbox.path("artifacts/work/t2").to_str().unwrap());
    let swapped = scene.as_user(
        TASK_UID,
        "mv artifacts/work artifacts/moved && ln -s ../victim artifacts/work",
    );
    assert!(swapped.status.success(), "{swapped:?}");
    ask(sandbox, &["task", "end", "t2", "-o", "t2.json"]);
    assert_eq!(fs::read_to_string(victim.join("precious")).unwrap(), "kept");
    assert!(
        sandbox.path("artifacts/moved/t2").is_dir(),
        "left, not removed"
    );
    assert_processed_profile(&read_json(&sandbox.path("t2.json")));
    let stderr_path = daemon.stderr.clone();
    daemon.stop();
    let stderr = fs::read_to_string(stderr_path).unwrap();
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("is left")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("symbolic link"), "{stderr}");
}

#[test]
fn the_daemon_s_files_are_its_own_and_a_task_s_directory_its_user_s_alone() {
    let Some(scene) = Scene::new("attack_files::modes") else {
        return;
    };
    let sandbox = &scene.sandbox;
    let daemon = Daemon::start(sandbox, &[]);
    let user = format!("{TASK_UID}:{TASK_UID}");
    let dir = PathBuf::from(ask(sandbox, &["task", "start", "t1", "--user", &user]));
    let metadata = fs::metadata(&dir).unwrap();
    assert_eq!((metadata.uid(), metadata.gid()), (TASK_UID, TASK_UID));
    assert_eq!(mode(&dir), 0o700);

    let script = format!(
        "TASKCLUSTER_PROFILE_DIR={} {} mark 'as the task'",
        dir.display(),
        crate::util::BIN
    );
    let marked = scene.as_user(TASK_UID, &script);
    assert!(marked.status.success(), "{marked:?}");
    let listed = scene.as_user(OTHER_UID, &format!("ls {}", dir.display()));
    assert!(
        !listed.status.success(),
        "another user lists the task's directory"
    );
    let state = sandbox.path("state");
    let read = scene.as_user(OTHER_UID, "cat state/state.json");
    assert!(!read.status.success(), "another user reads the state");

    // Passable, for the task to reach its directory; nothing in it listed or read.
    assert_eq!(mode(&state), 0o711);
    assert_eq!(mode(&state.join("profiles")), 0o711);
    for private in ["tasks", "segments", "timed-out"] {
        assert_eq!(mode(&state.join(private)), 0o700, "{private}");
    }
    let mut files = vec![state.join("state.json"), state.join("lock")];
    for logs in ["tasks", "segments"] {
        files.extend(
            fs::read_dir(state.join(logs))
                .unwrap()
                .map(|e| e.unwrap().path()),
        );
    }
    assert!(files.len() >= 4, "{files:?}");
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    ask(sandbox, &["task", "end", "t1", "-o", "t1.json"]);
    assert_eq!(mode(&state.join("history.jsonl")), 0o600);
    let profile = read_json(&sandbox.path("t1.json"));
    assert_processed_profile(&profile);
    let markers = crate::util::profile_markers(&profile);
    assert_eq!(crate::util::count_named(&markers, "as the task"), 1);
    assert!(!dir.exists(), "the created directory is removed at the end");
    daemon.stop();
}
