// Command kubectl is kubectl v1.36's command tree (k8s.io/kubectl's), built for the tests that
// follow the README as a new user would (tests/helm/build-kubectl.sh). Nothing of its own.
package main

import (
	"os"

	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	if err := cmd.NewDefaultKubectlCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
