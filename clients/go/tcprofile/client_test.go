package tcprofile_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskcluster/tc-profile/clients/go/tcprofile"
)

// fakeDaemon listens on a socket of its own; each connection's request line goes to
// requests, and reply answers it (nil: the request is left unanswered until the test ends).
func fakeDaemon(t *testing.T, reply func(request string) *string) (tcprofile.Client, <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "tc-profile-go")
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("unix", filepath.Join(dir, "fake.sock"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); listener.Close(); os.RemoveAll(dir) })
	requests := make(chan string, 16)
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(conn).ReadString('\n')
			requests <- line
			if answer := reply(line); answer != nil {
				conn.Write([]byte(*answer))
				conn.Close()
				continue
			}
			go func() { <-done; conn.Close() }()
		}
	}()
	return tcprofile.Client{Socket: listener.Addr().String()}, requests
}

func answer(line string) func(string) *string {
	return func(string) *string { return &line }
}

func decoded(t *testing.T, line string) map[string]interface{} {
	t.Helper()
	var value map[string]interface{}
	if !strings.HasSuffix(line, "\n") || json.Unmarshal([]byte(line), &value) != nil {
		t.Fatalf("not one JSON line: %q", line)
	}
	return value
}

func TestRequestsCarryTheProtocolsKeysAndOmitWhatIsNotGiven(t *testing.T) {
	client, requests := fakeDaemon(t, answer("{\"profileDir\":\"/p\"}\n"))
	ctx := context.Background()
	since := time.UnixMilli(1700000000123)
	uid, gid := uint32(1000), uint32(0)
	if _, err := client.StartTask(ctx, "abc", 2, tcprofile.StartOptions{
		ProfileDir: "/builds/profile", Pid: 42, Cgroup: "/sys/fs/cgroup/task", AllowHost: true, Since: since,
		TaskLog: "/builds/live.log", UID: &uid, GID: &gid,
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{"v": 1.0, "op": "task-start", "task": "abc", "run": 2.0,
		"profileDir": "/builds/profile", "pid": 42.0, "cgroup": "/sys/fs/cgroup/task",
		"allowHost": true, "since": 1700000000123.0, "taskLog": "/builds/live.log",
		"uid": 1000.0, "gid": 0.0}
	if got := decoded(t, <-requests); !reflect.DeepEqual(got, want) {
		t.Errorf("task-start with every option: %v, want %v", got, want)
	}
	if _, err := client.Attach(ctx, "abc", 0, 42); err != nil {
		t.Fatal(err)
	}
	want = map[string]interface{}{"v": 1.0, "op": "task-start", "task": "abc", "run": 0.0, "pid": 42.0}
	if got := decoded(t, <-requests); !reflect.DeepEqual(got, want) {
		t.Errorf("attach: %v, want %v", got, want)
	}

	client, requests = fakeDaemon(t, answer("{\"output\":\"/o.json\"}\n"))
	status := 0
	output, err := client.EndTask(ctx, "abc", 0, tcprofile.EndOptions{Output: "/o.json", ExitStatus: &status})
	if err != nil || output != "/o.json" {
		t.Fatalf("task-end: %q, %v", output, err)
	}
	want = map[string]interface{}{"v": 1.0, "op": "task-end", "task": "abc", "run": 0.0,
		"exitStatus": 0.0, "output": "/o.json"}
	if got := decoded(t, <-requests); !reflect.DeepEqual(got, want) {
		t.Errorf("task-end with exit status 0: %v, want %v", got, want)
	}
	if _, err := client.WorkerProfile(ctx, time.Time{}, since, "/w.json"); err != nil {
		t.Fatal(err)
	}
	want = map[string]interface{}{"v": 1.0, "op": "worker-profile", "until": 1700000000123.0,
		"output": "/w.json"}
	if got := decoded(t, <-requests); !reflect.DeepEqual(got, want) {
		t.Errorf("worker-profile: %v, want %v", got, want)
	}
}

func TestKeysANewerDaemonAddsAreIgnored(t *testing.T) {
	client, _ := fakeDaemon(t, answer(
		`{"profileDir":"/p","statsdSocket":"/run/s","liveLogUrl":"http://h/l?token=t","newKey":{"a":1}}`+"\n"))
	started, err := client.StartTask(context.Background(), "abc", 0, tcprofile.StartOptions{})
	want := tcprofile.TaskStarted{ProfileDir: "/p", StatsdSocket: "/run/s", LiveLogURL: "http://h/l?token=t"}
	if err != nil || *started != want {
		t.Errorf("%+v, %v; want %+v", started, err, want)
	}
}

func TestTheEnvironmentSplitsTheStatsdAddress(t *testing.T) {
	started := tcprofile.TaskStarted{ProfileDir: "/p", StatsdAddress: "127.0.0.1:8125", StatsdSocket: "/p/statsd.sock",
		InfluxURL: "http://127.0.0.1:9/abc"}
	want := []string{"TASKCLUSTER_PROFILE_DIR=/p", "STATSD_HOST=127.0.0.1", "STATSD_PORT=8125",
		"DD_AGENT_HOST=127.0.0.1", "DD_DOGSTATSD_PORT=8125",
		"TASKCLUSTER_STATSD_ADDR=127.0.0.1:8125", "STATSD_SOCKET=/p/statsd.sock",
		"DD_DOGSTATSD_URL=unix:///p/statsd.sock", "TASKCLUSTER_INFLUX_URL=http://127.0.0.1:9/abc",
		"INFLUX_HOST=http://127.0.0.1:9", "INFLUX_TOKEN=abc", "INFLUX_ORG=tc-profile",
		"INFLUXDB_V2_URL=http://127.0.0.1:9", "INFLUXDB_V2_TOKEN=abc", "INFLUXDB_V2_ORG=tc-profile"}
	if got := started.Env(); !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestAnErrorReplyIsAnErrorOfItsCodeEvenAnUnknownOne(t *testing.T) {
	client, _ := fakeDaemon(t, answer(`{"error":{"code":"not-open","message":"task abc run 0 is not open; start it first"}}`+"\n"))
	_, err := client.EndTask(context.Background(), "abc", 0, tcprofile.EndOptions{Output: "/o"})
	var refusal *tcprofile.Error
	if !errors.Is(err, tcprofile.ErrNotOpen) || errors.Is(err, tcprofile.ErrBusy) || !errors.As(err, &refusal) ||
		err.Error() != "tc-profile daemon: task abc run 0 is not open; start it first" {
		t.Errorf("%v", err)
	}
	client, _ = fakeDaemon(t, answer(`{"error":{"code":"some-new-code","message":"m"}}`+"\n"))
	_, err = client.Status(context.Background())
	if !errors.As(err, &refusal) || refusal.Code != "some-new-code" {
		t.Errorf("%v", err)
	}
}

func TestAClosedConnectionWithoutAReplyIsAnError(t *testing.T) {
	client, _ := fakeDaemon(t, answer(""))
	if _, err := client.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "no reply") {
		t.Errorf("%v", err)
	}
}

func TestTheContextsDeadlineAndCancellationCutAnUnansweredRequestOff(t *testing.T) {
	client, requests := fakeDaemon(t, func(string) *string { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := client.Status(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the deadline: %v", err)
	}
	<-requests
	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-requests; cancel() }()
	if _, err := client.Status(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestNoDaemonIsErrUnreachableWithItsCause(t *testing.T) {
	client := tcprofile.Client{Socket: filepath.Join(t.TempDir(), "none.sock")}
	_, err := client.Status(context.Background())
	if !errors.Is(err, tcprofile.ErrUnreachable) || !errors.Is(err, syscall.ENOENT) ||
		!strings.Contains(err.Error(), "none.sock") {
		t.Errorf("%v", err)
	}
}
