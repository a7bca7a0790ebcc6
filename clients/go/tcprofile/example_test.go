package tcprofile_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/taskcluster/tc-profile/clients/go/tcprofile"
)

// The worker's flow for one task: start, launch, attach, end, upload.
func Example() {
	taskID, runID := "fN1SbArXTPSVFNUvaOlinQ", uint32(0)
	claimedAt := time.Now()
	daemon := tcprofile.Client{} // tcprofile.DefaultSocket
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	started, err := daemon.StartTask(ctx, taskID, runID, tcprofile.StartOptions{Since: claimedAt})
	if errors.Is(err, tcprofile.ErrUnreachable) {
		log.Printf("no profile for this task: %v", err)
	} else if err != nil {
		log.Fatal(err)
	}

	task := exec.Command("/bin/sh", "-c", "make test")
	task.Env = os.Environ()
	if started != nil {
		task.Env = append(task.Env, started.Env()...)
	}
	if err := task.Start(); err != nil {
		log.Fatal(err)
	}
	if started != nil {
		if _, err := daemon.Attach(ctx, taskID, runID, task.Process.Pid); err != nil {
			log.Print(err) // the profile lacks the task's processes, not its markers
		}
	}
	_ = task.Wait()

	if started != nil {
		status := task.ProcessState.ExitCode()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		profile, err := daemon.EndTask(ctx, taskID, runID, tcprofile.EndOptions{
			Output:     filepath.Join("/builds/artifacts", "profile_resource-usage.json"),
			ExitStatus: &status,
		})
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("upload %s as public/profile_resource-usage.json", profile)
	}
}
