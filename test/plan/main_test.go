package plan

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

var (
	env *cluster.Cluster
	cs  kubernetes.Interface
	// bin is the operator binary, built once for the package.
	bin string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts a minimal control plane of the package's own: no controller
// writes anything, so the API server's request counters are the test's.
func run(m *testing.M) int {
	c, err := cluster.StartWith(cluster.Options{Minimal: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test cluster:", err)
		return 1
	}
	defer c.Stop()
	env = c
	cs = kubernetes.NewForConfigOrDie(c.Config)
	if bin, err = harness.BuildOperator(c.RepoRoot()); err != nil {
		fmt.Fprintln(os.Stderr, "build the operator:", err)
		return 1
	}
	return m.Run()
}
