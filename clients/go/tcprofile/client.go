package tcprofile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// DefaultSocket is where `tc-profile daemon` listens unless told otherwise.
const DefaultSocket = "/run/tc-profile/daemon.sock"

// protocolVersion is the version every request carries.
const protocolVersion = 1

// maxReplyBytes bounds a reply line; the longest, a status, is about 100 bytes a task.
const maxReplyBytes = 1 << 20

// Client speaks to one daemon. Its zero value speaks to DefaultSocket; it is safe for
// concurrent use (each request is a connection of its own).
type Client struct {
	// Socket is the daemon's Unix socket; DefaultSocket when empty.
	Socket string
}

// StartOptions are StartTask's optional values.
type StartOptions struct {
	// ProfileDir is the task's profile directory (absolute); the daemon makes one under
	// its state directory when empty.
	ProfileDir string
	// Pid is the task's process, followed with its descendants; none when 0.
	Pid int
	// Cgroup is the task's cgroup (absolute); none when empty.
	Cgroup string
	// AllowHost lets the task be the whole host (pid 1, a hierarchy's root cgroup).
	AllowHost bool
	// Since begins the profile before the start (at most a day before), so that the
	// worker's own steps for the task (a claim, downloads) are in it; now when zero.
	Since time.Time
	// TaskLog is the worker's live log of the task (absolute), followed as tail -F: a Log
	// marker a line, [taskcluster-task:stat] lines as metric tracks. The first start only.
	TaskLog string
	// UID, when set, is the user the task runs as: a profile directory the daemon creates
	// is theirs alone (mode 0700), with GID as its group when set.
	UID *uint32
	GID *uint32
}

// TaskStarted is everything the worker hands the task, as the daemon replies to a start
// (and `tc-profile task start --json` prints). Empty fields are what the task does not
// have; fields a newer daemon adds are ignored.
type TaskStarted struct {
	// ProfileDir is TASKCLUSTER_PROFILE_DIR, where the task writes marker files.
	ProfileDir string `json:"profileDir"`
	// StatsdAddress is the task's statsd listener, HOST:PORT over UDP.
	StatsdAddress string `json:"statsdAddress,omitempty"`
	// StatsdSocket is the task's statsd Unix datagram socket.
	StatsdSocket string `json:"statsdSocket,omitempty"`
	// InfluxURL is TASKCLUSTER_INFLUX_URL.
	InfluxURL string `json:"influxUrl,omitempty"`
	// LiveProfileURL and LiveLogURL are the task's live profile and log (daemon --http).
	LiveProfileURL string `json:"liveProfileUrl,omitempty"`
	LiveLogURL     string `json:"liveLogUrl,omitempty"`
}

// Env is the task's environment for what it was given, as `tc-profile run` sets it:
// TASKCLUSTER_PROFILE_DIR; STATSD_HOST, STATSD_PORT, DD_AGENT_HOST, DD_DOGSTATSD_PORT,
// TASKCLUSTER_STATSD_ADDR; STATSD_SOCKET, DD_DOGSTATSD_URL; TASKCLUSTER_INFLUX_URL and,
// for InfluxDB 2.x clients, INFLUX_HOST, INFLUX_TOKEN, INFLUX_ORG, INFLUXDB_V2_URL,
// INFLUXDB_V2_TOKEN, INFLUXDB_V2_ORG; each when the task has it.
func (s *TaskStarted) Env() []string {
	env := []string{"TASKCLUSTER_PROFILE_DIR=" + s.ProfileDir}
	if host, port, err := net.SplitHostPort(s.StatsdAddress); err == nil {
		env = append(env, "STATSD_HOST="+host, "STATSD_PORT="+port,
			"DD_AGENT_HOST="+host, "DD_DOGSTATSD_PORT="+port,
			"TASKCLUSTER_STATSD_ADDR="+s.StatsdAddress)
	}
	if s.StatsdSocket != "" {
		env = append(env, "STATSD_SOCKET="+s.StatsdSocket,
			"DD_DOGSTATSD_URL=unix://"+s.StatsdSocket)
	}
	if s.InfluxURL != "" {
		env = append(env, "TASKCLUSTER_INFLUX_URL="+s.InfluxURL)
		// The URL's last segment is the token; 2.x clients take it apart.
		base, token := s.InfluxURL, ""
		if cut := strings.LastIndex(s.InfluxURL, "/"); cut >= 0 {
			base, token = s.InfluxURL[:cut], s.InfluxURL[cut+1:]
		}
		env = append(env, "INFLUX_HOST="+base, "INFLUX_TOKEN="+token, "INFLUX_ORG="+influxOrg,
			"INFLUXDB_V2_URL="+base, "INFLUXDB_V2_TOKEN="+token, "INFLUXDB_V2_ORG="+influxOrg)
	}
	return env
}

// influxOrg is the organisation InfluxDB 2.x clients are given: the endpoint takes any.
const influxOrg = "tc-profile"

// EndOptions are EndTask's values.
type EndOptions struct {
	// Output is where the daemon writes the profile (absolute), atomically.
	Output string
	// ExitStatus is the task's, in the profile's meta.tcProfile.exitStatus; nil when the
	// task has none (it was cancelled, the worker lost it).
	ExitStatus *int
}

// Status is what the daemon is doing.
type Status struct {
	Version string `json:"version"`
	// Started is when the daemon started, in epoch ms.
	Started  float64 `json:"started"`
	UptimeMs float64 `json:"uptimeMs"`
	// Tasks are the open tasks, oldest first.
	Tasks []TaskStatus `json:"tasks"`
	// Segments are the machine's logs, the one being written included.
	Segments     int    `json:"segments"`
	SegmentBytes uint64 `json:"segmentBytes"`
	// SegmentBytesRead are the bytes of the segments read for profiles since the daemon
	// started: each read for its profile's span only.
	SegmentBytesRead uint64 `json:"segmentBytesRead"`
	// MachineReads count the reads of the machine's files (/proc/stat, meminfo) for the
	// segment and every task since the daemon started: one a tick, shared by them all.
	MachineReads uint64 `json:"machineReads"`
	// Housekeeping is the last rotation and retention run; nil before the first.
	Housekeeping *Housekeeping `json:"housekeeping,omitempty"`
}

// TaskStatus is an open task.
type TaskStatus struct {
	Task  string  `json:"task"`
	Run   uint32  `json:"run"`
	AgeMs float64 `json:"ageMs"`
	// Attached says whether its processes are followed.
	Attached bool `json:"attached"`
	// Ending says whether its profile is being written.
	Ending bool `json:"ending"`
}

// Housekeeping is a rotation and retention run.
type Housekeeping struct {
	// At is when it ran, in epoch ms.
	At float64 `json:"at"`
	// Deleted is how many segments the retention deleted.
	Deleted int `json:"deleted"`
	// Error is why the rotation failed, if it did.
	Error string `json:"error,omitempty"`
}

// StartTask opens run runID of task taskID, before the task is launched; the reply is
// what to hand the task. A task already open without processes is attached to
// opts.Pid or opts.Cgroup instead (see Attach).
func (c *Client) StartTask(ctx context.Context, taskID string, runID uint32, opts StartOptions) (*TaskStarted, error) {
	request := struct {
		V          int      `json:"v"`
		Op         string   `json:"op"`
		Task       string   `json:"task"`
		Run        uint32   `json:"run"`
		ProfileDir string   `json:"profileDir,omitempty"`
		Pid        int      `json:"pid,omitempty"`
		Cgroup     string   `json:"cgroup,omitempty"`
		AllowHost  bool     `json:"allowHost,omitempty"`
		Since      *float64 `json:"since,omitempty"`
		TaskLog    string   `json:"taskLog,omitempty"`
		UID        *uint32  `json:"uid,omitempty"`
		GID        *uint32  `json:"gid,omitempty"`
	}{protocolVersion, "task-start", taskID, runID, opts.ProfileDir, opts.Pid, opts.Cgroup,
		opts.AllowHost, epochMs(opts.Since), opts.TaskLog, opts.UID, opts.GID}
	var started TaskStarted
	if err := c.ask(ctx, request, &started); err != nil {
		return nil, err
	}
	return &started, nil
}

// Attach gives an open task its process, once the task runs: the daemon follows pid and
// its descendants from then on, each with its real start time. What the task wrote to
// its profile directory before is kept whole. (A task not open is started with it.)
func (c *Client) Attach(ctx context.Context, taskID string, runID uint32, pid int) (*TaskStarted, error) {
	return c.StartTask(ctx, taskID, runID, StartOptions{Pid: pid})
}

