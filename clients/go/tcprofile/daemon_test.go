package tcprofile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskcluster/tc-profile/clients/go/tcprofile"
)

// A deadline for what should take a second or so, generous for a loaded machine.
const patience = 60 * time.Second

// daemon is a `tc-profile daemon` of the test's own, in a temporary state directory.
type daemon struct {
	bin    string
	dir    string
	client tcprofile.Client
}

// startDaemon runs $TC_PROFILE_BIN daemon with extra arguments until the test ends, then
// stops it with SIGTERM, which it must survive without a panic.
func startDaemon(t *testing.T, extra ...string) *daemon {
	t.Helper()
	bin := os.Getenv("TC_PROFILE_BIN")
	if bin == "" {
		t.Skip("TC_PROFILE_BIN is not set: scripts/go-client-test builds tc-profile and sets it")
	}
	// Not t.TempDir: a Unix socket's path must stay under 108 bytes, whatever the test's name.
	dir, err := os.MkdirTemp("", "tc-profile-go")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, ready := filepath.Join(dir, "daemon.sock"), filepath.Join(dir, "ready")
	args := append([]string{"daemon", "--state-dir", filepath.Join(dir, "state"), "--socket",
		socket, "--interval", "0.1", "--ready-file", ready}, extra...)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil || strings.Contains(stderr.String(), "panic") {
			t.Errorf("daemon: %v\n%s", err, stderr.String())
		}
	})
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("daemon exited before it was ready: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not ready after %v\n%s", patience, stderr.String())
		}
	}
	return &daemon{bin: bin, dir: dir, client: tcprofile.Client{Socket: socket}}
}

// profile is what the tests read of a profile the daemon wrote.
type profile struct {
	Meta struct {
		StartTime float64 `json:"startTime"`
		TcProfile struct {
			ExitStatus *int `json:"exitStatus"`
		} `json:"tcProfile"`
	} `json:"meta"`
	Threads []struct {
		StringArray []string `json:"stringArray"`
	} `json:"threads"`
}

func readProfile(t *testing.T, path string) profile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p profile
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s is not a profile: %v", path, err)
	}
	return p
}

func (p profile) hasString(s string) bool {
	for _, thread := range p.Threads {
		for _, text := range thread.StringArray {
			if text == s {
				return true
			}
		}
	}
	return false
}

// A task that writes a marker as its first instruction, then waits for its stdin to close
// and exits 3.
func launchTask(t *testing.T, env []string, marker string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	script := fmt.Sprintf(`printf '{"type":"marker","name":"%s","startTime":%%s,"endTime":null}\n' `+
		`"$(date +%%s%%3N)" >"$TASKCLUSTER_PROFILE_DIR/$$.jsonl"; read -r _; exit 3`, marker)
	task := exec.Command("sh", "-c", script)
	task.Env = append(os.Environ(), env...)
	stdin, err := task.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Process.Kill(); _ = task.Wait() })
	return task, stdin
}

func TestTheWorkersFlowGivesAProfileWithTheTasksMarkerExitStatusAndClaim(t *testing.T) {
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	const taskID = "go-client-flow"
	claimedAt := time.Now().Add(-2 * time.Second)

	started, err := d.client.StartTask(ctx, taskID, 1, tcprofile.StartOptions{Since: claimedAt})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(started.ProfileDir); err != nil || !info.IsDir() {
		t.Fatalf("profile directory %q: %v", started.ProfileDir, err)
	}
	task, stdin := launchTask(t, started.Env(), "go-client-marker")
	attached, err := d.client.Attach(ctx, taskID, 1, task.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if attached.ProfileDir != started.ProfileDir {
		t.Errorf("attach gave profile directory %q, start %q", attached.ProfileDir, started.ProfileDir)
	}
	status, err := d.client.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Tasks) != 1 || status.Tasks[0].Task != taskID || status.Tasks[0].Run != 1 ||
		!status.Tasks[0].Attached || status.Version == "" {
		t.Errorf("status while the task runs: %+v", status)
	}

	stdin.Close()
	if err := task.Wait(); task.ProcessState.ExitCode() != 3 {
		t.Fatalf("task: %v", err)
	}
	exitStatus := task.ProcessState.ExitCode()
	output := filepath.Join(d.dir, "profile_resource-usage.json")
	written, err := d.client.EndTask(ctx, taskID, 1, tcprofile.EndOptions{Output: output, ExitStatus: &exitStatus})
	if err != nil {
		t.Fatal(err)
	}
	p := readProfile(t, written)
	if !p.hasString("go-client-marker") {
		t.Error("the task's marker is not in its profile")
	}
	if s := p.Meta.TcProfile.ExitStatus; s == nil || *s != 3 {
		t.Errorf("meta.tcProfile.exitStatus: %v, want 3", s)
	}
	// Since: the profile begins at the claim, before the start.
	if claim := float64(claimedAt.UnixNano()) / 1e6; p.Meta.StartTime > claim+1 {
		t.Errorf("the profile begins at %f, after the claim at %f", p.Meta.StartTime, claim)
	}
	// The end read the machine's segment for the task's span, and the ticks read the machine.
	if status, err := d.client.Status(ctx); err != nil || len(status.Tasks) != 0 || status.SegmentBytesRead == 0 || status.MachineReads == 0 {
		t.Errorf("status after the end: %+v, %v", status, err)
	}
}

