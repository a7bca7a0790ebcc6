// Package tcprofile drives the tc-profile worker daemon from a worker such as
// generic-worker: it opens a task's profile before the task runs, gives the daemon the
// task's process, and has the profile written when the task is done.
//
// It speaks the daemon's Unix-socket protocol (tc-profile's SPEC.md, "Daemon protocol"):
// one JSON request line, one JSON reply line, a connection each. It needs the standard
// library only.
//
// # The worker's flow
//
// Run `tc-profile daemon` for the worker's whole life, under systemd with the unit in
// tc-profile's README (Type=notify: a worker unit ordered After= it never races its
// socket). The socket is its owner's only (mode 0600): the worker runs as that user. Then,
// for each task (Example shows it in code):
//
//  1. Once the task is claimed, StartTask, with StartOptions.Since at the claim, so that
//     the worker's own steps (downloads, a container's start) are in the profile.
//  2. Launch the task with TaskStarted.Env added to its environment (its profile
//     directory, statsd and InfluxDB endpoints); a worker that mounts the profile
//     directory into a container hands it TaskStarted.ProfileDir's mount point instead.
//  3. Attach the task's process (or AttachCgroup its cgroup) as soon as it runs; what
//     it wrote to its profile directory before is kept whole.
//  4. When it is done, EndTask with its exit status and an absolute output path; the
//     profile is there, written atomically, about a second later.
//  5. Upload that file as the task's profile artifact (public/profile_resource-usage.json
//     opens in the Firefox Profiler).
//
// TaskStarted.LiveProfileURL and LiveLogURL (a daemon run with --http) can be linked from
// the task's page while it runs.
//
// # Errors and time limits
//
// A refusal is an *Error with the daemon's Code and one line of text; test it with
// errors.Is(err, ErrNotOpen) and the other sentinels. ErrBusy asks to try again in a
// moment. ErrUnreachable is returned when no daemon answers: a worker runs its task
// without a profile rather than failing it. Every call honours its context's deadline
// and cancellation; EndTask takes about a second, more for a long task, so give it
// tens of seconds.
package tcprofile