// AttachCgroup is Attach with the task's cgroup (an absolute path) instead of a pid.
func (c *Client) AttachCgroup(ctx context.Context, taskID string, runID uint32, cgroup string) (*TaskStarted, error) {
	return c.StartTask(ctx, taskID, runID, StartOptions{Cgroup: cgroup})
}

// EndTask ends the task and writes its profile to opts.Output, about a second after the
// request; it returns the profile's path. A request that ctx cut off may still be done:
// an EndTask retried after it is then ErrNotOpen, its profile at opts.Output.
func (c *Client) EndTask(ctx context.Context, taskID string, runID uint32, opts EndOptions) (string, error) {
	request := struct {
		V          int    `json:"v"`
		Op         string `json:"op"`
		Task       string `json:"task"`
		Run        uint32 `json:"run"`
		ExitStatus *int   `json:"exitStatus,omitempty"`
		Output     string `json:"output"`
	}{protocolVersion, "task-end", taskID, runID, opts.ExitStatus, opts.Output}
	return c.askOutput(ctx, request)
}

// WorkerProfile writes the worker's own profile over [since, until] to output (absolute):
// its tasks, the idle time between them. Zero times are the oldest segment kept and now.
func (c *Client) WorkerProfile(ctx context.Context, since, until time.Time, output string) (string, error) {
	request := struct {
		V      int      `json:"v"`
		Op     string   `json:"op"`
		Since  *float64 `json:"since,omitempty"`
		Until  *float64 `json:"until,omitempty"`
		Output string   `json:"output"`
	}{protocolVersion, "worker-profile", epochMs(since), epochMs(until), output}
	return c.askOutput(ctx, request)
}

// Status asks what the daemon is doing.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	request := struct {
		V  int    `json:"v"`
		Op string `json:"op"`
	}{protocolVersion, "status"}
	var status Status
	if err := c.ask(ctx, request, &status); err != nil {
		return nil, err
	}
	return &status, nil
}

func (c *Client) askOutput(ctx context.Context, request interface{}) (string, error) {
	var written struct {
		Output string `json:"output"`
	}
	if err := c.ask(ctx, request, &written); err != nil {
		return "", err
	}
	return written.Output, nil
}

// ask sends request as one line and decodes the one reply line into reply, or returns
// the daemon's *Error. ctx's deadline and cancellation cut the exchange off.
func (c *Client) ask(ctx context.Context, request interface{}, reply interface{}) error {
	socket := c.Socket
	if socket == "" {
		socket = DefaultSocket
	}
	line, err := json.Marshal(request)
	if err != nil {
		return err
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", socket)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("tc-profile daemon at %s: %w", socket, ctx.Err())
		}
		return &unreachableError{socket: socket, cause: err}
	}
	defer conn.Close()
	answered := make(chan struct{})
	defer close(answered)
	go func() {
		select {
		case <-ctx.Done():
			// Wakes the blocked write or read at once.
			_ = conn.SetDeadline(time.Unix(1, 0))
		case <-answered:
		}
	}()
	answer, err := exchange(conn, append(line, '\n'))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("tc-profile daemon at %s: %w", socket, err)
	}
	return decode(answer, reply)
}

func exchange(conn net.Conn, line []byte) ([]byte, error) {
	if _, err := conn.Write(line); err != nil {
		return nil, fmt.Errorf("cannot send the request: %w", err)
	}
	answer, err := bufio.NewReader(io.LimitReader(conn, maxReplyBytes)).ReadBytes('\n')
	if err == io.EOF && len(answer) == 0 {
		return nil, errors.New("no reply: the daemon closed the connection")
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("cannot read the reply: %w", err)
	}
	return answer, nil
}

// decode reads a reply line: {"error": {...}} or the request's result.
func decode(answer []byte, reply interface{}) error {
	var failure struct {
		Error *Error `json:"error"`
	}
	if err := json.Unmarshal(answer, &failure); err != nil {
		return fmt.Errorf("not a tc-profile daemon's reply: %w: %q", err, bytes.TrimSpace(answer))
	}
	if failure.Error != nil {
		return failure.Error
	}
	if err := json.Unmarshal(answer, reply); err != nil {
		return fmt.Errorf("not a tc-profile daemon's reply: %w: %q", err, bytes.TrimSpace(answer))
	}
	return nil
}

// epochMs is t in epoch ms, nil for the zero time.
func epochMs(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	ms := float64(t.UnixNano()) / 1e6
	return &ms
}