func TestEachRefusalIsAnErrorOfItsCode(t *testing.T) {
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	task, _ := launchTask(t, []string{"TASKCLUSTER_PROFILE_DIR=" + d.dir}, "unused")
	if _, err := d.client.StartTask(ctx, "twice", 0, tcprofile.StartOptions{Pid: task.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	output := filepath.Join(d.dir, "p.json")
	cases := []struct {
		name string
		call func() error
		want *tcprofile.Error
	}{
		{"a pid no process has", func() error {
			_, err := d.client.StartTask(ctx, "bad-pid", 0, tcprofile.StartOptions{Pid: 999999999})
			return err
		}, tcprofile.ErrNoSuchProcess},
		{"init without AllowHost", func() error {
			_, err := d.client.Attach(ctx, "init", 0, 1)
			return err
		}, tcprofile.ErrRefused},
		{"a missing cgroup", func() error {
			_, err := d.client.AttachCgroup(ctx, "cgroup", 0, "/sys/fs/cgroup/no-such-cgroup-here")
			return err
		}, tcprofile.ErrNoSuchCgroup},
		{"a relative profile directory", func() error {
			_, err := d.client.StartTask(ctx, "relative", 0, tcprofile.StartOptions{ProfileDir: "profile"})
			return err
		}, tcprofile.ErrBadRequest},
		{"a task id with a slash", func() error {
			_, err := d.client.StartTask(ctx, "../escape", 0, tcprofile.StartOptions{})
			return err
		}, tcprofile.ErrBadRequest},
		{"a second attach", func() error {
			_, err := d.client.Attach(ctx, "twice", 0, task.Process.Pid)
			return err
		}, tcprofile.ErrAlreadyOpen},
		{"the end of an unknown task", func() error {
			_, err := d.client.EndTask(ctx, "never-started", 0, tcprofile.EndOptions{Output: output})
			return err
		}, tcprofile.ErrNotOpen},
	}
	for _, c := range cases {
		err := c.call()
		var refusal *tcprofile.Error
		if !errors.Is(err, c.want) || !errors.As(err, &refusal) || refusal.Message == "" {
			t.Errorf("%s: %v (%#v), want code %s with a message", c.name, err, err, c.want.Code)
			continue
		}
		if errors.Is(err, tcprofile.ErrBusy) {
			t.Errorf("%s: %v matches ErrBusy", c.name, err)
		}
	}
	if _, err := os.Stat(output); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused end wrote %s: %v", output, err)
	}
}

func TestTaskStartJSONIsTheClientsTaskStartedAndItsLiveProfileLoads(t *testing.T) {
	d := startDaemon(t, "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	const taskID = "go-client-json"
	cli := exec.CommandContext(ctx, d.bin, "task", "start", taskID, "--json", "--socket", d.client.Socket)
	printed, err := cli.Output()
	if err != nil {
		t.Fatalf("task start --json: %v", err)
	}
	var fromCLI tcprofile.TaskStarted
	if err := json.Unmarshal(printed, &fromCLI); err != nil {
		t.Fatalf("task start --json printed %q: %v", printed, err)
	}
	// Every key it printed is a field of TaskStarted: the struct round-trips it whole.
	var printedKeys, roundTripped map[string]interface{}
	again, _ := json.Marshal(fromCLI)
	_ = json.Unmarshal(printed, &printedKeys)
	_ = json.Unmarshal(again, &roundTripped)
	if fmt.Sprint(printedKeys) != fmt.Sprint(roundTripped) {
		t.Errorf("TaskStarted lacks a key of\n%s\nit keeps %s", printed, again)
	}
	if fromCLI.StatsdSocket == "" || fromCLI.LiveProfileURL == "" || fromCLI.LiveLogURL == "" {
		t.Errorf("task start --json with --http: %s", printed)
	}

	task, _ := launchTask(t, fromCLI.Env(), "unused")
	attached, err := d.client.Attach(ctx, taskID, 0, task.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if *attached != fromCLI {
		t.Errorf("the attach gave %+v, task start --json %+v", *attached, fromCLI)
	}
	request, _ := http.NewRequestWithContext(ctx, http.MethodGet, attached.LiveProfileURL, nil)
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var live map[string]interface{}
	if err := json.NewDecoder(response.Body).Decode(&live); err != nil || response.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s, %v", attached.LiveProfileURL, response.Status, err)
	}
	output := filepath.Join(d.dir, "p.json")
	if _, err := d.client.EndTask(ctx, taskID, 0, tcprofile.EndOptions{Output: output}); err != nil {
		t.Fatal(err)
	}
}

func TestTheEndOfATimedOutTaskIsErrTimedOutNamingItsProfile(t *testing.T) {
	d := startDaemon(t, "--task-timeout", "1")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := d.client.StartTask(ctx, "forgotten", 0, tcprofile.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// Past the timeout, the next start finalizes the forgotten task.
	time.Sleep(1200 * time.Millisecond)
	if _, err := d.client.StartTask(ctx, "next", 0, tcprofile.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	output := filepath.Join(d.dir, "late.json")
	_, err := d.client.EndTask(ctx, "forgotten", 0, tcprofile.EndOptions{Output: output})
	kept := filepath.Join(d.dir, "state", "timed-out", "forgotten-0.json")
	if !errors.Is(err, tcprofile.ErrTimedOut) || !strings.Contains(err.Error(), kept) {
		t.Fatalf("%v, want ErrTimedOut naming %s", err, kept)
	}
	readProfile(t, kept)
}
