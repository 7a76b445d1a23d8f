package author

import (
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

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env, setup)) }

func setup(c *cluster.Cluster) (func(), error) {
	cs = kubernetes.NewForConfigOrDie(c.Config)
	var err error
	bin, err = harness.BuildOperator(c.RepoRoot())
	if err != nil {
		return nil, err
	}
	return func() {}, nil
}
