package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Settings from the environment (run.sh sets them):
//
//	NODERECOVER_BIN          the binary under test (default ../../build/noderecover)
//	NODERECOVER_E2E_BINDIR   directory holding etcd, kube-apiserver, kube-controller-manager;
//	                         unset: ./build-tools.sh control-plane builds or finds them in the cache
//	NODERECOVER_E2E_KEEP=1   keep the throwaway directory (logs, audit log) after a pass
//	NODERECOVER_E2E_DATASTORE  etcd (default) or kine: kine over SQLite in etcd's place
//	NODERECOVER_E2E_KINEDIR  directory holding kine; unset: ./build-tools.sh kine

var (
	clusterOnce sync.Once
	theCluster  *cluster
	clusterErr  error
	anyFailed   bool
	failMu      sync.Mutex
)

func noteFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			failMu.Lock()
			anyFailed = true
			failMu.Unlock()
		}
	})
}

func controlPlaneBinDir() (string, error) {
	if d := os.Getenv("NODERECOVER_E2E_BINDIR"); d != "" {
		return d, nil
	}
	cmd := exec.Command("./build-tools.sh", "control-plane")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build-tools.sh control-plane: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

func kineBinDir() (string, error) {
	if d := os.Getenv("NODERECOVER_E2E_KINEDIR"); d != "" {
		return d, nil
	}
	cmd := exec.Command("./build-tools.sh", "kine")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build-tools.sh kine: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// getCluster starts the shared control plane on first use.
func getCluster(t *testing.T) *cluster {
	t.Helper()
	noteFailure(t)
	clusterOnce.Do(func() {
		dir, err := controlPlaneBinDir()
		if err != nil {
			clusterErr = err
			return
		}
		store, err := datastore()
		if err != nil {
			clusterErr = err
			return
		}
		var kineDir string
		if store == "kine" {
			if kineDir, err = kineBinDir(); err != nil {
				clusterErr = err
				return
			}
		}
		theCluster, clusterErr = startCluster(context.Background(), dir, store, kineDir)
		if clusterErr == nil {
			fmt.Printf("e2e: control plane up in %.1fs: kube-apiserver %s, %s, dir %s\n",
				theCluster.startSeconds, theCluster.serverVersion, theCluster.store(), theCluster.dir)
		}
	})
	if clusterErr != nil {
		t.Fatalf("control plane: %v", clusterErr)
	}
	if err := theCluster.alive(); err != nil {
		t.Fatalf("control plane: %v", err)
	}
	return theCluster
}

func noderecoverBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("NODERECOVER_BIN")
	if p == "" {
		p = "../../build/noderecover"
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		t.Fatalf("noderecover binary %s not found (set NODERECOVER_BIN or run ./build.sh first)", abs)
	}
	return abs
}

func shutdown() {
	stopAllWatchers()
	printResults()
	if theCluster == nil {
		return
	}
	theCluster.stop()
	failMu.Lock()
	failed := anyFailed
	failMu.Unlock()
	if failed {
		theCluster.dumpLogs(os.Stdout)
	}
	if failed || os.Getenv("NODERECOVER_E2E_KEEP") == "1" {
		fmt.Printf("e2e: kept %s (component logs, audit.log, watcher logs)\n", theCluster.dir)
	} else {
		os.RemoveAll(theCluster.dir)
	}
}

func TestMain(m *testing.M) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping the control plane\n", s)
		failMu.Lock()
		anyFailed = true
		failMu.Unlock()
		shutdown()
		os.Exit(1)
	}()
	// The fence's cases (fence_test.go) run in parallel and wait on timers, not on the CPU:
	// -test.parallel's default (GOMAXPROCS, 2 here) would run them two at a time. No other
	// test calls t.Parallel. An explicit -test.parallel is kept.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", "8")
	}
	code := m.Run()
	if code != 0 {
		failMu.Lock()
		anyFailed = true
		failMu.Unlock()
	}
	shutdown()
	os.Exit(code)
}
