package tcprofile

import (
	"errors"
	"fmt"
)

// Code says why the daemon did not do a request (SPEC.md, "Daemon protocol"). A newer
// daemon may send a code not listed here; it is kept as sent.
type Code string

// The daemon's error codes.
const (
	// CodeBadRequest: not a request of this protocol, or a value it does not take (a task
	// id, a relative path).
	CodeBadRequest Code = "bad-request"
	// CodeNoSuchProcess: no process has that pid.
	CodeNoSuchProcess Code = "no-such-process"
	// CodeNoSuchCgroup: the cgroup has no cgroup.procs.
	CodeNoSuchCgroup Code = "no-such-cgroup"
	// CodeRefused: pid 0, the daemon's own process, or the whole host without AllowHost.
	CodeRefused Code = "refused"
	// CodeNotOpen: the task is not open.
	CodeNotOpen Code = "not-open"
	// CodeAlreadyOpen: the task is open, with its processes already.
	CodeAlreadyOpen Code = "already-open"
	// CodeTimedOut: the daemon's --task-timeout ended the task; the message names its
	// profile.
	CodeTimedOut Code = "timed-out"
	// CodeBusy: the daemon serves as many requests as it takes, or the task's end is
	// under way: try again.
	CodeBusy Code = "busy"
	// CodeIO: a file could not be read or written (the state directory, a log, the output).
	CodeIO Code = "io"
	// CodeInternal: a thread or a recorder of the daemon's could not start.
	CodeInternal Code = "internal"
)

// Error is the daemon's refusal of a request: its code, and one line for a person.
// errors.Is(err, ErrNotOpen) and the like match on the code alone.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "tc-profile daemon: " + string(e.Code)
	}
	return "tc-profile daemon: " + e.Message
}

// Is matches an *Error of the same code, whatever its message.
func (e *Error) Is(target error) bool {
	other, ok := target.(*Error)
	return ok && other.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrBadRequest    = &Error{Code: CodeBadRequest}
	ErrNoSuchProcess = &Error{Code: CodeNoSuchProcess}
	ErrNoSuchCgroup  = &Error{Code: CodeNoSuchCgroup}
	ErrRefused       = &Error{Code: CodeRefused}
	ErrNotOpen       = &Error{Code: CodeNotOpen}
	ErrAlreadyOpen   = &Error{Code: CodeAlreadyOpen}
	ErrTimedOut      = &Error{Code: CodeTimedOut}
	ErrBusy          = &Error{Code: CodeBusy}
	ErrIO            = &Error{Code: CodeIO}
	ErrInternal      = &Error{Code: CodeInternal}
)

// ErrUnreachable matches a failure to connect to the daemon's socket (no daemon, or no
// permission); errors.Is also finds the cause (syscall.ENOENT, syscall.ECONNREFUSED ...).
var ErrUnreachable = errors.New("the tc-profile daemon cannot be reached")

type unreachableError struct {
	socket string
	cause  error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the tc-profile daemon at %s (is it running?): %v", e.socket, e.cause)
}

func (e *unreachableError) Unwrap() error { return e.cause }

func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }
